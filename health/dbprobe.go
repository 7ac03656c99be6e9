package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Default DbProbe timings.
const (
	DefaultDbProbeInterval = 5 * time.Second
	DefaultDbProbeTimeout  = 2 * time.Second
)

// ErrDbProbeStarted is returned by a second Start (a DbProbe runs once).
var ErrDbProbeStarted = errors.New("health: DB probe already started")

// Pinger is what DbProbe probes; *configdb.DB implements it. Ping must
// return nil only when the database answered, and should return soon after
// ctx is cancelled (DbProbe copes when it does not, see above).
type Pinger interface {
	Ping(ctx context.Context) error
}

// DbProbeResult is the outcome of one probe.
type DbProbeResult struct {
	// Reachable is true when the database answered within the timeout.
	Reachable bool
	// AsOf is when the result became known: the answer, or the timeout.
	AsOf time.Time
	// Err says why the database is unreachable; empty when Reachable.
	Err string
}

// DbProbeConfig configures a DbProbe. Zero values take the defaults.
type DbProbeConfig struct {
	// Interval between the starts of two probes. Default 5 s
	// (DefaultDbProbeInterval). Must be positive.
	Interval time.Duration

	// Timeout bounds one probe; a call still running after it counts as
	// unreachable. Default 2 s (DefaultDbProbeTimeout). Must be positive
	// and at most Interval.
	Timeout time.Duration

	// Clock drives the interval and the timeout and stamps AsOf. Default:
	// the real clock.
	Clock clockwork.Clock

	// OnChange is called with the first result and with every result whose
	// Reachable differs from the previous one. It is called from the
	// probe's goroutine, one call at a time, in result order, never
	// concurrently; it must not block (the next probe waits for it). Nil:
	// no notification.
	OnChange func(DbProbeResult)

	// Logger gets one line per change (Warn when the database becomes
	// unreachable, Info when it answers). Default: discard.
	Logger *slog.Logger
}

// DbProbe is the DbHealthProbeActor of the design: it probes the Config DB
// on a timer, keeps the last result and answers "is the Config DB reachable
// from this node?" for the ServiceLevel (DbReachable) and the health
// endpoint. Its methods are safe for concurrent use.
//
// How it runs:
//
//   - A probe is one Pinger.Ping (configdb.DB.Ping: SELECT 1). The first
//     runs at Start, then one every Interval (default 5 s) on a ticker of the
//     injected clock.
//   - A probe that has not answered after Timeout (default 2 s) counts as
//     unreachable at that moment: its context is cancelled and the result
//     recorded without waiting for the call to return.
//   - Probes never overlap. When a tick comes while a timed-out call is
//     still running (a driver that ignores its context), no new call starts:
//     the tick records "unreachable, previous probe still running" and the
//     late call's eventual answer is discarded (and logged as a warning). So at most one call is in
//     flight, and the result is refreshed on every tick whatever the driver
//     does.
//   - Every result replaces the last one (Last). OnChange is called with
//     the first result and whenever Reachable flips, right when the probe
//     completes or times out — a consumer reacts at once, not at its next
//     tick.
//
// An outage that starts just after a successful probe is seen at the next
// tick, when the call fails (a refused connection: milliseconds) or times
// out: within Interval + Timeout (7 s with the defaults). A recovery is seen
// at the first tick after the database answers again: within Interval plus
// the connection set-up (one Interval more when a timed-out call was still
// running at that tick).
type DbProbe struct {
	pinger Pinger
	cfg    DbProbeConfig

	mu      sync.Mutex // guards the fields below
	last    DbProbeResult
	have    bool // last holds a result
	started bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when the probe goroutine has returned
}

// NewDbProbe validates cfg, fills its defaults and returns a probe that
// does nothing until Start.
func NewDbProbe(p Pinger, cfg DbProbeConfig) (*DbProbe, error) {
	if p == nil {
		return nil, errors.New("health: DB probe: nil Pinger")
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultDbProbeInterval
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultDbProbeTimeout
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("health: DB probe Interval %v: accepted values are positive durations (default %v)", cfg.Interval, DefaultDbProbeInterval)
	}
	if cfg.Timeout < 0 || cfg.Timeout > cfg.Interval {
		return nil, fmt.Errorf("health: DB probe Timeout %v: accepted values are positive durations up to Interval %v (default %v)", cfg.Timeout, cfg.Interval, DefaultDbProbeTimeout)
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &DbProbe{pinger: p, cfg: cfg}, nil
}

// Config returns the effective configuration (defaults filled in).
func (p *DbProbe) Config() DbProbeConfig { return p.cfg }

// Start runs the first probe now and then one every Interval, until Stop or
// until ctx ends. It returns at once; ErrDbProbeStarted on a second call.
func (p *DbProbe) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return ErrDbProbeStarted
	}
	p.started = true
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	ticker := p.cfg.Clock.NewTicker(p.cfg.Interval) // first tick one Interval from now
	go p.run(ctx, ticker, p.done)
	return nil
}

