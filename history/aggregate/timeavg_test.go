package aggregate

import (
	"testing"
)

func TestTimeAverage(t *testing.T) {
	line := []Sample{goodAt(0, 0), goodAt(10, 10), goodAt(20, 20)}
	stepped := defaults
	stepped.Stepped = true
	slopedExtra := defaults
	slopedExtra.UseSlopedExtrapolation = true
	ended := defaults
	ended.DataEnd = at(10)
	started := defaults
	started.DataStart = at(100)
	noStart := []Sample{goodAt(4, 4), goodAt(10, 10), goodAt(20, 20)}
	backward := Interval{Start: at(15), End: at(5)}
	runRaw(t, []rawCase{
		{"raw values on both bounds", TimeAverage, defaults, iv10, line, calcAt(iv10, 5, sGood|calc)},
		{"interpolated bounds", TimeAverage, defaults, fwd(5, 15), line, calcAt(fwd(5, 15), 10, sGood|calc)},
		{"stepped variable: stepped bounds, sloped line", TimeAverage, stepped, fwd(5, 15), line, calcAt(fwd(5, 15), 7.5, sGood|calc)},
		{"bad value skipped", TimeAverage, defaults, iv10, []Sample{goodAt(0, 0), badAt(5), goodAt(10, 10)}, calcAt(iv10, 5, sUncSub|calc)},
		{"uncertain value used", TimeAverage, defaults, iv10, []Sample{goodAt(0, 0), uncAt(5, 15), goodAt(10, 10)}, calcAt(iv10, 10, sUncSub|calc)},
		{"uncertain value treated as bad", TimeAverage, asBad, iv10, []Sample{goodAt(0, 0), uncAt(5, 15), goodAt(10, 10)}, calcAt(iv10, 5, sUncSub|calc)},
		{"no start bound, 100/100", TimeAverage, defaults, iv10, noStart, calcAt(iv10, 7, sUncSub|calc|partial)},
		{"no start bound, 60/40: 60 % with data is good", TimeAverage, cfgWith(false, 60, 40), iv10, noStart, calcAt(iv10, 7, sGood|calc|partial)},
		{"no start bound, 70/40: 40 % without data is bad", TimeAverage, cfgWith(false, 70, 40), iv10, noStart, want{status: noData}},
		{"no end bound, stepped extrapolation", TimeAverage, defaults, fwd(20, 30), line, calcAt(fwd(20, 30), 20, sUncSub|calc)},
		{"no end bound, sloped extrapolation", TimeAverage, slopedExtra, fwd(20, 30), line, calcAt(fwd(20, 30), 25, sUncSub|calc)},
		{"end bound extrapolated inside", TimeAverage, defaults, fwd(15, 25), line, calcAt(fwd(15, 25), 18.75, sUncSub|calc)},
		{"after end of data: extrapolated", TimeAverage, ended, fwd(20, 30), line[:2], calcAt(fwd(20, 30), 10, sUncSub|calc|partial)},
		{"before start of data", TimeAverage, started, iv10, line, want{status: noData}},
		{"no data at all", TimeAverage, defaults, iv10, []Sample{badAt(1), badAt(12)}, want{status: noData}},
		{"partial last interval", TimeAverage, defaults, Interval{Start: at(0), End: at(5), Partial: true}, line, calcAt(fwd(0, 5), 2.5, sGood|calc|partial)},
		{"backward interval", TimeAverage, defaults, backward, line, calcAt(backward, 10, sGood|calc)},
	})
}

// TestTimeAverageAnnex checks intervals of Part 13 Annex A.1.2 (Historian
// 2, ProcessingInterval 5 s) computed by hand; 12:00:45 is the value the
// OPC Foundation confirmed for A.4.2.
func TestTimeAverageAnnex(t *testing.T) {
	raw, cfg := historian2()
	for _, c := range []rawCase{
		{"12:00:00 no start bound", TimeAverage, cfg, fwd(0, 5), raw, calcAt(fwd(0, 5), 10.652, sUncSub|calc|partial)},
		{"12:00:05", TimeAverage, cfg, fwd(5, 10), raw, calcAt(fwd(5, 10), 12.391, sGood|calc)},
		{"12:00:25", TimeAverage, cfg, fwd(25, 30), raw, calcAt(fwd(25, 30), 23.682, sGood|calc)},
		{"12:00:40 across a bad value", TimeAverage, cfg, fwd(40, 45), raw, calcAt(fwd(40, 45), 33.889, sUncSub|calc)},
		{"12:00:45", TimeAverage, cfg, fwd(45, 50), raw, calcAt(fwd(45, 50), 40, sUncSub|calc)},
		{"12:01:10 end bound across an uncertain value", TimeAverage, cfg, fwd(70, 75), raw, calcAt(fwd(70, 75), 60.618, sUncSub|calc)},
		{"12:01:35 after the end of data", TimeAverage, cfg, fwd(95, 100), raw, calcAt(fwd(95, 100), 90, sUncSub|calc|partial)},
	} {
		check(t, c.name, Compute(c.kind, c.cfg, c.iv, c.raw), c.want, 0.0005)
	}
}
