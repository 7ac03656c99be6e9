package aggregate

import (
	"math"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"pgregory.net/rapid"
)

// genSamples draws up to 40 samples at strictly increasing whole seconds
// from t0−20 s; goodOnly makes every status Good.
func genSamples(t *rapid.T, goodOnly bool) []Sample {
	n := rapid.IntRange(0, 40).Draw(t, "n")
	raw := make([]Sample, n)
	sec := rapid.IntRange(-20, 0).Draw(t, "first")
	for i := range raw {
		sec += rapid.IntRange(1, 6).Draw(t, "gap")
		st := ua.StatusGood
		if !goodOnly {
			st = rapid.SampledFrom([]ua.StatusCode{ua.StatusGood, ua.StatusGood, ua.StatusGood, ua.StatusUncertain, ua.StatusBad, ua.StatusBadNoData}).Draw(t, "status")
		}
		raw[i] = Sample{At: at(float64(sec)), Value: float64(rapid.IntRange(-100, 100).Draw(t, "value")), Status: st}
	}
	return raw
}

// genInterval draws an interval of 1–100 s starting between t0−30 s and
// t0+200 s, in either direction of time.
func genInterval(t *rapid.T) Interval {
	a := at(float64(rapid.IntRange(-30, 200).Draw(t, "start")))
	b := a.Add(time.Duration(rapid.IntRange(1, 100).Draw(t, "length")) * time.Second)
	if rapid.Bool().Draw(t, "backward") {
		a, b = b, a
	}
	return Interval{Start: a, End: b, Partial: rapid.Bool().Draw(t, "partial")}
}

// genConfig draws a valid configuration, sometimes with the archive's
// extent taken from the samples.
func genConfig(t *rapid.T, raw []Sample) Config {
	pb := uint8(rapid.IntRange(0, 100).Draw(t, "percentBad"))
	cfg := Config{
		TreatUncertainAsBad:    rapid.Bool().Draw(t, "uncertainAsBad"),
		PercentDataBad:         pb,
		PercentDataGood:        uint8(rapid.IntRange(100-int(pb), 100).Draw(t, "percentGood")),
		UseSlopedExtrapolation: rapid.Bool().Draw(t, "slopedExtrapolation"),
		Stepped:                rapid.Bool().Draw(t, "stepped"),
	}
	if len(raw) > 0 && rapid.Bool().Draw(t, "extent") {
		cfg.DataStart, cfg.DataEnd = raw[0].At, raw[len(raw)-1].At
	}
	return cfg
}

// inside is the brute-force membership test of Interval's documentation.
func inside(iv Interval, t time.Time) bool {
	if iv.Start.Before(iv.End) {
		return !t.Before(iv.Start) && t.Before(iv.End)
	}
	return !t.After(iv.Start) && t.After(iv.End)
}

func widthMs(iv Interval) float64 {
	d := iv.End.Sub(iv.Start)
	if d < 0 {
		d = -d
	}
	return float64(d) / float64(time.Millisecond)
}

// TestPropertyInvariants checks invariants of every aggregate over random
// data, intervals and configurations.
func TestPropertyInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := genSamples(t, false)
		iv := genInterval(t)
		cfg := genConfig(t, raw)
		res := map[Kind]Result{}
		for _, k := range Kinds() {
			r := Compute(k, cfg, iv, raw)
			res[k] = r
			if r.Raw < -1 || r.Raw >= len(raw) {
				t.Fatalf("%v: raw index %d out of range", k, r.Raw)
			}
			if r.Raw >= 0 && qualityOf(r.Status) != bad && (r.Value != raw[r.Raw].Value || !r.At.Equal(raw[r.Raw].At) && k != Minimum && k != Maximum) {
				t.Fatalf("%v: result %+v does not return raw value %d %+v", k, r, r.Raw, raw[r.Raw])
			}
			if qualityOf(r.Status) != bad && (math.IsNaN(r.Value) || math.IsInf(r.Value, 0)) {
				t.Fatalf("%v: value %v", k, r.Value)
			}
		}
		usable := 0
		for _, s := range raw {
			if inside(iv, s.At) && cfg.usable(s.Status) {
				usable++
			}
		}
		if c := res[Count]; qualityOf(c.Status) != bad && c.Value != float64(usable) {
			t.Fatalf("Count %v, brute force %d", c.Value, usable)
		}
		w := widthMs(iv)
		dg, db := res[DurationGood], res[DurationBad]
		if qualityOf(dg.Status) != bad {
			if dg.Value < 0 || db.Value < 0 || dg.Value+db.Value > w+1e-6 {
				t.Fatalf("DurationGood %v + DurationBad %v outside [0, %v]", dg.Value, db.Value, w)
			}
			if cfg.TreatUncertainAsBad && math.Abs(dg.Value+db.Value-w) > 1e-6 {
				t.Fatalf("DurationGood %v + DurationBad %v != %v with uncertain as bad", dg.Value, db.Value, w)
			}
			for _, k := range []Kind{PercentGood, PercentBad} {
				if p := res[k].Value; p < 0 || p > 100+1e-9 {
					t.Fatalf("%v = %v", k, p)
				}
			}
		}
	})
}

