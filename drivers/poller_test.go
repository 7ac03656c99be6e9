package drivers

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestNextPoll(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, c := range []struct {
		elapsed, interval, want time.Duration // now = t0+elapsed; want = next - t0
	}{
		{0, 100 * ms, 100 * ms},        // a poll that took no time
		{30 * ms, 100 * ms, 100 * ms},  // a normal poll
		{100 * ms, 100 * ms, 100 * ms}, // ended exactly at the next instant
		{101 * ms, 100 * ms, 200 * ms}, // overran: skip to the next instant
		{250 * ms, 100 * ms, 300 * ms}, // overran by more than one interval
		{300 * ms, 100 * ms, 300 * ms}, // on an instant
		{5 * time.Second, time.Second, 5 * time.Second},
		{5*time.Second + 1, time.Second, 6 * time.Second},
	} {
		got := NextPoll(t0, t0.Add(c.elapsed), c.interval).Sub(t0)
		if got != c.want {
			t.Errorf("NextPoll(elapsed %v, interval %v) = +%v, want +%v", c.elapsed, c.interval, got, c.want)
		}
	}
}

// stepDriver is a Driver whose Read takes the time the test gives it on a
// fake clock.
type stepDriver struct {
	clock *clockwork.FakeClock
	mu    sync.Mutex
	took  []time.Duration // Read k advances the clock by took[k]
	reads int
	close bool
}

func (d *stepDriver) Connect(context.Context) error { return nil }
func (d *stepDriver) Read(ctx context.Context) ([]Reading, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.close {
		return nil, ErrClosed
	}
	if d.reads < len(d.took) {
		d.clock.Advance(d.took[d.reads])
	}
	d.reads++
	return []Reading{{Value: int16(d.reads)}}, nil
}
func (d *stepDriver) Write(context.Context, string, any) error { return nil }
func (d *stepDriver) Health() Health                           { return Health{} }
func (d *stepDriver) Stats() Stats                             { return Stats{} }
func (d *stepDriver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.close = true
	return nil
}

var _ Driver = (*stepDriver)(nil)

// TestPollerSchedule runs a Poller on a fake clock: polls start on the
// interval's grid, an overrun skips the missed instants, Seq counts, and
// Close of the driver ends Run with ErrClosed.
func TestPollerSchedule(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	ms := time.Millisecond
	d := &stepDriver{clock: clock, took: []time.Duration{10 * ms, 20 * ms, 250 * ms, 0, 0}}
	polls := make(chan Poll, 10)
	p := &Poller{Driver: d, Interval: 100 * ms, Clock: clock, Sink: SinkFunc(func(p Poll) { polls <- p })}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	wantStarts := []time.Duration{0, 100 * ms, 200 * ms, 500 * ms, 600 * ms}
	for k, want := range wantStarts {
		got := <-polls
		if got.Seq != uint64(k+1) || got.Start.Sub(t0) != want || got.Readings[0].Value != int16(k+1) || got.Duration != d.took[k] {
			t.Fatalf("poll %d: seq %d start +%v value %v; want seq %d start +%v", k, got.Seq, got.Start.Sub(t0), got.Readings[0].Value, k+1, want)
		}
		if k == len(wantStarts)-1 {
			break
		}
		if err := clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		next := t0.Add(wantStarts[k+1])
		// One nanosecond short of the next start: no poll yet.
		clock.Advance(clock.Until(next) - 1)
		select {
		case p := <-polls:
			t.Fatalf("poll %d started early, at +%v", p.Seq, p.Start.Sub(t0))
		default:
		}
		clock.Advance(1)
	}
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	d.Close()
	clock.Advance(100 * ms)
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Run = %v, want ErrClosed", err)
	}
}

func TestPollerStopsOnContext(t *testing.T) {
	clock := clockwork.NewFakeClock()
	d := &stepDriver{clock: clock}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Poller{Driver: d, Interval: time.Second, Clock: clock, Sink: SinkFunc(func(Poll) {})}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if err := (&Poller{Driver: d, Sink: SinkFunc(func(Poll) {})}).Run(context.Background()); err == nil {
		t.Fatal("Run with Interval 0: no error")
	}
}
