package main

import (
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/measure"
)

// Latency histograms: 0.1 ms buckets up to 10 s.
const (
	latencyWidth = 100 * time.Microsecond
	latencyLimit = 10 * time.Second
)

// Tracker pairs every register change the changer makes with the first
// notification that carries the changed value. Each change writes a value
// derived from a global sequence number that differs from what the
// register held, so a notification of handle h with the value of h's open
// change is that change's notification, and a notification of any other
// value (a write, an initial value, an older change) is not.
//
// It reads no clock: callers pass the times in. Its methods are safe for
// concurrent use (mu guards everything).
type Tracker struct {
	mu        sync.Mutex
	slots     []slot // by handle; mu must be held.
	seq       uint32 // changes made; mu must be held.
	measuring bool   // changes made now are in the window; mu must be held.
	seen      int    // handles with a first Good notification; mu must be held.

	latency     *measure.Histogram // change → notification receipt
	toSource    *measure.Histogram // change → SourceTimestamp (the driver's read)
	sourceToRcv *measure.Histogram // SourceTimestamp → notification receipt
	figs        TrackerCounts
}

// slot is the state of one handle.
type slot struct {
	val      int16     // value of the last change (or what the register held at the start)
	at       time.Time // when the last change was made
	open     bool      // the last change has not been notified yet
	inWindow bool      // the last change was made in the window
	seen     bool      // a Good notification arrived once
}

// TrackerCounts are the counts of a Tracker.
type TrackerCounts struct {
	// Changes are the changes made in the window, Notified those whose
	// notification arrived.
	Changes  uint64 `json:"changes"`
	Notified uint64 `json:"notified"`
	// Superseded are changes of the window changed again before they were
	// notified: a lost change.
	Superseded uint64 `json:"superseded"`
	// Notifications counts every Good notification; Bad those with a Bad
	// or Uncertain status.
	Notifications uint64 `json:"notifications"`
	Bad           uint64 `json:"bad_status"`
	// Unmatched are Good notifications of a handle's value that no open
	// change holds (writes, repeats).
	Unmatched uint64 `json:"unmatched"`
}

// NewTracker tracks n handles whose registers hold 0.
func NewTracker(n int) *Tracker {
	return &Tracker{slots: make([]slot, n),
		latency:     measure.NewHistogram(latencyWidth, latencyLimit),
		toSource:    measure.NewHistogram(latencyWidth, latencyLimit),
		sourceToRcv: measure.NewHistogram(latencyWidth, latencyLimit)}
}

// SetMeasuring opens (true) or closes the window: only changes made while
// it is open are counted.
func (k *Tracker) SetMeasuring(on bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.measuring = on
}

// Change records a change of handle h made at at and returns the value to
// write into its register. Call it before writing, so that the
// notification cannot arrive first.
func (k *Tracker) Change(h int, at time.Time) int16 {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := &k.slots[h]
	if s.open && s.inWindow {
		k.figs.Superseded++
	}
	v := s.val
	for v == s.val {
		k.seq++
		v = int16(1 + k.seq%32767)
	}
	*s = slot{val: v, at: at, open: true, inWindow: k.measuring, seen: s.seen}
	if k.measuring {
		k.figs.Changes++
	}
	return v
}

// Notify records a notification of handle h with value v (nil when it
// carries none) and status st, read by the driver at source and received
// at rcv.
func (k *Tracker) Notify(h int, v *ua.Variant, st ua.StatusCode, source, rcv time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if h < 0 || h >= len(k.slots) {
		k.figs.Unmatched++
		return
	}
	if st != ua.StatusOK {
		k.figs.Bad++
		return
	}
	k.figs.Notifications++
	s := &k.slots[h]
	if !s.seen {
		s.seen = true
		k.seen++
	}
	var val any
	if v != nil {
		val = v.Value()
	}
	if !s.open || val != any(s.val) {
		k.figs.Unmatched++
		return
	}
	s.open = false
	if !s.inWindow {
		return
	}
	k.figs.Notified++
	k.latency.Add(rcv.Sub(s.at))
	if !source.IsZero() {
		k.toSource.Add(source.Sub(s.at))
		k.sourceToRcv.Add(rcv.Sub(source))
	}
}

// Seen is the number of handles that had a Good notification.
func (k *Tracker) Seen() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen
}

// Open is the number of changes of the window not notified yet.
func (k *Tracker) Open() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, s := range k.slots {
		if s.open && s.inWindow {
			n++
		}
	}
	return n
}

// Figures are the tracker's latencies and counts so far.
func (k *Tracker) Figures() LatencyFigures {
	k.mu.Lock()
	defer k.mu.Unlock()
	f := LatencyFigures{TrackerCounts: k.figs,
		P50Ms: quantileMs(k.latency, 0.5), P90Ms: quantileMs(k.latency, 0.9),
		P99Ms: quantileMs(k.latency, 0.99), MaxMs: msOf(k.latency.Max()),
		ToSourceP50Ms: quantileMs(k.toSource, 0.5), ToSourceP99Ms: quantileMs(k.toSource, 0.99),
		SourceToRcvP50Ms: quantileMs(k.sourceToRcv, 0.5), SourceToRcvP99Ms: quantileMs(k.sourceToRcv, 0.99),
		Negative: k.latency.Negative() + k.toSource.Negative() + k.sourceToRcv.Negative()}
	for _, s := range k.slots {
		if s.open && s.inWindow {
			f.Unnotified++
		}
	}
	return f
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantileMs is h's q-th quantile in ms: the upper edge of its bucket, but
// never above the largest duration recorded.
func quantileMs(h *measure.Histogram, q float64) float64 {
	return msOf(min(h.Quantile(q), h.Max()))
}
