package aggregate

import (
	"testing"
)

func TestDuration(t *testing.T) {
	mixed := []Sample{goodAt(0, 1), badAt(4), uncAt(6, 1), goodAt(8, 1)} // G 4 s, B 2 s, U 2 s, G 2 s
	badBefore := []Sample{badAt(-5), goodAt(3, 1)}
	badOnStart := []Sample{badAt(0), goodAt(5, 1)}
	ended := defaults
	ended.DataEnd = at(5)
	afterEnd := defaults
	afterEnd.DataEnd = at(-1)
	beforeStart := defaults
	beforeStart.DataStart = at(10)
	started := defaults
	started.DataStart = at(2)
	half := Interval{Start: at(0), End: at(5), Partial: true}
	backward := Interval{Start: at(10), End: at(0)}
	runRaw(t, []rawCase{
		{"all good", DurationGood, defaults, iv10, allGood, calcAt(iv10, 10000, sGood|calc)},
		{"all good", DurationBad, defaults, iv10, allGood, calcAt(iv10, 0, sGood|calc)},
		{"all good", PercentGood, defaults, iv10, allGood, calcAt(iv10, 100, sGood|calc)},
		{"mixed", DurationGood, defaults, iv10, mixed, calcAt(iv10, 6000, sGood|calc)},
		{"mixed, uncertain is neither", DurationBad, defaults, iv10, mixed, calcAt(iv10, 2000, sGood|calc)},
		{"mixed, uncertain treated as bad", DurationBad, asBad, iv10, mixed, calcAt(iv10, 4000, sGood|calc)},
		{"mixed, uncertain never good", DurationGood, asBad, iv10, mixed, calcAt(iv10, 6000, sGood|calc)},
		{"mixed", PercentGood, defaults, iv10, mixed, calcAt(iv10, 60, sGood|calc)},
		{"mixed", PercentBad, asBad, iv10, mixed, calcAt(iv10, 40, sGood|calc)},
		{"first region from the value before the start", DurationBad, defaults, iv10, badBefore, calcAt(iv10, 3000, sGood|calc)},
		{"first region from the value before the start", DurationGood, defaults, iv10, badBefore, calcAt(iv10, 7000, sGood|calc)},
		{"no value before the start: first region bad", DurationBad, defaults, iv10, badBefore[1:], calcAt(iv10, 3000, sGood|calc)},
		{"raw value exactly on the start", DurationBad, defaults, iv10, badOnStart, calcAt(iv10, 5000, sGood|calc)},
		{"empty interval holds the previous status", DurationGood, defaults, fwd(20, 30), allGood, calcAt(fwd(20, 30), 10000, sGood|calc)},
		{"straddles the end of data", DurationGood, ended, iv10, allGood, calcAt(iv10, 5000, sGood|calc|partial)},
		{"straddles the end of data", PercentBad, ended, iv10, allGood, calcAt(iv10, 50, sGood|calc|partial)},
		{"straddles the start of data", DurationBad, started, iv10, []Sample{goodAt(2, 1)}, calcAt(iv10, 2000, sGood|calc|partial)},
		{"after end of data", DurationGood, afterEnd, iv10, allGood, want{status: noData}},
		{"before start of data", PercentGood, beforeStart, iv10, allGood, want{status: noData}},
		{"partial last interval", PercentGood, defaults, half, badOnStart, calcAt(half, 0, sGood|calc|partial)},
		{"partial last interval", DurationBad, defaults, half, badOnStart, calcAt(half, 5000, sGood|calc|partial)},
		{"backward interval", DurationGood, defaults, backward, badOnStart, calcAt(backward, 5000, sGood|calc)},
	})
}

// TestActualTimeAnnex replays MaximumActualTime of Part 13 Annex A.11.2
// (Historians 1 and 2, ProcessingInterval 16 s from 12:00:00 to
// 12:01:40): timestamps, values and severities are the specification's;
// the data location bits follow the §5.4.3.13 table (Raw when Good,
// Calculated when Uncertain_DataSubNormal), which the annex does not
// print.
func TestActualTimeAnnex(t *testing.T) {
	ivs, err := Intervals(at(0), at(100), 16e9, 0)
	if err != nil {
		t.Fatal(err)
	}
	r1, c1 := historian1()
	r2, c2 := historian2()
	h1 := []want{
		{at(10), 10, sGood | rawValue | partial, 0},
		{at(30), 30, sGood | rawValue, 2},
		{status: noData},
		{at(60), 60, sGood | rawValue, 5},
		{status: noData},
		{at(90), 90, sGood | rawValue | partial, 8},
		{status: noData},
	}
	h2 := []want{
		{at(2), 10, sGood | rawValue | partial, 0},
		{at(28), 25, sGood | rawValue, 2},
		{at(39), 30, sUncSub | calc, 3},
		{at(52), 50, sGood | rawValue, 6},
		{at(72), 60, sUncSub | calc, 7},
		{at(90), 90, sGood | rawValue | partial, 11},
		{status: noData},
	}
	for i, iv := range ivs {
		check(t, "Historian1 "+iv.Start.Sub(t0).String(), Compute(MaximumActualTime, c1, iv, r1), h1[i], 0)
		check(t, "Historian2 "+iv.Start.Sub(t0).String(), Compute(MaximumActualTime, c2, iv, r2), h2[i], 0)
	}
}
