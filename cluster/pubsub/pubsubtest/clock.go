package pubsubtest

import (
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// StepClock is a fake clock whose tickers deliver every tick: Step
// advances the time and hands each due ticker its tick, waiting until the
// ticker's reader took it. A clockwork fake ticker drops ticks its reader
// has not taken yet, so a test that advances quickly would give the
// cluster daemon a jump of seconds between two ticks (and its failure
// detector a false suspicion); with StepClock every tick is seen.
// Timers (After, AfterFunc, NewTimer) are the embedded FakeClock's.
type StepClock struct {
	*clockwork.FakeClock
	mu      sync.Mutex // guards tickers
	tickers []*stepTicker
}

var _ clockwork.Clock = (*StepClock)(nil)

// NewStepClock returns a StepClock at clockwork's default fake time.
func NewStepClock() *StepClock { return &StepClock{FakeClock: clockwork.NewFakeClock()} }

type stepTicker struct {
	c      *StepClock
	ch     chan time.Time
	stop   chan struct{}
	mu     sync.Mutex // guards period, next, stopped
	period time.Duration
	next   time.Time
	once   sync.Once
}

// NewTicker implements clockwork.Clock.
func (c *StepClock) NewTicker(d time.Duration) clockwork.Ticker {
	if d <= 0 {
		panic("pubsubtest: non-positive ticker period")
	}
	t := &stepTicker{c: c, ch: make(chan time.Time), stop: make(chan struct{}), period: d, next: c.Now().Add(d)}
	c.mu.Lock()
	c.tickers = append(c.tickers, t)
	c.mu.Unlock()
	return t
}

func (t *stepTicker) Chan() <-chan time.Time { return t.ch }

func (t *stepTicker) Reset(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.period, t.next = d, t.c.Now().Add(d)
}

func (t *stepTicker) Stop() {
	t.once.Do(func() { close(t.stop) })
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, o := range t.c.tickers {
		if o == t {
			t.c.tickers = append(t.c.tickers[:i:i], t.c.tickers[i+1:]...)
			break
		}
	}
}

// due returns the next due tick at or before now and moves on.
func (t *stepTicker) due(now time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next.After(now) {
		return time.Time{}, false
	}
	at := t.next
	t.next = t.next.Add(t.period)
	return at, true
}

// TickTimeout bounds how long Step waits for a ticker's reader.
const TickTimeout = 10 * time.Second

// Step advances the clock by d and delivers every tick that fell due, in
// ticker order, each to a reader that takes it (or to a ticker stopped
// meanwhile). It returns an error when a reader did not take its tick
// within TickTimeout.
func (c *StepClock) Step(d time.Duration) error {
	c.Advance(d)
	now := c.Now()
	c.mu.Lock()
	ts := append([]*stepTicker(nil), c.tickers...)
	c.mu.Unlock()
	for _, t := range ts {
		for {
			at, ok := t.due(now)
			if !ok {
				break
			}
			timer := time.NewTimer(TickTimeout)
			select {
			case t.ch <- at:
			case <-t.stop:
			case <-timer.C:
				return fmt.Errorf("pubsubtest: a ticker's reader did not take the tick at %v within %v", at, TickTimeout)
			}
			timer.Stop()
		}
	}
	return nil
}
