package aggregate

import (
	"github.com/gopcua/opcua/ua"
)

// The aggregates of this file use only the raw values inside the interval
// (Use Bounds: None).

// tally counts the raw values inside an interval by how a PercentValues
// status calculation sees them.
type tally struct {
	usable, unusable int
	uncertainUsed    bool // an Uncertain value was used (TreatUncertainAsBad false)
	sum              float64
}

func tallyOf(cfg Config, sp span, raw []Sample) tally {
	var t tally
	for _, s := range raw[sp.first:sp.last] {
		if !cfg.usable(s.Status) {
			t.unusable++
			continue
		}
		t.usable++
		t.sum += s.Value
		if qualityOf(s.Status) == uncertain {
			t.uncertainUsed = true
		}
	}
	return t
}

// percentValues is the status of a value-counting aggregate (Part 13
// §5.4.3.2.1, Calculation Method PercentValues). It is Good when the
// usable values reach PercentDataGood percent of all values, Bad_NoData
// when the unusable ones reach PercentDataBad percent, and
// Uncertain_DataSubNormal otherwise. Good is checked first: with
// PercentDataGood = 100 − PercentDataBad both can hold at once, and Part 13
// §4.2.1.2 gives Good the precedence then. A Good outcome is lowered to
// Uncertain_DataSubNormal when an Uncertain value was used. An interval
// without values is Good.
func (t tally) percentValues(cfg Config) ua.StatusCode {
	total := t.usable + t.unusable
	capped := ua.StatusGood
	if t.uncertainUsed {
		capped = ua.StatusUncertainDataSubNormal
	}
	switch {
	case t.unusable == 0:
		return capped
	case 100*t.usable >= int(cfg.PercentDataGood)*total:
		return capped
	case 100*t.unusable >= int(cfg.PercentDataBad)*total:
		return ua.StatusBadNoData
	default:
		return ua.StatusUncertainDataSubNormal
	}
}

// average is the mean of the usable raw values (Part 13 §5.4.3.5), status
// by PercentValues, never Partial (its table says "Not Set").
func average(cfg Config, iv Interval, sp span, raw []Sample) Result {
	t := tallyOf(cfg, sp, raw)
	if sp.outsideData(cfg) || t.usable == 0 {
		return noValue(iv, ua.StatusBadNoData)
	}
	return calculated(iv, t.sum/float64(t.usable), t.percentValues(cfg), false)
}

// count is the number of usable raw values (Part 13 §5.4.3.21), status by
// PercentValues; 0 and Good for an interval without values inside the
// archive's data.
func count(cfg Config, iv Interval, sp span, raw []Sample) Result {
	if sp.outsideData(cfg) {
		return noValue(iv, ua.StatusBadNoData)
	}
	t := tallyOf(cfg, sp, raw)
	st := t.percentValues(cfg)
	return calculated(iv, float64(t.usable), st, sp.partial(cfg, iv))
}

// extremum is the smallest or largest Good raw value of an interval.
type extremum struct {
	idx     int  // first (oldest) Good raw value holding the extreme, or -1
	ties    int  // Good raw values holding it
	onStart int  // a Good raw value holding it at the interval's Start, or -1
	subnorm bool // the status is Uncertain_DataSubNormal
}

// extremeOf finds the minimum (max false) or maximum (max true) of the
// Good raw values (Part 13 §5.4.3.10–13). Only Good values compete. The
// status is Uncertain_DataSubNormal when a Bad value lies in the interval,
// when an Uncertain one does and TreatUncertainAsBad is set, or when an
// Uncertain value lies beyond the Good extreme.
func extremeOf(cfg Config, iv Interval, sp span, raw []Sample, max bool) extremum {
	e := extremum{idx: -1, onStart: -1}
	beyond := func(v, than float64) bool {
		if max {
			return v > than
		}
		return v < than
	}
	for i := sp.first; i < sp.last; i++ {
		s := raw[i]
		if qualityOf(s.Status) != good {
			continue
		}
		switch {
		case e.idx < 0 || beyond(s.Value, raw[e.idx].Value):
			e.idx, e.ties, e.onStart = i, 1, -1
		case s.Value == raw[e.idx].Value:
			e.ties++
		default:
			continue
		}
		if s.At.Equal(iv.Start) {
			e.onStart = i
		}
	}
	if e.idx < 0 {
		return e
	}
	for _, s := range raw[sp.first:sp.last] {
		switch qualityOf(s.Status) {
		case bad:
			e.subnorm = true
		case uncertain:
			if cfg.TreatUncertainAsBad || beyond(s.Value, raw[e.idx].Value) {
				e.subnorm = true
			}
		}
	}
	return e
}

