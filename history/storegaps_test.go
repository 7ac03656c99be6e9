package history

import (
	"math"
	"slices"
	"testing"
)

// samples is n samples one second apart from `from` seconds, value v(i).
func samples(from, n int, v func(i int) float64) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = Sample{At: int64(from+i) * sec, Value: v(i)}
	}
	return out
}

func records(tag string, xs []Sample) []Record {
	out := make([]Record, len(xs))
	for i, x := range xs {
		out[i] = Record{Tag: tag, Sample: x}
	}
	return out
}

// TestBackfillIntoSealedBlocks: a peer's samples for a gap that lies
// between sealed blocks are merged in, each identity once, and giving
// them again (a repeated slice, a second back-fill) changes nothing,
// before and after compaction and a reopen.
func TestBackfillIntoSealedBlocks(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 8)
	own := append(samples(0, 40, func(i int) float64 { return float64(i) }), samples(60, 40, func(i int) float64 { return float64(60 + i) })...)
	if err := s.Append(records("d/t", own)); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact("d/t", true); err != nil { // every own sample in a block
		t.Fatal(err)
	}
	// The peer's samples: the gap [40 s, 60 s) at a half-second offset,
	// and two it shares with this node (the same identity, the same value).
	peer := samples(40, 20, func(i int) float64 { return float64(40 + i) })
	for i := range peer {
		peer[i].At += sec / 2
	}
	peer = append(peer, own[39], own[40])
	slices.SortFunc(peer, func(a, b Sample) int { return int(a.At - b.At) })
	want := append(slices.Clone(own), peer...)
	slices.SortFunc(want, func(a, b Sample) int { return int(a.At - b.At) })
	want = slices.CompactFunc(want, func(a, b Sample) bool { return a.At == b.At })
	check := func(when string) {
		t.Helper()
		if got := readAll(t, s, "d/t", math.MinInt64, math.MaxInt64); !slices.Equal(got, want) {
			t.Fatalf("%s: %d samples, want %d:\n got %v\nwant %v", when, len(got), len(want), got, want)
		}
		if got := readAll(t, s, "d/t", 39*sec, 61*sec); !slices.Equal(got, want[39:61]) {
			t.Fatalf("%s: [39 s, 61 s): %v", when, got)
		}
	}
	for round := range 2 {
		if err := s.Append(records("d/t", peer[:12])); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(records("d/t", peer[10:])); err != nil { // slices overlap
			t.Fatal(err)
		}
		check("head over blocks")
		if err := s.Compact("d/t", false); err != nil {
			t.Fatal(err)
		}
		check("merged into the blocks")
		if round == 0 {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = open(t, dir, 8)
			check("reopened")
		}
	}
	defer s.Close()
	first, last, ok, err := s.Extent("d/t")
	if err != nil || !ok || first != 0 || last != 99*sec {
		t.Fatalf("extent %d %d %v %v", first, last, ok, err)
	}
}

func TestBeforeAndFirst(t *testing.T) {
	s := open(t, t.TempDir(), 4)
	defer s.Close()
	if _, ok, err := s.Before("d/t", 5*sec); ok || err != nil {
		t.Fatalf("no tag: %v %v", ok, err)
	}
	if err := s.Append(records("d/t", samples(10, 10, func(i int) float64 { return float64(i) }))); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact("d/t", false); err != nil { // blocks [10, 17], head 18, 19
		t.Fatal(err)
	}
	// Candidates that sort first (mergeSamples) for 12 s (in a block) and
	// for 19 s (in the head, beside the first one).
	if err := s.Append([]Record{{Tag: "d/t", Sample: Sample{At: 12 * sec, Value: 0.5}}, {Tag: "d/t", Sample: Sample{At: 19 * sec, Value: 0.25}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t    int64
		want float64
		at   int64
		ok   bool
	}{
		{10 * sec, 0, 0, false},
		{10*sec + 1, 0, 10 * sec, true},
		{13 * sec, 0.5, 12 * sec, true},
		{18 * sec, 7, 17 * sec, true},
		{19 * sec, 8, 18 * sec, true},
		{math.MaxInt64, 0.25, 19 * sec, true},
	} {
		x, ok, err := s.Before("d/t", c.t)
		if err != nil || ok != c.ok || (ok && (x.At != c.at || x.Value != c.want)) {
			t.Fatalf("Before(%d): %+v %v %v, want %v at %d", c.t, x, ok, err, c.want, c.at)
		}
	}
	if x, ok, err := s.First("d/t", 12*sec); !ok || err != nil || x.At != 12*sec || x.Value != 0.5 {
		t.Fatalf("First(12 s): %+v %v %v", x, ok, err)
	}
	if _, ok, err := s.First("d/t", 20*sec); ok || err != nil {
		t.Fatalf("First(20 s): %v %v", ok, err)
	}
}

// TestGapsAreKeptAcrossAReopen: gaps name their tag before its first
// sample, survive a reopen, and go once deleted.
func TestGapsAreKeptAcrossAReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4)
	gs := []Gap{{Tag: "d/new", Start: 100, From: 5, End: EndUnknown}, {Tag: "d/t", Start: 50, From: -7, End: 60}}
	if err := s.PutGaps(gs...); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, 4)
	defer s.Close()
	got, err := s.Gaps()
	if err != nil || !slices.Equal(got, gs) {
		t.Fatalf("after a reopen: %v %v", got, err)
	}
	if err := s.DeleteGap(gs[0]); err != nil {
		t.Fatal(err)
	}
	gs[1].From = 40
	if err := s.PutGaps(gs[1]); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Gaps(); err != nil || !slices.Equal(got, gs[1:]) {
		t.Fatalf("after a delete and an update: %v %v", got, err)
	}
}