// TestPropertyGoodData checks Minimum ≤ Average ≤ Maximum, Range, the
// ActualTime variants and the span of TimeAverage over Good data.
func TestPropertyGoodData(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := genSamples(t, true)
		iv := genInterval(t)
		cfg := genConfig(t, raw)
		min, avg, max := Compute(Minimum, cfg, iv, raw), Compute(Average, cfg, iv, raw), Compute(Maximum, cfg, iv, raw)
		if qualityOf(avg.Status) == bad {
			return
		}
		if qualityOf(min.Status) != good || qualityOf(max.Status) != good {
			t.Fatalf("over good data: min %v max %v", min.Status, max.Status)
		}
		if !(min.Value <= avg.Value+1e-9 && avg.Value <= max.Value+1e-9) {
			t.Fatalf("min %v avg %v max %v", min.Value, avg.Value, max.Value)
		}
		if r := Compute(Range, cfg, iv, raw); r.Value != max.Value-min.Value {
			t.Fatalf("range %v, max-min %v", r.Value, max.Value-min.Value)
		}
		if a := Compute(MinimumActualTime, cfg, iv, raw); a.Value != min.Value || !inside(iv, a.At) {
			t.Fatalf("MinimumActualTime %+v, Minimum %v", a, min.Value)
		}
		if cfg.UseSlopedExtrapolation {
			return
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range raw {
			lo, hi = math.Min(lo, s.Value), math.Max(hi, s.Value)
		}
		if ta := Compute(TimeAverage, cfg, iv, raw); qualityOf(ta.Status) != bad && (ta.Value < lo-1e-9 || ta.Value > hi+1e-9) {
			t.Fatalf("TimeAverage %v outside the data's [%v, %v]", ta.Value, lo, hi)
		}
	})
}

// TestPropertyInterpolativeBruteForce compares Interpolative over Good
// data with a direct reading of Part 13 §3.1.8.
func TestPropertyInterpolativeBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := genSamples(t, true)
		iv := genInterval(t)
		cfg := genConfig(t, raw)
		cfg.DataStart, cfg.DataEnd = time.Time{}, time.Time{}
		cfg.UseSlopedExtrapolation = false
		got := Compute(Interpolative, cfg, iv, raw)
		var before, after *Sample
		for i := range raw {
			s := &raw[i]
			switch {
			case s.At.Equal(iv.Start):
				if got.Value != s.Value || got.Status != sGood|rawValue || got.Raw != i {
					t.Fatalf("raw hit: got %+v, want %+v", got, *s)
				}
				return
			case s.At.Before(iv.Start):
				before = s
			case after == nil:
				after = s
			}
		}
		switch {
		case before == nil:
			if got.Status != noData {
				t.Fatalf("no value before: got %+v", got)
			}
		case after == nil:
			if got.Value != before.Value || got.Status != sUncSub|interp {
				t.Fatalf("extrapolated: got %+v, want %v", got, before.Value)
			}
		default:
			want := before.Value
			if !cfg.Stepped {
				want += (after.Value - before.Value) * iv.Start.Sub(before.At).Seconds() / after.At.Sub(before.At).Seconds()
			}
			if math.Abs(got.Value-want) > 1e-9 || got.Status != sGood|interp {
				t.Fatalf("interpolated: got %+v, want %v", got, want)
			}
		}
	})
}

// TestPropertyWindow checks that Compute over Window's part of the samples
// equals Compute over all of them.
func TestPropertyWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := genSamples(t, false)
		iv := genInterval(t)
		cfg := genConfig(t, raw)
		from, to := Window(cfg, iv, raw)
		for _, k := range Kinds() {
			all, part := Compute(k, cfg, iv, raw), Compute(k, cfg, iv, raw[from:to])
			if part.Raw >= 0 {
				part.Raw += from
			}
			if !all.At.Equal(part.At) || all.Status != part.Status || all.Raw != part.Raw ||
				qualityOf(all.Status) != bad && math.Abs(all.Value-part.Value) > 1e-9 {
				t.Fatalf("%v over window [%d:%d]: %+v, over all: %+v", k, from, to, part, all)
			}
		}
	})
}