// Stop ends the probing and waits for the probe goroutine (not for a Ping
// that ignores its cancelled context). It may be called more than once, and
// before Start.
func (p *DbProbe) Stop() {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Last returns the last result; false before the first probe has ended.
func (p *DbProbe) Last() (DbProbeResult, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.have
}

// lateCall is a Ping that outlived its timeout and has not returned yet.
type lateCall struct {
	answer  <-chan error
	started time.Time
	skipped bool // a tick found it still running
}

func (p *DbProbe) run(ctx context.Context, ticker clockwork.Ticker, done chan struct{}) {
	defer close(done)
	defer ticker.Stop()
	var late *lateCall
	for {
		late = p.probe(ctx, late)
		for waiting := true; waiting; {
			var lateAnswer <-chan error // nil (never ready) without a late call
			if late != nil {
				lateAnswer = late.answer
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.Chan():
				waiting = false
			case err := <-lateAnswer:
				p.discardLate(late, err)
				late = nil
			}
		}
	}
}

// probe runs one probe and records its result. late is a call that timed
// out earlier and may still be running; probe returns the call that is
// still running when it returns (nil when none is).
func (p *DbProbe) probe(ctx context.Context, late *lateCall) *lateCall {
	if late != nil {
		select {
		case err := <-late.answer:
			p.discardLate(late, err)
		default:
			late.skipped = true
			p.record(DbProbeResult{AsOf: p.cfg.Clock.Now(),
				Err: fmt.Sprintf("previous probe still running after its %v timeout", p.cfg.Timeout)})
			return late
		}
	}
	callCtx, cancel := context.WithCancel(ctx)
	answer := make(chan error, 1)
	started := p.cfg.Clock.Now()
	go func() { answer <- p.pinger.Ping(callCtx) }()
	timer := p.cfg.Clock.NewTimer(p.cfg.Timeout)
	select {
	case err := <-answer:
		timer.Stop()
		cancel()
		r := DbProbeResult{Reachable: err == nil, AsOf: p.cfg.Clock.Now()}
		if err != nil {
			r.Err = err.Error()
		}
		p.record(r)
		return nil
	case at := <-timer.Chan():
		cancel()
		p.record(DbProbeResult{AsOf: at, Err: fmt.Sprintf("no answer within %v", p.cfg.Timeout)})
		return &lateCall{answer: answer, started: started}
	case <-ctx.Done():
		timer.Stop()
		cancel()
		return nil
	}
}

// discardLate logs the answer of a call that returned after its timeout:
// it is too old to count. A call that overran into the next tick is a
// driver ignoring its deadline, worth a warning; one that returned soon
// after its cancellation is routine (debug).
func (p *DbProbe) discardLate(late *lateCall, err error) {
	level := slog.LevelDebug
	if late.skipped {
		level = slog.LevelWarn
	}
	p.cfg.Logger.Log(context.Background(), level, lateAnswerMsg,
		"after", p.cfg.Clock.Since(late.started), "timeout", p.cfg.Timeout, "err", err)
}

const lateAnswerMsg = "config DB probe returned after its timeout; answer discarded"

// record stores r and notifies a change of Reachable.
func (p *DbProbe) record(r DbProbeResult) {
	p.mu.Lock()
	prev, had := p.last, p.have
	p.last, p.have = r, true
	p.mu.Unlock()
	if had && prev.Reachable == r.Reachable {
		return
	}
	if r.Reachable {
		p.cfg.Logger.Info("config DB reachable", "asOf", r.AsOf)
	} else {
		p.cfg.Logger.Warn("config DB unreachable", "asOf", r.AsOf, "err", r.Err)
	}
	if p.cfg.OnChange != nil {
		p.cfg.OnChange(r)
	}
}
