package aggregate

import (
	"time"

	"github.com/gopcua/opcua/ua"
)

// boundKind says how a bounding value was found.
type boundKind uint8

const (
	noBound      boundKind = iota // no usable value before the timestamp
	rawBound                      // a usable raw value at the timestamp
	interpolated                  // between the usable values around the timestamp
	extrapolated                  // past the last usable value
)

// bound is an Interpolated Bounding Value (Part 13 §3.1.8).
type bound struct {
	kind  boundKind
	value float64
	// status is the raw value's StatusCode for a rawBound, Good or
	// Uncertain_DataSubNormal for interpolated and extrapolated bounds, and
	// Bad_NoData for noBound.
	status ua.StatusCode
	raw    int // index of the raw value for a rawBound, else -1
}

// uncertain reports whether the bound lowers a result to Uncertain.
func (b bound) uncertain() bool { return qualityOf(b.status) != good }

// boundAt computes the Interpolated Bounding Value at t (Part 13 §3.1.8)
// from raw, sorted by time ascending:
//
//   - a usable raw value at t is the bound, with its own status;
//   - without a usable value before t there is no bound (Bad_NoData);
//   - with a usable value after t the bound is interpolated between the
//     last usable value before t and the first after it: linearly, or by
//     holding the value before when cfg.Stepped. It is
//     Uncertain_DataSubNormal when an unusable value was skipped between
//     them (for a stepped variable: between the value before and t) or
//     when a value it is drawn from is Uncertain; Good otherwise;
//   - without a usable value after t the bound is extrapolated, always
//     Uncertain_DataSubNormal: along the line through the last two usable
//     values when cfg.UseSlopedExtrapolation and the variable is not
//     stepped and two exist, else by holding the last one.
func boundAt(cfg Config, raw []Sample, t time.Time) bound {
	at := searchAtOrAfter(raw, t)
	skippedAt := false
	j := at
	for ; j < len(raw) && raw[j].At.Equal(t); j++ {
		if cfg.usable(raw[j].Status) {
			return bound{kind: rawBound, value: raw[j].Value, status: raw[j].Status, raw: j}
		}
		skippedAt = true
	}
	before, skippedBefore := lastUsable(cfg, raw, at-1)
	if before < 0 {
		return bound{kind: noBound, status: ua.StatusBadNoData, raw: -1}
	}
	after, skippedAfter := firstUsable(cfg, raw, j)
	if after < 0 {
		return extrapolate(cfg, raw, before, t)
	}
	b, a := raw[before], raw[after]
	if cfg.Stepped {
		return interpolatedBound(b.Value, skippedBefore || skippedAt || qualityOf(b.Status) != good)
	}
	v := lerp(b.At, b.Value, a.At, a.Value, t)
	unc := skippedBefore || skippedAt || skippedAfter ||
		qualityOf(b.Status) != good || qualityOf(a.Status) != good
	return interpolatedBound(v, unc)
}

func interpolatedBound(v float64, unc bool) bound {
	st := ua.StatusGood
	if unc {
		st = ua.StatusUncertainDataSubNormal
	}
	return bound{kind: interpolated, value: v, status: st, raw: -1}
}

// extrapolate extends the usable value raw[last] to t, which lies after it.
func extrapolate(cfg Config, raw []Sample, last int, t time.Time) bound {
	v := raw[last].Value
	if cfg.UseSlopedExtrapolation && !cfg.Stepped {
		if prev, _ := lastUsable(cfg, raw, last-1); prev >= 0 && raw[prev].At.Before(raw[last].At) {
			v = lerp(raw[prev].At, raw[prev].Value, raw[last].At, raw[last].Value, t)
		}
	}
	return bound{kind: extrapolated, value: v, status: ua.StatusUncertainDataSubNormal, raw: -1}
}

// lastUsable returns the index of the last usable value at or before index
// i, or -1, and whether unusable values were passed on the way.
func lastUsable(cfg Config, raw []Sample, i int) (int, bool) {
	skipped := false
	for ; i >= 0; i-- {
		if cfg.usable(raw[i].Status) {
			return i, skipped
		}
		skipped = true
	}
	return -1, skipped
}

// firstUsable returns the index of the first usable value at or after
// index i, or -1, and whether unusable values were passed on the way.
func firstUsable(cfg Config, raw []Sample, i int) (int, bool) {
	skipped := false
	for ; i < len(raw); i++ {
		if cfg.usable(raw[i].Status) {
			return i, skipped
		}
		skipped = true
	}
	return -1, skipped
}

// lerp is the value at t of the line through (t0, v0) and (t1, v1), t0 ≠ t1.
func lerp(t0 time.Time, v0 float64, t1 time.Time, v1 float64, t time.Time) float64 {
	return v0 + (v1-v0)*float64(t.Sub(t0))/float64(t1.Sub(t0))
}
