package drivers

import (
	"sync/atomic"
	"time"
)

// Counters are the atomic counters behind a driver's Stats; a driver adds to
// them from any goroutine without a lock.
type Counters struct {
	polls, readsOK, readsFailed, writesOK, writesFailed, connects atomic.Uint64
	lastPoll                                                      atomic.Int64
}

// Poll records one Read that took d.
func (c *Counters) Poll(d time.Duration) {
	c.polls.Add(1)
	c.lastPoll.Store(int64(d))
}

// Reads records ok good and failed failed read requests.
func (c *Counters) Reads(ok, failed int) {
	c.readsOK.Add(uint64(ok))
	c.readsFailed.Add(uint64(failed))
}

// Write records one write, good when err is nil.
func (c *Counters) Write(err error) {
	if err == nil {
		c.writesOK.Add(1)
	} else {
		c.writesFailed.Add(1)
	}
}

// Connect records one connect attempt.
func (c *Counters) Connect() { c.connects.Add(1) }

// Stats returns the counters with connected as Stats.Connected.
func (c *Counters) Stats(connected bool) Stats {
	return Stats{
		Polls:            c.polls.Load(),
		ReadsOK:          c.readsOK.Load(),
		ReadsFailed:      c.readsFailed.Load(),
		WritesOK:         c.writesOK.Load(),
		WritesFailed:     c.writesFailed.Load(),
		Connects:         c.connects.Load(),
		Connected:        connected,
		LastPollDuration: time.Duration(c.lastPoll.Load()),
	}
}
