package aggregate

import (
	"time"

	"github.com/gopcua/opcua/ua"
)

// Sample is one raw value of the archive. The caller converts numeric
// values to float64; the value of a Bad sample is never used.
type Sample struct {
	At     time.Time
	Value  float64
	Status ua.StatusCode
}

// Result is the aggregate of one interval.
type Result struct {
	// At is the timestamp to report: the interval's Start, or the time of
	// the raw value for Start, End, MinimumActualTime and
	// MaximumActualTime.
	At time.Time
	// Value is the aggregate; meaningless when Status is Bad. Durations are
	// in milliseconds, percentages in 0–100, Count is a whole number.
	Value float64
	// Status is the aggregate's StatusCode with its historian bits.
	Status ua.StatusCode
	// Raw is the index in the caller's samples of the raw value returned
	// as is (Start, End, MinimumActualTime, MaximumActualTime, a Minimum or
	// Maximum on the interval's start, an Interpolative raw hit), or -1.
	Raw int
}

// Compute computes aggregate k over interval iv from raw, every raw value
// the caller has around the interval, sorted by time ascending (see the
// package documentation for what raw must hold). It is a pure function: it
// keeps nothing and never modifies raw.
func Compute(k Kind, cfg Config, iv Interval, raw []Sample) Result {
	if iv.Start.Equal(iv.End) {
		return noValue(iv, ua.StatusBadInvalidArgument)
	}
	sp := spanOf(iv, raw)
	switch k {
	case Interpolative:
		return interpolative(cfg, iv, sp, raw)
	case Average:
		return average(cfg, iv, sp, raw)
	case TimeAverage:
		return timeAverage(cfg, iv, sp, raw)
	case Minimum, Maximum, MinimumActualTime, MaximumActualTime:
		return extreme(k, cfg, iv, sp, raw)
	case Range:
		return valueRange(cfg, iv, sp, raw)
	case Count:
		return count(cfg, iv, sp, raw)
	case Start, End:
		return endpoint(k, cfg, iv, sp, raw)
	case Delta:
		return delta(cfg, iv, sp, raw)
	case DurationGood, DurationBad, PercentGood, PercentBad:
		return duration(k, cfg, iv, sp, raw)
	default:
		return noValue(iv, ua.StatusBadAggregateNotSupported)
	}
}

// noValue is a result without a value, at the interval's start.
func noValue(iv Interval, st ua.StatusCode) Result {
	return Result{At: iv.Start, Status: st, Raw: -1}
}

// calculated is a Calculated result at the interval's start, or a result
// without value when code is Bad.
func calculated(iv Interval, v float64, code ua.StatusCode, partial bool) Result {
	if qualityOf(code) == bad {
		return noValue(iv, code)
	}
	return Result{At: iv.Start, Value: v, Status: withBits(code, HistorianCalculated|partialBit(partial)), Raw: -1}
}

func partialBit(p bool) ua.StatusCode {
	if p {
		return HistorianPartial
	}
	return 0
}

// interpolative returns the Interpolated Bounding Value at the interval's
// start (Part 13 §5.4.3.4): Raw when a usable value lies on the start,
// Interpolated otherwise; Bad_NoData before the start of data or without a
// usable value before the start. It never sets Partial.
func interpolative(cfg Config, iv Interval, sp span, raw []Sample) Result {
	if !cfg.DataStart.IsZero() && iv.Start.Before(cfg.DataStart) {
		return noValue(iv, ua.StatusBadNoData)
	}
	b := boundAt(cfg, raw, iv.Start)
	switch b.kind {
	case noBound:
		return noValue(iv, ua.StatusBadNoData)
	case rawBound:
		return Result{At: iv.Start, Value: b.value, Status: withBits(b.status, HistorianRaw), Raw: b.raw}
	default:
		return Result{At: iv.Start, Value: b.value, Status: withBits(b.status, HistorianInterpolated), Raw: -1}
	}
}