// extreme computes Minimum, Maximum (timestamp: interval start; Raw when
// the extreme lies on the start, Calculated otherwise) and
// MinimumActualTime, MaximumActualTime (timestamp: the oldest raw value
// holding the extreme; Raw when Good, Calculated when
// Uncertain_DataSubNormal). MultiValue marks equal extremes.
func extreme(k Kind, cfg Config, iv Interval, sp span, raw []Sample) Result {
	if sp.outsideData(cfg) {
		return noValue(iv, ua.StatusBadNoData)
	}
	e := extremeOf(cfg, iv, sp, raw, k == Maximum || k == MaximumActualTime)
	if e.idx < 0 {
		return noValue(iv, ua.StatusBadNoData)
	}
	code := ua.StatusGood
	if e.subnorm {
		code = ua.StatusUncertainDataSubNormal
	}
	bits := partialBit(sp.partial(cfg, iv))
	if e.ties > 1 {
		bits |= HistorianMultiValue
	}
	actual := k == MinimumActualTime || k == MaximumActualTime
	r := Result{At: iv.Start, Value: raw[e.idx].Value, Raw: -1}
	switch {
	case actual && !e.subnorm:
		r.At, r.Raw = raw[e.idx].At, e.idx
		bits |= HistorianRaw
	case actual:
		r.At, r.Raw = raw[e.idx].At, e.idx
		bits |= HistorianCalculated
	case e.onStart >= 0 && !e.subnorm:
		r.Raw = e.onStart
		bits |= HistorianRaw
	default:
		bits |= HistorianCalculated
	}
	r.Status = withBits(code, bits)
	return r
}

// valueRange is Maximum − Minimum of the Good raw values (Part 13
// §5.4.3.14), Uncertain_DataSubNormal when either extreme is.
func valueRange(cfg Config, iv Interval, sp span, raw []Sample) Result {
	if sp.outsideData(cfg) {
		return noValue(iv, ua.StatusBadNoData)
	}
	lo := extremeOf(cfg, iv, sp, raw, false)
	if lo.idx < 0 {
		return noValue(iv, ua.StatusBadNoData)
	}
	hi := extremeOf(cfg, iv, sp, raw, true)
	code := ua.StatusGood
	if lo.subnorm || hi.subnorm {
		code = ua.StatusUncertainDataSubNormal
	}
	return calculated(iv, raw[hi.idx].Value-raw[lo.idx].Value, code, sp.partial(cfg, iv))
}

// endpoint computes Start and End (Part 13 §5.4.3.25–26): the oldest or
// newest raw value inside the interval, whatever its status, returned as
// is with its own timestamp and status and the Raw bit.
func endpoint(k Kind, cfg Config, iv Interval, sp span, raw []Sample) Result {
	if sp.outsideData(cfg) || sp.first == sp.last {
		return noValue(iv, ua.StatusBadNoData)
	}
	i := sp.first
	if k == End {
		i = sp.last - 1
	}
	s := raw[i]
	return Result{At: s.At, Value: s.Value, Status: withBits(s.Status, HistorianRaw|partialBit(sp.partial(cfg, iv))), Raw: i}
}

// delta is the newest Good raw value minus the oldest (Part 13 §5.4.3.27),
// Uncertain_DataSubNormal when non-Good values precede the oldest or
// follow the newest inside the interval.
func delta(cfg Config, iv Interval, sp span, raw []Sample) Result {
	if sp.outsideData(cfg) {
		return noValue(iv, ua.StatusBadNoData)
	}
	first, last := -1, -1
	for i := sp.first; i < sp.last; i++ {
		if qualityOf(raw[i].Status) == good {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return noValue(iv, ua.StatusBadNoData)
	}
	code := ua.StatusGood
	if first > sp.first || last < sp.last-1 {
		code = ua.StatusUncertainDataSubNormal
	}
	return calculated(iv, raw[last].Value-raw[first].Value, code, sp.partial(cfg, iv))
}
