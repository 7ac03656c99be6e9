package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
)

var probeT0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// pingCall is one Ping the probe made; the test answers it through reply.
type pingCall struct {
	ctx   context.Context
	at    time.Time // fake clock time when Ping was called
	reply chan error
}

// fakePinger hands every call to the test and counts overlapping calls.
type fakePinger struct {
	clock       clockwork.Clock
	calls       chan *pingCall
	ignoreCtx   bool // model a driver that ignores cancellation
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
}

func newFakePinger(clock clockwork.Clock) *fakePinger {
	return &fakePinger{clock: clock, calls: make(chan *pingCall, 16)}
}

func (f *fakePinger) Ping(ctx context.Context) error {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFlight.Load()
		if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	c := &pingCall{ctx: ctx, at: f.clock.Now(), reply: make(chan error, 1)}
	f.calls <- c
	if f.ignoreCtx {
		return <-c.reply
	}
	select {
	case err := <-c.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// probeRig is a DbProbe on a fake clock with its changes and log messages
// recorded.
type probeRig struct {
	t       *testing.T
	clock   *clockwork.FakeClock
	pinger  *fakePinger
	probe   *DbProbe
	changes chan DbProbeResult
	logs    chan string
}

// chanHandler is a slog.Handler that sends each message to a channel.
type chanHandler struct{ c chan string }

func (h chanHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h chanHandler) Handle(_ context.Context, r slog.Record) error { h.c <- r.Message; return nil }
func (h chanHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h chanHandler) WithGroup(string) slog.Handler                 { return h }

func newProbeRig(t *testing.T, cfg DbProbeConfig, ignoreCtx bool) *probeRig {
	t.Helper()
	r := &probeRig{t: t, clock: clockwork.NewFakeClockAt(probeT0),
		changes: make(chan DbProbeResult, 32), logs: make(chan string, 64)}
	r.pinger = newFakePinger(r.clock)
	r.pinger.ignoreCtx = ignoreCtx
	cfg.Clock = r.clock
	cfg.OnChange = func(res DbProbeResult) { r.changes <- res }
	cfg.Logger = slog.New(chanHandler{r.logs})
	p, err := NewDbProbe(r.pinger, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.probe = p
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return r
}

const wait = 5 * time.Second // real-time bound for anything the test waits on

func (r *probeRig) nextCall() *pingCall {
	r.t.Helper()
	select {
	case c := <-r.pinger.calls:
		return c
	case <-time.After(wait):
		r.t.Fatalf("no Ping within %v (fake time %v)", wait, r.clock.Now().Sub(probeT0))
		return nil
	}
}

// noCall checks that no Ping arrives within a short real-time window.
func (r *probeRig) noCall(why string) {
	r.t.Helper()
	select {
	case c := <-r.pinger.calls:
		r.t.Fatalf("%s: unexpected Ping at fake time +%v", why, c.at.Sub(probeT0))
	case <-time.After(100 * time.Millisecond):
	}
}

func (r *probeRig) nextChange() DbProbeResult {
	r.t.Helper()
	select {
	case c := <-r.changes:
		return c
	case <-time.After(wait):
		r.t.Fatalf("no OnChange within %v", wait)
		return DbProbeResult{}
	}
}

// resultAt waits until Last holds a result stamped at (fake) time at.
func (r *probeRig) resultAt(at time.Time) DbProbeResult {
	r.t.Helper()
	var res DbProbeResult
	poll.CheckFor(r.t, wait, time.Millisecond, func() error {
		var ok bool
		if res, ok = r.probe.Last(); ok && res.AsOf.Equal(at) {
			return nil
		}
		return fmt.Errorf("no result at +%v; Last() = %+v, %v", at.Sub(probeT0), res, ok)
	})
	return res
}

// waiters waits until the fake clock has n timers/tickers: the probe
// goroutine is parked on them.
func (r *probeRig) waiters(n int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.clock.BlockUntilContext(ctx, n); err != nil {
		r.t.Fatalf("the probe never waited on %d clock timers: %v", n, err)
	}
}

func TestDbProbeFirstResultThenEveryInterval(t *testing.T) {
	r := newProbeRig(t, DbProbeConfig{Interval: 5 * time.Second, Timeout: 2 * time.Second}, false)
	if _, ok := r.probe.Last(); ok {
		t.Fatal("Last() reports a result before any probe ended")
	}
	c := r.nextCall()
	if !c.at.Equal(probeT0) {
		t.Fatalf("first probe at +%v, want at Start", c.at.Sub(probeT0))
	}
	c.reply <- nil
	if got := r.nextChange(); got != (DbProbeResult{Reachable: true, AsOf: probeT0}) {
		t.Fatalf("first change = %+v", got)
	}
	if got, ok := r.probe.Last(); !ok || !got.Reachable || !got.AsOf.Equal(probeT0) || got.Err != "" {
		t.Fatalf("Last() = %+v, %v", got, ok)
	}

	for i := 1; i <= 3; i++ {
		r.clock.Advance(5*time.Second - time.Millisecond)
		r.noCall("before the interval")
		r.clock.Advance(time.Millisecond)
		c := r.nextCall()
		want := probeT0.Add(time.Duration(i) * 5 * time.Second)
		if !c.at.Equal(want) {
			t.Fatalf("probe %d at +%v, want +%v", i, c.at.Sub(probeT0), want.Sub(probeT0))
		}
		c.reply <- nil
		r.resultAt(want)
	}
	select {
	case ch := <-r.changes:
		t.Fatalf("OnChange(%+v) while Reachable stayed true", ch)
	default:
	}
}

func TestDbProbeNotifiesEveryChangeOnly(t *testing.T) {
	r := newProbeRig(t, DbProbeConfig{Interval: 5 * time.Second, Timeout: 2 * time.Second}, false)
	refused := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	answers := []error{nil, refused, refused, nil, nil, refused}
	for i, a := range answers {
		if i > 0 {
			r.clock.Advance(5 * time.Second)
		}
		c := r.nextCall()
		c.reply <- a
		res := r.resultAt(c.at)
		if res.Reachable != (a == nil) || (a != nil && res.Err != a.Error()) || (a == nil && res.Err != "") {
			t.Fatalf("probe %d answered %v: Last() = %+v", i, a, res)
		}
	}
	// One more probe: once it is called, the previous OnChange has returned.
	r.clock.Advance(5 * time.Second)
	r.nextCall().reply <- nil

	var got []bool
	for len(got) < 4 {
		got = append(got, r.nextChange().Reachable)
	}
	want := []bool{true, false, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("changes = %v, want %v", got, want)
		}
	}
	ch := r.nextChange() // the extra probe flipped back to reachable
	if !ch.Reachable || !ch.AsOf.Equal(probeT0.Add(30*time.Second)) {
		t.Fatalf("last change = %+v", ch)
	}
	select {
	case extra := <-r.changes:
		t.Fatalf("extra OnChange(%+v): repeats must not notify", extra)
	default:
	}
}

func TestDbProbeTimeoutCountsAsUnreachableAtOnce(t *testing.T) {
	r := newProbeRig(t, DbProbeConfig{Interval: 5 * time.Second, Timeout: 2 * time.Second}, false)
	c := r.nextCall() // hangs until its context is cancelled
	r.waiters(2)      // ticker + timeout timer
	r.clock.Advance(2*time.Second - time.Millisecond)
	select {
	case ch := <-r.changes:
		t.Fatalf("OnChange(%+v) before the timeout", ch)
	case <-time.After(100 * time.Millisecond):
	}
	r.clock.Advance(time.Millisecond)
	ch := r.nextChange()
	if ch.Reachable || !ch.AsOf.Equal(probeT0.Add(2*time.Second)) || !strings.Contains(ch.Err, "no answer within 2s") {
		t.Fatalf("change after the timeout = %+v", ch)
	}
	select {
	case <-c.ctx.Done():
	case <-time.After(wait):
		t.Fatal("the timed-out Ping's context was not cancelled")
	}
	r.logged("answer discarded") // the cancelled call has returned

	r.clock.Advance(3 * time.Second)
	c = r.nextCall()
	if !c.at.Equal(probeT0.Add(5 * time.Second)) {
		t.Fatalf("next probe at +%v, want +5s (the interval does not drift)", c.at.Sub(probeT0))
	}
	c.reply <- nil
	if ch := r.nextChange(); !ch.Reachable || !ch.AsOf.Equal(probeT0.Add(5*time.Second)) {
		t.Fatalf("change after recovery = %+v", ch)
	}
}

// TestDbProbeNeverOverlaps models a driver that ignores cancellation and
// hangs for 12 s: the probe must not start a second call meanwhile, must keep
// reporting unreachable on every tick, and must drop the late answer.
func TestDbProbeNeverOverlaps(t *testing.T) {
	r := newProbeRig(t, DbProbeConfig{Interval: 5 * time.Second, Timeout: 2 * time.Second}, true)
	hung := r.nextCall()
	r.waiters(2)
	r.clock.Advance(2 * time.Second)
	if ch := r.nextChange(); ch.Reachable {
		t.Fatalf("change = %+v, want unreachable", ch)
	}

	r.clock.Advance(3 * time.Second) // tick at +5s, the call still hangs
	res := r.resultAt(probeT0.Add(5 * time.Second))
	if res.Reachable || !strings.Contains(res.Err, "previous probe still running") {
		t.Fatalf("result at +5s = %+v", res)
	}
	r.noCall("while the previous call hangs")

	r.clock.Advance(5 * time.Second) // tick at +10s, still hanging
	r.resultAt(probeT0.Add(10 * time.Second))
	r.noCall("while the previous call hangs")

	r.clock.Advance(2 * time.Second) // +12s: the call finally answers "fine"
	hung.reply <- nil
	r.logged("answer discarded")
	r.clock.Advance(3 * time.Second) // tick at +15s
	c := r.nextCall()
	if !c.at.Equal(probeT0.Add(15 * time.Second)) {
		t.Fatalf("new call at +%v, want +15s", c.at.Sub(probeT0))
	}
	if res, _ := r.probe.Last(); res.Reachable {
		t.Fatalf("the late answer of the hung call counted: %+v", res)
	}
	c.reply <- nil
	if ch := r.nextChange(); !ch.Reachable || !ch.AsOf.Equal(probeT0.Add(15*time.Second)) {
		t.Fatalf("change = %+v, want reachable at +15s", ch)
	}
	if m := r.pinger.maxInFlight.Load(); m != 1 {
		t.Fatalf("%d Ping calls overlapped", m)
	}
}

func TestDbProbeStop(t *testing.T) {
	r := newProbeRig(t, DbProbeConfig{}, false)
	c := r.nextCall() // in flight when Stop comes
	stopped := make(chan struct{})
	go func() { r.probe.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(wait):
		t.Fatal("Stop did not return while a Ping was in flight")
	}
	select {
	case <-c.ctx.Done():
	default:
		t.Fatal("Stop left the in-flight Ping's context alive")
	}
	r.clock.Advance(time.Minute)
	r.noCall("after Stop")
	r.probe.Stop() // again: no-op
	if err := r.probe.Start(context.Background()); !errors.Is(err, ErrDbProbeStarted) {
		t.Fatalf("Start after Stop = %v, want ErrDbProbeStarted", err)
	}

	// Stop before Start returns at once; the parent context ends the loop.
	p, err := NewDbProbe(newFakePinger(clockwork.NewFakeClock()), DbProbeConfig{Clock: clockwork.NewFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	fp := newFakePinger(clockwork.NewFakeClock())
	p, _ = NewDbProbe(fp, DbProbeConfig{Clock: clockwork.NewFakeClock()})
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); !errors.Is(err, ErrDbProbeStarted) {
		t.Fatalf("second Start = %v, want ErrDbProbeStarted", err)
	}
	first := <-fp.calls
	cancel()
	select {
	case <-first.ctx.Done():
	case <-time.After(wait):
		t.Fatal("cancelling Start's context did not cancel the Ping")
	}
	p.Stop() // returns because the loop has ended
}

func TestDbProbeDefaultsAndValidation(t *testing.T) {
	r := newProbeRig(t, DbProbeConfig{}, false)
	if cfg := r.probe.Config(); cfg.Interval != 5*time.Second || cfg.Timeout != 2*time.Second {
		t.Fatalf("defaults: interval %v, timeout %v; want 5s, 2s", cfg.Interval, cfg.Timeout)
	}
	// The defaults drive the probe: a hung call times out at +2s, the next
	// probe starts at +5s.
	r.nextCall()
	r.waiters(2)
	r.clock.Advance(2*time.Second - time.Millisecond)
	select {
	case ch := <-r.changes:
		t.Fatalf("OnChange(%+v) before the default 2 s timeout", ch)
	case <-time.After(100 * time.Millisecond):
	}
	r.clock.Advance(time.Millisecond)
	if ch := r.nextChange(); ch.Reachable || !ch.AsOf.Equal(probeT0.Add(2*time.Second)) {
		t.Fatalf("change = %+v, want unreachable at +2s", ch)
	}
	r.logged("answer discarded") // the cancelled call has returned
	r.clock.Advance(3*time.Second - time.Millisecond)
	r.noCall("before the default 5 s interval")
	r.clock.Advance(time.Millisecond)
	if c := r.nextCall(); !c.at.Equal(probeT0.Add(5 * time.Second)) {
		t.Fatalf("second probe at +%v, want +5s", c.at.Sub(probeT0))
	}

	for _, tc := range []struct {
		cfg  DbProbeConfig
		want string
	}{
		{DbProbeConfig{Interval: -time.Second}, "Interval -1s"},
		{DbProbeConfig{Timeout: -time.Second}, "Timeout -1s"},
		{DbProbeConfig{Interval: time.Second, Timeout: 2 * time.Second}, "Timeout 2s: accepted values are positive durations up to Interval 1s"},
	} {
		_, err := NewDbProbe(newFakePinger(clockwork.NewFakeClock()), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewDbProbe(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := NewDbProbe(nil, DbProbeConfig{}); err == nil {
		t.Error("NewDbProbe(nil) succeeded")
	}
}

// logged waits for a log message containing sub.
func (r *probeRig) logged(sub string) {
	r.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-r.logs:
			if strings.Contains(m, sub) {
				return
			}
		case <-deadline:
			r.t.Fatalf("no log message containing %q within %v", sub, wait)
		}
	}
}

func TestDbProbeSoonProbesOutOfRhythmAtMostOncePerGap(t *testing.T) {
	r := newProbeRig(t, DbProbeConfig{Interval: 5 * time.Second, Timeout: 2 * time.Second}, false)
	first := r.nextCall()
	r.probe.ProbeSoon() // a probe is running: ignored
	r.noCall("ProbeSoon while a probe runs")
	first.reply <- nil
	r.resultAt(probeT0)

	r.clock.Advance(SoonGap - time.Millisecond)
	r.probe.ProbeSoon() // within SoonGap of the last start: ignored
	r.noCall("ProbeSoon within SoonGap of the last probe")

	r.clock.Advance(time.Millisecond)
	r.probe.ProbeSoon()
	c := r.nextCall()
	if want := probeT0.Add(SoonGap); !c.at.Equal(want) {
		t.Fatalf("ProbeSoon's probe at +%v, want +%v", c.at.Sub(probeT0), want.Sub(probeT0))
	}
	refused := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	c.reply <- refused
	if got := r.nextChange(); !got.Reachable {
		// the first change is the first probe's "reachable"
		t.Fatalf("first change %+v, want reachable", got)
	}
	if got := r.nextChange(); got.Reachable || !got.AsOf.Equal(probeT0.Add(SoonGap)) || got.Err != refused.Error() {
		t.Fatalf("ProbeSoon's verdict %+v, want unreachable at +%v", got, SoonGap)
	}

	// The Interval's ticks keep their rhythm: the next at +5 s.
	r.clock.Advance(5*time.Second - SoonGap - time.Millisecond)
	r.noCall("before the interval")
	r.clock.Advance(time.Millisecond)
	if c := r.nextCall(); !c.at.Equal(probeT0.Add(5 * time.Second)) {
		t.Fatalf("tick probe at +%v, want +5s", c.at.Sub(probeT0))
	}
}
