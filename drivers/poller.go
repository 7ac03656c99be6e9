package drivers

import (
	"context"
	"errors"
	"time"

	"github.com/jonboulle/clockwork"
)

// Sink receives the outcome of every poll of a Poller.
//
// Publish is called by the Poller's goroutine after each Read, one call at a
// time, never concurrently, in poll order. It should return quickly (hand the
// readings to the address space and return): the next poll waits for it, so
// a slow sink stretches the interval; polls are never queued behind it. It
// must not call the Poller's driver's Close and wait for Run to end (Run is
// the caller). p.Readings is the sink's to keep.
type Sink interface {
	Publish(p Poll)
}

// SinkFunc is a func as a Sink.
type SinkFunc func(Poll)

// Publish calls f(p).
func (f SinkFunc) Publish(p Poll) { f(p) }

// Poll is one poll's outcome.
type Poll struct {
	// Seq numbers the polls of one Run from 1.
	Seq uint64
	// Start is when the poll began and Duration how long the driver's Read
	// took (on the Poller's clock): the poll-cycle duration.
	Start    time.Time
	Duration time.Duration
	// Readings and Err are what Driver.Read returned.
	Readings []Reading
	Err      error
}

// Poller reads a Driver at a fixed interval and hands each poll to a Sink.
// Its fields are set before Run and not changed after.
type Poller struct {
	// Driver is the device.
	Driver Driver
	// Interval between the starts of two polls; PollInterval(dev) for a
	// deployment's device. Must be > 0.
	Interval time.Duration
	// Clock times the polls. Default: the wall clock.
	Clock clockwork.Clock
	// Sink receives every poll.
	Sink Sink
}

// Run polls at once and then every Interval (NextPoll) until ctx is done
// (at once) or the driver is closed (at the next poll), and returns ctx's
// error or ErrClosed. It runs on the caller's goroutine; one Run per Driver.
func (p *Poller) Run(ctx context.Context) error {
	clock := p.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	if p.Interval <= 0 {
		return errors.New("drivers: Poller.Interval must be > 0")
	}
	var seq uint64
	for {
		start := clock.Now()
		readings, err := p.Driver.Read(ctx)
		if errors.Is(err, ErrClosed) {
			return ErrClosed
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		now := clock.Now()
		seq++
		p.Sink.Publish(Poll{Seq: seq, Start: start, Duration: now.Sub(start), Readings: readings, Err: err})
		now = clock.Now()
		if err := sleep(ctx, clock, NextPoll(start, now, p.Interval).Sub(now)); err != nil {
			return err
		}
	}
}

// NextPoll is when the poll after one that started at start should start,
// given that it is now: the first start + k·interval (k ≥ 1) not before now.
// A poll that overran skips the instants it missed instead of making up for
// them, so a slow device is never polled faster than once per interval.
func NextPoll(start, now time.Time, interval time.Duration) time.Time {
	next := start.Add(interval)
	if !next.Before(now) {
		return next
	}
	k := (now.Sub(start) + interval - 1) / interval // ceil, ≥ 1 here
	return start.Add(k * interval)
}

func sleep(ctx context.Context, clock clockwork.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.Chan():
		return nil
	}
}
