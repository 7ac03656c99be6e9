package simulated

import (
	"math"
	"time"

	"github.com/otopcua/otopcua/deployment"
)

// Defaults of a simulated tag's shape.
const (
	DefaultPeriod = 10 * time.Second
	DefaultMin    = 0.0
	DefaultMax    = 100.0
)

// Signal is a periodic waveform between Min and Max. At is a pure function
// of the instant: the phase is measured from the Unix epoch, so every node
// of a pair serves the same value at the same wall-clock instant.
type Signal struct {
	// Kind is deployment.SignalRamp, SignalSine, SignalSquare or
	// SignalConstant.
	Kind   string
	Period time.Duration // > 0
	Min    float64
	Max    float64
}

// At is the signal's value at t, with phase φ = (t since the epoch mod
// Period) / Period in [0, 1):
//
//	ramp      Min + (Max − Min)·φ   (rises, then drops back to Min)
//	sine      mid + amp·sin(2πφ)    (mid = (Min+Max)/2, amp = (Max−Min)/2)
//	square    Max for φ < ½, Min for φ ≥ ½
//	constant  Min
func (s Signal) At(t time.Time) float64 {
	phi := phase(t, s.Period)
	switch s.Kind {
	case deployment.SignalRamp:
		return s.Min + (s.Max-s.Min)*phi
	case deployment.SignalSine:
		return (s.Min+s.Max)/2 + (s.Max-s.Min)/2*math.Sin(2*math.Pi*phi)
	case deployment.SignalSquare:
		if phi < 0.5 {
			return s.Max
		}
		return s.Min
	}
	return s.Min
}

// phase is (t since the epoch mod period) / period, in [0, 1).
func phase(t time.Time, period time.Duration) float64 {
	if period <= 0 {
		return 0
	}
	p := int64(period)
	r := t.UnixNano() % p
	if r < 0 {
		r += p
	}
	return float64(r) / float64(p)
}

// Walk is a bounded random walk: it starts at the middle of [Min, Max] at
// its origin and takes one step every Step, each a uniform move of at most
// (Max − Min)/50, reflected at Min and Max. Step k is drawn from the seed and
// k alone, so the walk is a function of the seed, the origin and the
// instant, whatever the polling. A Walk is not safe for concurrent use.
type Walk struct {
	min, max float64
	step     time.Duration
	seed     uint64
	origin   time.Time
	k        int64   // steps taken
	v        float64 // value after k steps
}

// walkCatchUp is the most steps At takes at once: after a longer silence
// (a clock jump) the walk skips the steps before the last walkCatchUp.
const walkCatchUp = 100_000

// NewWalk returns a walk over [min, max] with one step per period/100 (at
// least 1 ms), starting at origin.
func NewWalk(lo, hi float64, period time.Duration, seed uint64, origin time.Time) *Walk {
	step := max(period/100, time.Millisecond)
	return &Walk{min: lo, max: hi, step: step, seed: seed, origin: origin, v: (lo + hi) / 2}
}

// At is the walk's value at t (the start value before the first step).
func (w *Walk) At(t time.Time) float64 {
	target := int64(0)
	if d := t.Sub(w.origin); d > 0 {
		target = int64(d / w.step)
	}
	if target < w.k { // the clock went back: walk again from the start
		w.k, w.v = 0, (w.min+w.max)/2
	}
	if target-w.k > walkCatchUp {
		w.k = target - walkCatchUp
	}
	size := (w.max - w.min) / 50
	for w.k < target {
		w.k++
		u := float64(mix(w.seed^mix(uint64(w.k)))>>11)/(1<<53)*2 - 1 // [-1, 1)
		w.v = reflect(w.v+u*size, w.min, w.max)
	}
	return w.v
}

func reflect(v, lo, hi float64) float64 {
	if v > hi {
		v = 2*hi - v
	}
	if v < lo {
		v = 2*lo - v
	}
	return math.Min(math.Max(v, lo), hi)
}

// mix is SplitMix64's finalizer: a bijective scramble of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
