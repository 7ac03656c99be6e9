package aggregate

import (
	"errors"
	"fmt"
	"time"
)

// Errors of Intervals; the caller maps them onto the operation's result.
var (
	// ErrInvalidArgument: startTime equals endTime, or the processing
	// interval is negative. The caller answers Bad_InvalidArgument
	// (Part 13 §5.4.2.2, Table 12).
	ErrInvalidArgument = errors.New("aggregate: invalid interval arguments")

	// ErrTooManyIntervals: the request would produce more intervals than
	// the caller allows. The caller answers Bad_TooManyOperations.
	ErrTooManyIntervals = errors.New("aggregate: too many intervals")
)

// Interval is one processing interval. It holds the values at or after
// Start and before End when Start < End, and the values at or before Start
// and after End when time flows backward (Start > End): Start is always
// included, End never (Part 13 §5.4.2.2). Start is the timestamp reported
// for the interval.
type Interval struct {
	Start, End time.Time
	// Partial is set when the interval is shorter than the processing
	// interval: the last one of a range that the processing interval does
	// not divide, or the only one when the processing interval exceeds the
	// range (Part 13 §5.3.3.2).
	Partial bool
}

// Intervals lays out the intervals of a processed read from start to end
// (Part 13 §5.4.2.2, Table 12). A processing interval of 0, or one at least
// as long as the range, gives one interval from start to end. Otherwise the
// range is cut into intervals of the processing interval from start, in the
// direction of end, and a shorter last interval (Partial) holds the rest.
// max bounds the number of intervals; max ≤ 0 means no bound.
func Intervals(start, end time.Time, processing time.Duration, max int) ([]Interval, error) {
	if start.Equal(end) {
		return nil, fmt.Errorf("%w: startTime equals endTime (%s)", ErrInvalidArgument, start.Format(time.RFC3339Nano))
	}
	if processing < 0 {
		return nil, fmt.Errorf("%w: processing interval %s is negative", ErrInvalidArgument, processing)
	}
	backward := end.Before(start)
	rng := end.Sub(start)
	if backward {
		rng = -rng
	}
	if processing == 0 || processing >= rng {
		return []Interval{{Start: start, End: end, Partial: processing > rng}}, nil
	}
	full := int64(rng / processing)
	n := full
	if rng%processing != 0 {
		n++
	}
	if max > 0 && n > int64(max) {
		return nil, fmt.Errorf("%w: %d intervals of %s exceed the limit of %d", ErrTooManyIntervals, n, processing, max)
	}
	step := processing
	if backward {
		step = -processing
	}
	out := make([]Interval, n)
	for i := range out {
		s := start.Add(time.Duration(i) * step)
		out[i] = Interval{Start: s, End: s.Add(step)}
	}
	if n > full {
		out[n-1].End = end
		out[n-1].Partial = true
	}
	return out, nil
}

// span is an Interval in chronological terms: lo ≤ hi, and the raw values
// of the interval are raw[first:last].
type span struct {
	lo, hi      time.Time
	backward    bool
	first, last int
}

// spanOf locates iv in raw, which is sorted by time ascending.
func spanOf(iv Interval, raw []Sample) span {
	sp := span{lo: iv.Start, hi: iv.End}
	if iv.End.Before(iv.Start) {
		sp = span{lo: iv.End, hi: iv.Start, backward: true}
	}
	if sp.backward {
		sp.first = searchAfter(raw, sp.lo)
		sp.last = searchAfter(raw, sp.hi)
	} else {
		sp.first = searchAtOrAfter(raw, sp.lo)
		sp.last = searchAtOrAfter(raw, sp.hi)
	}
	return sp
}

// width is the length of the interval.
func (sp span) width() time.Duration { return sp.hi.Sub(sp.lo) }

// beforeData reports "Before Start of Data": the whole interval lies before
// the first value of the archive.
func (sp span) beforeData(cfg Config) bool {
	if cfg.DataStart.IsZero() {
		return false
	}
	if sp.backward {
		return sp.hi.Before(cfg.DataStart)
	}
	return !sp.hi.After(cfg.DataStart)
}

// afterData reports "After End of Data": the whole interval lies after the
// time up to which the archive is complete.
func (sp span) afterData(cfg Config) bool {
	if cfg.DataEnd.IsZero() {
		return false
	}
	if sp.backward {
		return !sp.lo.Before(cfg.DataEnd)
	}
	return sp.lo.After(cfg.DataEnd)
}

// outsideData reports whether the interval lies wholly before or after the
// archive's data.
func (sp span) outsideData(cfg Config) bool { return sp.beforeData(cfg) || sp.afterData(cfg) }

// partial reports whether the result for iv carries the Partial bit: iv is
// shorter than the processing interval, it straddles the start of the
// archive's data, or it reaches past the end of it (Part 13 §5.3.3.2).
func (sp span) partial(cfg Config, iv Interval) bool {
	if iv.Partial {
		return true
	}
	if !cfg.DataStart.IsZero() && sp.lo.Before(cfg.DataStart) && !sp.beforeData(cfg) {
		return true
	}
	return !cfg.DataEnd.IsZero() && sp.hi.After(cfg.DataEnd)
}

// searchAtOrAfter returns the index of the first sample at or after t.
func searchAtOrAfter(raw []Sample, t time.Time) int {
	lo, hi := 0, len(raw)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if raw[m].At.Before(t) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// searchAfter returns the index of the first sample after t.
func searchAfter(raw []Sample, t time.Time) int {
	lo, hi := 0, len(raw)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if raw[m].At.After(t) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}
