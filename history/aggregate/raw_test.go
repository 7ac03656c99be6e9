package aggregate

import (
	"testing"
)

// rawCase is one hand-computed expectation of an aggregate that uses only
// the raw values inside the interval.
type rawCase struct {
	name string
	kind Kind
	cfg  Config
	iv   Interval
	raw  []Sample
	want want
}

func runRaw(t *testing.T, cases []rawCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.kind.String()+"/"+c.name, func(t *testing.T) {
			check(t, c.name, Compute(c.kind, c.cfg, c.iv, c.raw), c.want, 1e-9)
		})
	}
}

// cfgWith is a sloped configuration with the given thresholds.
func cfgWith(uncertainAsBad bool, percentGood, percentBad uint8) Config {
	return Config{TreatUncertainAsBad: uncertainAsBad, PercentDataGood: percentGood, PercentDataBad: percentBad}
}

var (
	iv10     = fwd(0, 10)
	back10   = Interval{Start: at(10), End: at(0)}
	allGood  = []Sample{goodAt(0, 4), goodAt(2, 8), goodAt(5, 2), goodAt(7, 6), goodAt(10, 100)}
	withBad  = []Sample{goodAt(0, 4), goodAt(2, 8), badAt(5), goodAt(7, 6)}
	uncLow   = []Sample{goodAt(0, 4), goodAt(2, 8), uncAt(5, 2), goodAt(7, 6)}
	uncHigh  = []Sample{goodAt(0, 4), goodAt(2, 8), uncAt(5, 9), goodAt(7, 6)}
	fiveOne  = []Sample{goodAt(0, 1), goodAt(1, 2), goodAt(2, 3), badAt(3), goodAt(4, 4)} // 80 % usable
	fiveTwo  = []Sample{goodAt(0, 1), badAt(1), goodAt(2, 3), badAt(3), goodAt(4, 5)}     // 60 % usable
	minStart = []Sample{goodAt(0, 1), goodAt(2, 8), goodAt(5, 2)}                         // minimum on the start
	twoMins  = []Sample{goodAt(0, 4), goodAt(2, 2), goodAt(5, 2), goodAt(7, 6)}           // equal minima
	twoMaxs  = []Sample{goodAt(0, 4), goodAt(2, 9), goodAt(5, 1), goodAt(7, 9)}           // equal maxima
	defaults = cfgWith(false, 100, 100)
	asBad    = cfgWith(true, 100, 100)
)

func TestAverage(t *testing.T) {
	runRaw(t, []rawCase{
		{"all good", Average, defaults, iv10, allGood, calcAt(iv10, 5, sGood|calc)},
		{"a bad value is left out, 100/100", Average, defaults, iv10, withBad, calcAt(iv10, 6, sUncSub|calc)},
		{"uncertain used", Average, defaults, iv10, uncLow, calcAt(iv10, 5, sUncSub|calc)},
		{"uncertain treated as bad", Average, asBad, iv10, uncLow, calcAt(iv10, 6, sUncSub|calc)},
		{"80/20 with 80 % usable is good", Average, cfgWith(false, 80, 20), iv10, fiveOne, calcAt(iv10, 2.5, sGood|calc)},
		{"80/20 with 60 % usable is bad", Average, cfgWith(false, 80, 20), iv10, fiveTwo, want{status: noData}},
		{"90/50 with 80 % usable is uncertain", Average, cfgWith(false, 90, 50), iv10, fiveOne, calcAt(iv10, 2.5, sUncSub|calc)},
		{"only bad values", Average, defaults, iv10, []Sample{badAt(1), badAt(2)}, want{status: noData}},
		{"empty interval", Average, defaults, fwd(11, 20), allGood, want{status: noData}},
		{"partial last interval has no Partial bit (§5.4.3.5)", Average, defaults, Interval{Start: at(0), End: at(10), Partial: true}, allGood, calcAt(iv10, 5, sGood|calc)},
		{"backward interval holds its start, not its end", Average, defaults, back10, allGood, calcAt(back10, 29, sGood|calc)},
		{"before start of data", Average, Config{PercentDataGood: 100, PercentDataBad: 100, DataStart: at(10)}, iv10, allGood, want{status: noData}},
	})
}

