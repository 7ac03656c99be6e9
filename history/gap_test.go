package history

import (
	"math"
	"slices"
	"testing"
)

func TestNewGap(t *testing.T) {
	for _, c := range []struct {
		name      string
		start     int64
		last      int64
		has       bool
		retention int64
		want      int64 // From
	}{
		{"from the last sample stored", 100 * sec, 70 * sec, true, 3600 * sec, 70 * sec},
		{"nothing stored: the whole retention", 100 * sec, 0, false, 30 * sec, 70*sec - 1},
		{"a last sample older than the retention", 100 * sec, 10 * sec, true, 30 * sec, 70*sec - 1},
		{"a retention reaching before every time", -5 * sec, 0, false, math.MaxInt64, math.MinInt64},
		{"a retention to the earliest time", 100 * sec, 0, false, math.MaxInt64, math.MinInt64 + 100*sec},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewGap("d/t", c.start, c.last, c.has, c.retention)
			if g.From != c.want || g.Start != c.start || g.End != EndUnknown || g.Tag != "d/t" {
				t.Fatalf("%+v, want From %d", g, c.want)
			}
		})
	}
}

func TestGapWindow(t *testing.T) {
	const settle = 2 * sec
	for _, c := range []struct {
		name          string
		g             Gap
		now           int64
		after, before int64
		ok            bool
	}{
		{"end unknown: up to the start", Gap{Start: 100 * sec, From: 50 * sec, End: EndUnknown}, 200 * sec, 50 * sec, 100 * sec, true},
		{"end known: up to the end", Gap{Start: 100 * sec, From: 50 * sec, End: 101 * sec}, 200 * sec, 50 * sec, 101 * sec, true},
		{"not settled yet", Gap{Start: 100 * sec, From: 50 * sec, End: 101 * sec}, 102 * sec, 0, 0, false},
		{"settled to the tick", Gap{Start: 100 * sec, From: 50 * sec, End: 101 * sec}, 103 * sec, 50 * sec, 101 * sec, true},
		{"part before the start done, end unknown", Gap{Start: 100 * sec, From: 100*sec - 1, End: EndUnknown}, 200 * sec, 100*sec - 1, 100 * sec, false},
		{"filled", Gap{Start: 100 * sec, From: 101*sec - 1, End: 101 * sec}, 200 * sec, 101*sec - 1, 101 * sec, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			after, before, ok := c.g.Window(c.now, settle)
			if ok != c.ok || (ok && (after != c.after || before != c.before)) {
				t.Fatalf("(%d, %d) %v, want (%d, %d) %v", after, before, ok, c.after, c.before, c.ok)
			}
		})
	}
}

func TestGapAdvance(t *testing.T) {
	g := Gap{Tag: "d/t", Start: 100, From: 10, End: 120}
	for _, c := range []struct {
		name          string
		g             Gap
		after, before int64
		xs            []Sample
		more          bool
		from          int64
		filled        bool
	}{
		{"a slice with more after it", g, 10, 120, []Sample{{At: 20}, {At: 30}}, true, 30, false},
		{"the last slice", g, 10, 120, []Sample{{At: 20}}, false, 119, true},
		{"nothing in the window", g, 10, 120, nil, false, 119, true},
		{"end unknown: done up to the start", Gap{Start: 100, From: 10, End: EndUnknown}, 10, 100, []Sample{{At: 50}}, false, 99, false},
		{"never backwards", Gap{Start: 100, From: 60, End: 120}, 10, 120, []Sample{{At: 20}}, true, 60, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.g.Advance(c.after, c.before, c.xs, c.more)
			if got.From != c.from || got.Filled() != c.filled || got.Start != c.g.Start || got.End != c.g.End {
				t.Fatalf("%+v (filled %v), want From %d filled %v", got, got.Filled(), c.from, c.filled)
			}
		})
	}
}

func TestLag(t *testing.T) {
	for _, c := range []struct {
		name string
		gs   []Gap
		want int64
	}{
		{"no gap", nil, 0},
		{"the longest span left", []Gap{{From: 10, End: 40}, {From: 50, End: 60}}, 30},
		{"end unknown: up to now", []Gap{{From: 10, End: EndUnknown}, {From: 50, End: 60}}, 90},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Lag(c.gs, 100); got != c.want {
				t.Fatalf("%d, want %d", got, c.want)
			}
		})
	}
}

func TestCheckSlice(t *testing.T) {
	for _, c := range []struct {
		name string
		xs   []Sample
		more bool
		ok   bool
	}{
		{"in the window, in order", []Sample{{At: 11}, {At: 12}, {At: 19}}, false, true},
		{"empty and done", nil, false, true},
		{"empty yet more", nil, true, false},
		{"at the window's start", []Sample{{At: 10}}, false, false},
		{"at the window's end", []Sample{{At: 20}}, false, false},
		{"out of order", []Sample{{At: 12}, {At: 11}}, false, false},
		{"one time twice", []Sample{{At: 12}, {At: 12}}, false, false},
		{"over the limit", []Sample{{At: 11}, {At: 12}, {At: 13}, {At: 14}}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := CheckSlice(10, 20, 3, c.xs, c.more); got != c.ok {
				t.Fatalf("%v, want %v", got, c.ok)
			}
		})
	}
}

func TestTrimEdges(t *testing.T) {
	s := func(at int64, v float64, st uint32) Sample { return Sample{At: at, Value: v, Status: st} }
	xs := []Sample{s(11, 5, 0), s(12, 6, 0), s(13, 7, 0)}
	for _, tc := range []struct {
		name             string
		prev, next       Sample
		hasPrev, hasNext bool
		want             []Sample
	}{
		{"no neighbours", Sample{}, Sample{}, false, false, xs},
		{"the first repeats the last own sample", s(10, 5, 0), Sample{}, true, false, xs[1:]},
		{"same value, another status: kept", s(10, 5, 0x80000000), Sample{}, true, false, xs},
		{"the last repeats the first own sample after", Sample{}, s(14, 7, 0), false, true, xs[:2]},
		{"both edges", s(10, 5, 0), s(14, 7, 0), true, true, xs[1:2]},
		{"a different value on either side", s(10, 4, 0), s(14, 8, 0), true, true, xs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TrimEdges(slices.Clone(xs), tc.prev, tc.hasPrev, tc.next, tc.hasNext)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	if got := TrimEdges([]Sample{s(11, 5, 0)}, s(10, 5, 0), true, s(12, 5, 0), true); len(got) != 0 {
		t.Fatalf("one sample repeating both edges: got %v, want none", got)
	}
}
