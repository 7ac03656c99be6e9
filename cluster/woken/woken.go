package woken

import "time"

// Detector notices the gaps in a loop's ticks: the process did not run for
// longer than Pause.
type Detector struct {
	pause  time.Duration
	last   time.Time // the last tick (or Reset)
	wokeAt time.Time // the tick that ended the last gap; zero: never
}

// NewDetector returns a detector whose first gap is counted from now.
func NewDetector(pause time.Duration, now time.Time) *Detector {
	return &Detector{pause: pause, last: now}
}

// Reset counts the next gap from now (the loop starts or restarts); an
// earlier wake is forgotten.
func (d *Detector) Reset(now time.Time) { d.last, d.wokeAt = now, time.Time{} }

// Tick records a run of the loop at now. woke reports that the gap since
// the previous tick (returned) was longer than the pause.
func (d *Detector) Tick(now time.Time) (gap time.Duration, woke bool) {
	gap = now.Sub(d.last)
	d.last = now
	if gap > d.pause {
		d.wokeAt = now
		return gap, true
	}
	return gap, false
}

// Frozen reports whether the loop has not run for longer than the pause
// before now: the process is waking and its tick has not come yet.
func (d *Detector) Frozen(now time.Time) bool { return now.Sub(d.last) > d.pause }

// WokeAt is the tick that ended the last gap (zero: none since Reset).
func (d *Detector) WokeAt() time.Time { return d.wokeAt }

// Settled is when what the node hears no longer may have waited in its
// sockets through the last freeze: a pause after waking (zero: no wake).
func (d *Detector) Settled() time.Time {
	if d.wokeAt.IsZero() {
		return time.Time{}
	}
	return d.wokeAt.Add(d.pause)
}

// Unsure reports whether, at now, the node cannot tell what its peers
// say: it is frozen, or woke less than a pause ago.
func (d *Detector) Unsure(now time.Time) bool {
	return d.Frozen(now) || (!d.wokeAt.IsZero() && now.Before(d.Settled()))
}