func TestCount(t *testing.T) {
	dataEnd := defaults
	dataEnd.DataEnd = at(5)
	afterEnd := defaults
	afterEnd.DataEnd = at(-1)
	runRaw(t, []rawCase{
		{"all good", Count, defaults, iv10, allGood, calcAt(iv10, 4, sGood|calc)},
		{"a bad value is not counted", Count, defaults, iv10, withBad, calcAt(iv10, 3, sUncSub|calc)},
		{"uncertain counted when treated as good", Count, defaults, iv10, uncLow, calcAt(iv10, 4, sUncSub|calc)},
		{"uncertain not counted when treated as bad", Count, asBad, iv10, uncLow, calcAt(iv10, 3, sUncSub|calc)},
		{"80/20 with 80 % usable is good", Count, cfgWith(false, 80, 20), iv10, fiveOne, calcAt(iv10, 4, sGood|calc)},
		{"80/20 with 60 % usable is bad", Count, cfgWith(false, 80, 20), iv10, fiveTwo, want{status: noData}},
		{"empty interval counts 0", Count, defaults, fwd(11, 20), allGood, calcAt(fwd(11, 20), 0, sGood|calc)},
		{"only bad values", Count, defaults, iv10, []Sample{badAt(1)}, want{status: noData}},
		{"partial last interval", Count, defaults, Interval{Start: at(0), End: at(10), Partial: true}, allGood, calcAt(iv10, 4, sGood|calc|partial)},
		{"interval straddles the end of data", Count, dataEnd, iv10, allGood, calcAt(iv10, 4, sGood|calc|partial)},
		{"after end of data", Count, afterEnd, iv10, allGood, want{status: noData}},
		{"backward interval", Count, defaults, back10, allGood, calcAt(back10, 4, sGood|calc)},
	})
}

func TestMinMax(t *testing.T) {
	runRaw(t, []rawCase{
		{"all good", Minimum, defaults, iv10, allGood, calcAt(iv10, 2, sGood|calc)},
		{"all good", Maximum, defaults, iv10, allGood, calcAt(iv10, 8, sGood|calc)},
		{"all good", MinimumActualTime, defaults, iv10, allGood, want{at(5), 2, sGood | rawValue, 2}},
		{"all good", MaximumActualTime, defaults, iv10, allGood, want{at(2), 8, sGood | rawValue, 1}},
		{"bad value inside", Minimum, defaults, iv10, withBad, calcAt(iv10, 4, sUncSub|calc)},
		{"bad value inside", MaximumActualTime, defaults, iv10, withBad, want{at(2), 8, sUncSub | calc, 1}},
		{"uncertain below the good minimum", Minimum, defaults, iv10, uncLow, calcAt(iv10, 4, sUncSub|calc)},
		{"uncertain above the good minimum", Minimum, defaults, iv10, uncHigh, want{at(0), 4, sGood | rawValue, 0}},
		{"uncertain above the good minimum, treated as bad", Minimum, asBad, iv10, uncHigh, calcAt(iv10, 4, sUncSub|calc)},
		{"uncertain above the good maximum", MaximumActualTime, defaults, iv10, uncHigh, want{at(2), 8, sUncSub | calc, 1}},
		{"uncertain below the good maximum", MaximumActualTime, defaults, iv10, uncLow, want{at(2), 8, sGood | rawValue, 1}},
		{"minimum on the interval start is raw", Minimum, defaults, iv10, minStart, want{at(0), 1, sGood | rawValue, 0}},
		{"minimum on the interval start", MinimumActualTime, defaults, iv10, minStart, want{at(0), 1, sGood | rawValue, 0}},
		{"equal minima", Minimum, defaults, iv10, twoMins, calcAt(iv10, 2, sGood|calc|multi)},
		{"equal minima: the oldest", MinimumActualTime, defaults, iv10, twoMins, want{at(2), 2, sGood | rawValue | multi, 1}},
		{"equal maxima: the oldest", MaximumActualTime, defaults, iv10, twoMaxs, want{at(2), 9, sGood | rawValue | multi, 1}},
		{"only uncertain values", Maximum, defaults, iv10, []Sample{uncAt(1, 5)}, want{status: noData}},
		{"empty interval", MinimumActualTime, defaults, fwd(11, 20), allGood, want{status: noData}},
		{"partial last interval", MaximumActualTime, defaults, Interval{Start: at(0), End: at(10), Partial: true}, allGood, want{at(2), 8, sGood | rawValue | partial, 1}},
		{"backward: maximum on the reported start", Maximum, defaults, back10, allGood, want{at(10), 100, sGood | rawValue, 4}},
		{"backward: the oldest minimum", MinimumActualTime, defaults, Interval{Start: at(7), End: at(-1)}, twoMins, want{at(2), 2, sGood | rawValue | multi, 1}},
	})
}

