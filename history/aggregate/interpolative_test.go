package aggregate

import (
	"testing"
)

// TestInterpolativeAnnex replays Part 13 Annex A.2.2 (Historian 1 and 2,
// ProcessingInterval 5 s from 12:00:00): the expectations are the
// specification's, values to its three decimals.
func TestInterpolativeAnnex(t *testing.T) {
	type row struct {
		sec    float64
		value  float64
		status string // B: Bad_NoData, R: raw Good, RU: raw Uncertain, I: Good interpolated, IU: Uncertain_DataSubNormal interpolated
		raw    int
	}
	run := func(t *testing.T, raw []Sample, cfg Config, rows []row) {
		for _, r := range rows {
			iv := fwd(r.sec, r.sec+5)
			w := want{at: iv.Start, value: r.value, raw: -1}
			switch r.status {
			case "B":
				w.status = noData
			case "R":
				w.status, w.raw = sGood|rawValue, r.raw
			case "RU":
				w.status, w.raw = sUnc|rawValue, r.raw
			case "I":
				w.status = sGood | interp
			case "IU":
				w.status = sUncSub | interp
			}
			check(t, iv.Start.Sub(t0).String(), Compute(Interpolative, cfg, iv, raw), w, 0.0005)
		}
	}
	t.Run("Historian1", func(t *testing.T) {
		raw, cfg := historian1()
		run(t, raw, cfg, []row{
			{0, 0, "B", 0}, {5, 0, "B", 0}, {10, 10, "R", 0}, {15, 15, "I", 0}, {20, 20, "R", 1},
			{25, 25, "I", 0}, {30, 30, "R", 2}, {35, 35, "IU", 0}, {40, 40, "IU", 0}, {45, 45, "IU", 0},
			{50, 50, "R", 4}, {55, 55, "I", 0}, {60, 60, "R", 5}, {65, 65, "IU", 0}, {70, 70, "RU", 6},
			{75, 75, "IU", 0}, {80, 80, "R", 7}, {85, 85, "I", 0}, {90, 90, "R", 8}, {95, 90, "IU", 0},
		})
	})
	t.Run("Historian2", func(t *testing.T) {
		raw, cfg := historian2()
		run(t, raw, cfg, []row{
			{0, 0, "B", 0}, {5, 11.304, "I", 0}, {10, 13.478, "I", 0}, {15, 15.652, "I", 0},
			{20, 17.826, "I", 0}, {25, 20, "R", 1}, {30, 25.909, "I", 0}, {35, 28.182, "I", 0},
			{40, 31.111, "IU", 0}, {45, 36.667, "IU", 0}, {50, 45, "I", 0}, {55, 51.5, "I", 0},
			{60, 54, "I", 0}, {65, 56.5, "I", 0}, {70, 59, "I", 0}, {75, 62.727, "IU", 0},
			{80, 67.273, "IU", 0}, {85, 76.667, "I", 0}, {90, 90, "R", 11}, {95, 90, "IU", 0},
		})
	})
}

func TestInterpolative(t *testing.T) {
	sloped := Config{PercentDataBad: 100, PercentDataGood: 100}
	stepped := sloped
	stepped.Stepped = true
	slopedExtra := sloped
	slopedExtra.UseSlopedExtrapolation = true
	steppedSlopedExtra := slopedExtra
	steppedSlopedExtra.Stepped = true
	asBad := sloped
	asBad.TreatUncertainAsBad = true
	withStart := sloped
	withStart.DataStart = at(0)

	allGood := []Sample{goodAt(0, 10), goodAt(10, 20), goodAt(20, 40)}
	badInside := []Sample{goodAt(0, 10), badAt(5), goodAt(10, 20)}
	uncertainAfter := []Sample{goodAt(0, 10), uncAt(10, 20), goodAt(20, 40)}
	badOnStart := []Sample{goodAt(0, 10), badAt(4), goodAt(10, 20)}

	cases := []struct {
		name string
		cfg  Config
		raw  []Sample
		iv   Interval
		want want
	}{
		{"all good sloped", sloped, allGood, fwd(4, 5), calcAt(fwd(4, 5), 14, sGood|interp)},
		{"all good stepped", stepped, allGood, fwd(4, 5), calcAt(fwd(4, 5), 10, sGood|interp)},
		{"raw value exactly on start", sloped, allGood, fwd(10, 11), want{at(10), 20, sGood | rawValue, 1}},
		{"raw value exactly on start, stepped", stepped, allGood, fwd(10, 11), want{at(10), 20, sGood | rawValue, 1}},
		{"bad value skipped", sloped, badInside, fwd(7, 8), calcAt(fwd(7, 8), 17, sUncSub|interp)},
		{"bad value skipped, stepped after it", stepped, badInside, fwd(7, 8), calcAt(fwd(7, 8), 10, sUncSub|interp)},
		{"bad value after the start does not matter when stepped", stepped, badInside, fwd(3, 4), calcAt(fwd(3, 4), 10, sGood|interp)},
		{"bad value on the start is interpolated over", sloped, badOnStart, fwd(4, 5), calcAt(fwd(4, 5), 14, sUncSub|interp)},
		{"uncertain neighbour, treated as good", sloped, uncertainAfter, fwd(5, 6), calcAt(fwd(5, 6), 15, sUncSub|interp)},
		{"uncertain neighbour, treated as bad", asBad, uncertainAfter, fwd(5, 6), calcAt(fwd(5, 6), 17.5, sUncSub|interp)},
		{"uncertain raw hit, treated as good", sloped, uncertainAfter, fwd(10, 11), want{at(10), 20, sUnc | rawValue, 1}},
		{"uncertain raw hit, treated as bad", asBad, uncertainAfter, fwd(10, 11), calcAt(fwd(10, 11), 25, sUncSub|interp)},
		{"no start bound", sloped, allGood, fwd(-5, 0), want{status: noData}},
		{"only bad before the start", sloped, []Sample{badAt(0), goodAt(10, 1)}, fwd(5, 6), want{status: noData}},
		{"before start of data", withStart, []Sample{goodAt(-10, 1), goodAt(10, 2)}, fwd(-1, 0), want{status: noData}},
		{"no end bound, stepped extrapolation", sloped, allGood, fwd(30, 31), calcAt(fwd(30, 31), 40, sUncSub|interp)},
		{"no end bound, sloped extrapolation", slopedExtra, allGood, fwd(30, 31), calcAt(fwd(30, 31), 60, sUncSub|interp)},
		{"no end bound, stepped variable ignores sloped extrapolation", steppedSlopedExtra, allGood, fwd(30, 31), calcAt(fwd(30, 31), 40, sUncSub|interp)},
		{"sloped extrapolation needs two values", slopedExtra, []Sample{goodAt(0, 7)}, fwd(30, 31), calcAt(fwd(30, 31), 7, sUncSub|interp)},
		{"sloped extrapolation skips bad values", slopedExtra, []Sample{goodAt(0, 0), goodAt(10, 10), badAt(15)}, fwd(20, 21), calcAt(fwd(20, 21), 20, sUncSub|interp)},
		{"backward interval reports its start", sloped, allGood, Interval{Start: at(15), End: at(5)}, calcAt(Interval{Start: at(15)}, 30, sGood|interp)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			check(t, c.name, Compute(Interpolative, c.cfg, c.iv, c.raw), c.want, 1e-9)
		})
	}
}
