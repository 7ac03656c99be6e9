package aggregate

import (
	"math/bits"
	"time"

	"github.com/gopcua/opcua/ua"
)

// point is a vertex of the line whose area TimeAverage measures.
type point struct {
	at        time.Time
	value     float64
	uncertain bool
}

// regions adds up the time of an interval by the quality of its data.
type regions struct {
	clean   time.Duration // between Good values, nothing skipped
	derived time.Duration // Uncertain: across skipped values, from an Uncertain value, or extrapolated
	noData  time.Duration // before the first usable value, without a start bound
}

// timeAverage integrates the sloped line through the start bound, the
// usable raw values inside the interval and the end bound, all Interpolated
// Bounding Values, and divides the area by the time it covers (Part 13
// §5.4.3.6). The line is always sloped between points; the variable's
// Stepped property only changes the bounding values. Without a start bound
// the line starts at the first usable value and the result is Partial;
// without a usable value after the interval the end bound is extrapolated.
func timeAverage(cfg Config, iv Interval, sp span, raw []Sample) Result {
	if sp.beforeData(cfg) {
		return noValue(iv, ua.StatusBadNoData)
	}
	var (
		reg     regions
		area    float64 // value × nanoseconds
		prev    point
		have    bool
		skipped bool
		first   time.Time
	)
	segment := func(q point) {
		d := since(prev.at, q.at)
		area += (prev.value + q.value) / 2 * float64(d)
		if skipped || prev.uncertain || q.uncertain {
			reg.derived += d
		} else {
			reg.clean += d
		}
		prev, skipped = q, false
	}
	startB := boundAt(cfg, raw, sp.lo)
	if startB.kind != noBound {
		prev, have, first = point{sp.lo, startB.value, startB.uncertain()}, true, sp.lo
	}
	for i, end := searchAfter(raw, sp.lo), searchAtOrAfter(raw, sp.hi); i < end; i++ {
		s := raw[i]
		if !cfg.usable(s.Status) {
			skipped = have
			continue
		}
		p := point{s.At, s.Value, qualityOf(s.Status) != good}
		if !have {
			prev, have, first, skipped = p, true, s.At, false
			continue
		}
		segment(p)
	}
	if !have {
		return noValue(iv, ua.StatusBadNoData)
	}
	endB := boundAt(cfg, raw, sp.hi)
	segment(point{sp.hi, endB.value, endB.uncertain()})
	reg.noData = first.Sub(sp.lo)
	covered := sp.hi.Sub(first)
	st := reg.timeWeighted(cfg, sp.width())
	// covered > 0: the line starts before hi, at lo or at a raw value inside.
	return calculated(iv, area/float64(covered), st, sp.partial(cfg, iv) || startB.kind == noBound)
}

// timeWeighted is the status of a time-weighted aggregate over an interval
// of the given width (Part 13 §5.4.3.2.1 and the TimeAverage table): Good
// when the time with data reaches PercentDataGood percent, Bad_NoData when
// the time without data reaches PercentDataBad percent, else
// Uncertain_DataSubNormal; Good is lowered to Uncertain_DataSubNormal when
// part of the line was derived (skipped values, Uncertain values,
// extrapolation). Good is checked first, as in percentValues.
func (r regions) timeWeighted(cfg Config, width time.Duration) ua.StatusCode {
	capped := ua.StatusGood
	if r.derived > 0 {
		capped = ua.StatusUncertainDataSubNormal
	}
	switch {
	case r.noData == 0:
		return capped
	case atLeastPercent(r.clean+r.derived, width, cfg.PercentDataGood):
		return capped
	case atLeastPercent(r.noData, width, cfg.PercentDataBad):
		return ua.StatusBadNoData
	default:
		return ua.StatusUncertainDataSubNormal
	}
}

// atLeastPercent reports part ≥ pct % of whole, exactly, for non-negative
// durations.
func atLeastPercent(part, whole time.Duration, pct uint8) bool {
	ph, pl := bits.Mul64(uint64(part), 100)
	wh, wl := bits.Mul64(uint64(whole), uint64(pct))
	return ph > wh || ph == wh && pl >= wl
}

// since is t − from, like t.Sub(from) without its saturation: correct while
// the difference is within ±292 years. It keeps the TimeAverage loop cheap.
func since(from, t time.Time) time.Duration {
	return time.Duration(t.Unix()-from.Unix())*time.Second + time.Duration(t.Nanosecond()-from.Nanosecond())
}