func TestRange(t *testing.T) {
	runRaw(t, []rawCase{
		{"all good", Range, defaults, iv10, allGood, calcAt(iv10, 6, sGood|calc)},
		{"one value", Range, defaults, iv10, []Sample{goodAt(3, 7)}, calcAt(iv10, 0, sGood|calc)},
		{"bad value inside", Range, defaults, iv10, withBad, calcAt(iv10, 4, sUncSub|calc)},
		{"uncertain beyond an extreme", Range, defaults, iv10, uncHigh, calcAt(iv10, 4, sUncSub|calc)},
		{"uncertain inside the extremes", Range, defaults, iv10, []Sample{goodAt(0, 1), uncAt(1, 2), goodAt(2, 3)}, calcAt(iv10, 2, sGood|calc)},
		{"uncertain inside the extremes, treated as bad", Range, asBad, iv10, []Sample{goodAt(0, 1), uncAt(1, 2), goodAt(2, 3)}, calcAt(iv10, 2, sUncSub|calc)},
		{"empty interval", Range, defaults, fwd(11, 20), allGood, want{status: noData}},
		{"partial", Range, defaults, Interval{Start: at(0), End: at(10), Partial: true}, allGood, calcAt(iv10, 6, sGood|calc|partial)},
	})
}

func TestStartEnd(t *testing.T) {
	runRaw(t, []rawCase{
		{"all good", Start, defaults, iv10, allGood, want{at(0), 4, sGood | rawValue, 0}},
		{"all good", End, defaults, iv10, allGood, want{at(7), 6, sGood | rawValue, 3}},
		{"uncertain value returned as is", Start, asBad, iv10, []Sample{uncAt(1, 3), goodAt(2, 4)}, want{at(1), 3, sUnc | rawValue, 0}},
		{"bad value returned as is", End, defaults, iv10, withBad[:3], want{status: sBadRaw}},
		{"empty interval", Start, defaults, fwd(11, 20), allGood, want{status: noData}},
		{"partial", End, defaults, Interval{Start: at(0), End: at(10), Partial: true}, allGood, want{at(7), 6, sGood | rawValue | partial, 3}},
		{"backward: the oldest value inside", Start, defaults, back10, allGood, want{at(2), 8, sGood | rawValue, 1}},
		{"backward: the newest value inside", End, defaults, back10, allGood, want{at(10), 100, sGood | rawValue, 4}},
	})
}

func TestDelta(t *testing.T) {
	runRaw(t, []rawCase{
		{"all good", Delta, defaults, iv10, allGood, calcAt(iv10, 2, sGood|calc)},
		{"bad value between the ends", Delta, defaults, iv10, withBad, calcAt(iv10, 2, sGood|calc)},
		{"bad value after the last good", Delta, defaults, iv10, []Sample{goodAt(0, 4), goodAt(7, 1), badAt(9)}, calcAt(iv10, -3, sUncSub|calc)},
		{"uncertain value before the first good", Delta, defaults, iv10, []Sample{uncAt(0, 1), goodAt(2, 8), goodAt(7, 6)}, calcAt(iv10, -2, sUncSub|calc)},
		{"uncertain value before the first good, treated as bad", Delta, asBad, iv10, []Sample{uncAt(0, 1), goodAt(2, 8), goodAt(7, 6)}, calcAt(iv10, -2, sUncSub|calc)},
		{"one good value", Delta, defaults, iv10, []Sample{goodAt(3, 7)}, calcAt(iv10, 0, sGood|calc)},
		{"no good value", Delta, defaults, iv10, []Sample{badAt(3), uncAt(4, 1)}, want{status: noData}},
		{"partial", Delta, defaults, Interval{Start: at(0), End: at(10), Partial: true}, allGood, calcAt(iv10, 2, sGood|calc|partial)},
		{"backward: newest minus oldest", Delta, defaults, back10, allGood, calcAt(back10, 92, sGood|calc)},
	})
}
