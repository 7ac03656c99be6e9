package aggregate

import (
	"time"

	"github.com/gopcua/opcua/ua"
)

// duration computes DurationGood, DurationBad, PercentGood and PercentBad
// (Part 13 §5.4.3.31–34). The interval is cut into regions, each starting
// at a raw value inside it and taking that value's status; the first
// region takes the status of the last raw value at or before the
// interval's start, and is Bad when there is none. Time before DataStart
// or after DataEnd has no data and counts as Bad. A region counts as Good
// when its status is Good, as Bad when it is Bad or, with
// TreatUncertainAsBad, Uncertain; so DurationGood + DurationBad is the
// interval's width exactly when TreatUncertainAsBad is set. Durations are
// in milliseconds, percentages relative to the interval's width; the
// status is Good, Calculated.
func duration(k Kind, cfg Config, iv Interval, sp span, raw []Sample) Result {
	if sp.outsideData(cfg) {
		return noValue(iv, ua.StatusBadNoData)
	}
	dataLo, dataHi := sp.lo, sp.hi
	if !cfg.DataStart.IsZero() && cfg.DataStart.After(dataLo) {
		dataLo = cfg.DataStart
	}
	if !cfg.DataEnd.IsZero() && cfg.DataEnd.Before(dataHi) {
		dataHi = cfg.DataEnd
	}
	var goodTime, badTime time.Duration
	add := func(from, to time.Time, q quality) {
		in := overlap(from, to, dataLo, dataHi)
		badTime += to.Sub(from) - in
		switch {
		case q == good:
			goodTime += in
		case q == bad || cfg.TreatUncertainAsBad:
			badTime += in
		}
	}
	q := bad
	if i := searchAfter(raw, sp.lo) - 1; i >= 0 {
		q = qualityOf(raw[i].Status)
	}
	from := sp.lo
	for i := searchAfter(raw, sp.lo); i < len(raw) && raw[i].At.Before(sp.hi); i++ {
		add(from, raw[i].At, q)
		from, q = raw[i].At, qualityOf(raw[i].Status)
	}
	add(from, sp.hi, q)
	d := goodTime
	if k == DurationBad || k == PercentBad {
		d = badTime
	}
	v := float64(d) / float64(time.Millisecond)
	if k == PercentGood || k == PercentBad {
		v = 100 * float64(d) / float64(sp.width())
	}
	return calculated(iv, v, ua.StatusGood, sp.partial(cfg, iv))
}

// overlap is the length of [a0, a1] ∩ [b0, b1], or 0.
func overlap(a0, a1, b0, b1 time.Time) time.Duration {
	if b0.After(a0) {
		a0 = b0
	}
	if b1.Before(a1) {
		a1 = b1
	}
	if !a1.After(a0) {
		return 0
	}
	return a1.Sub(a0)
}
