package aggregate

import (
	"math"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

// t0 is 12:00:00 of the Part 13 Annex A examples.
var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// at is t0 plus sec seconds.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func goodAt(sec, v float64) Sample { return Sample{At: at(sec), Value: v, Status: ua.StatusGood} }
func uncAt(sec, v float64) Sample  { return Sample{At: at(sec), Value: v, Status: ua.StatusUncertain} }
func badAt(sec float64) Sample     { return Sample{At: at(sec), Value: -999, Status: ua.StatusBad} }

// fwd is the forward interval [from, to) in seconds after t0.
func fwd(from, to float64) Interval { return Interval{Start: at(from), End: at(to)} }

// Status shorthands for expectations.
var (
	sGood    = ua.StatusGood | InfoTypeDataValue
	sUncSub  = ua.StatusUncertainDataSubNormal | InfoTypeDataValue
	sUnc     = ua.StatusUncertain | InfoTypeDataValue
	sBadRaw  = ua.StatusBad | InfoTypeDataValue
	noData   = ua.StatusBadNoData
	calc     = HistorianCalculated
	interp   = HistorianInterpolated
	partial  = HistorianPartial
	multi    = HistorianMultiValue
	rawValue = HistorianRaw
)

// want is an expected Result; Raw -1 for calculated values. A Bad
// expectation checks only the status (the value is meaningless).
type want struct {
	at     time.Time
	value  float64
	status ua.StatusCode
	raw    int
}

// check compares got with w; tol is the absolute tolerance on the value.
func check(t *testing.T, name string, got Result, w want, tol float64) {
	t.Helper()
	if got.Status != w.status {
		t.Errorf("%s: status %#08x (%v), want %#08x (%v)", name, uint32(got.Status), got.Status, uint32(w.status), w.status)
	}
	if qualityOf(w.status) == bad {
		return
	}
	if !got.At.Equal(w.at) {
		t.Errorf("%s: at %s, want %s", name, got.At.Sub(t0), w.at.Sub(t0))
	}
	if math.Abs(got.Value-w.value) > tol || math.IsNaN(got.Value) {
		t.Errorf("%s: value %.6f, want %.6f", name, got.Value, w.value)
	}
	if got.Raw != w.raw {
		t.Errorf("%s: raw index %d, want %d", name, got.Raw, w.raw)
	}
}

// calcAt is a calculated expectation at the start of iv.
func calcAt(iv Interval, v float64, st ua.StatusCode) want {
	return want{at: iv.Start, value: v, status: st, raw: -1}
}

// historian1 is Part 13 Annex A.1.1 without its "point created" marker:
// sloped, TreatUncertainAsBad false, 100/100, stepped extrapolation.
func historian1() ([]Sample, Config) {
	raw := []Sample{
		goodAt(10, 10), goodAt(20, 20), goodAt(30, 30), badAt(40), goodAt(50, 50),
		goodAt(60, 60), uncAt(70, 70), goodAt(80, 80), goodAt(90, 90),
	}
	return raw, Config{PercentDataBad: 100, PercentDataGood: 100, DataStart: at(10), DataEnd: at(90)}
}

// historian2 is Part 13 Annex A.1.2 without its "point created" marker:
// sloped, TreatUncertainAsBad true, 100/100, stepped extrapolation.
func historian2() ([]Sample, Config) {
	raw := []Sample{
		goodAt(2, 10), goodAt(25, 20), goodAt(28, 25), goodAt(39, 30), badAt(42), goodAt(48, 40),
		goodAt(52, 50), goodAt(72, 60), uncAt(77, 70), goodAt(83, 70), goodAt(86, 80), goodAt(90, 90),
	}
	return raw, Config{TreatUncertainAsBad: true, PercentDataBad: 100, PercentDataGood: 100, DataStart: at(2), DataEnd: at(90)}
}
