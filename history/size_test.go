package history

import (
	"fmt"
	"math"
	"testing"
)

// TestShrink: over its limit, the store loses its oldest blocks first,
// across tags, at most limit a call, never a head; within it, nothing.
func TestShrink(t *testing.T) {
	s := open(t, t.TempDir(), 4)
	defer s.Close()
	// Tag a's blocks start at 0, 4, 8 … s, b's at 2, 6, 10 … s; a head of
	// two samples each.
	for _, tag := range []struct {
		name string
		from int
	}{{"a", 0}, {"b", 2}} {
		if err := s.Append(recs(tag.name, tag.from, 4*10+2, func(i int) float64 { return float64(i) })); err != nil {
			t.Fatal(err)
		}
		if err := s.Compact(tag.name, false); err != nil {
			t.Fatal(err)
		}
	}
	size := s.Size()
	if size < s.j.bytes.Load() || s.j.bytes.Load() < 2*42*4 {
		t.Fatalf("Size %d does not count the journal's %d bytes (at least 4 a sample)", size, s.j.bytes.Load())
	}
	size -= s.j.bytes.Load()
	cases := []struct {
		name       string
		max        int64
		limit      int
		blocks     int
		firstA     int64 // a's first sample after the call
		firstB     int64
		overBefore bool
	}{
		{"within the limit", size, 100, 0, 0, 2 * sec, false},
		{"one block a call", 0, 1, 1, 4 * sec, 2 * sec, true},
		{"the oldest next, of the other tag", 0, 1, 1, 4 * sec, 6 * sec, true},
		{"three more, oldest first", 0, 3, 3, 12 * sec, 10 * sec, true},
		{"everything but the heads", 0, 1000, 15, 40 * sec, 42 * sec, true},
		{"heads stay", 0, 1000, 0, 40 * sec, 42 * sec, true},
	}
	for _, c := range cases {
		r, err := s.Shrink(c.max, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if r.Blocks != c.blocks || (r.Over > 0) != c.overBefore || r.Samples != 4*c.blocks {
			t.Fatalf("%s: %+v, want %d blocks of 4 samples, over %v", c.name, r, c.blocks, c.overBefore)
		}
		for tag, want := range map[string]int64{"a": c.firstA, "b": c.firstB} {
			x, ok, err := s.First(tag, math.MinInt64)
			if err != nil || !ok || x.At != want {
				t.Fatalf("%s: %s's first sample %+v (%v, %v), want at %d s", c.name, tag, x, ok, err, want/sec)
			}
		}
	}
	if got := readAll(t, s, "a", math.MinInt64, math.MaxInt64); len(got) != 2 {
		t.Fatalf("a's head: %v", got)
	}
}

// TestRecorderShrink: a recorder with MaxSize removes the oldest blocks
// of a store over it and counts their samples.
func TestRecorderShrink(t *testing.T) {
	s := open(t, t.TempDir(), 4)
	defer s.Close()
	var batch []Record
	for i := range 50 {
		batch = append(batch, recs(fmt.Sprintf("t%02d", i), 0, 40, func(i int) float64 { return float64(i) })...)
	}
	if err := s.Append(batch); err != nil {
		t.Fatal(err)
	}
	for _, tag := range s.Due(math.MinInt64) {
		if err := s.Compact(tag, false); err != nil {
			t.Fatal(err)
		}
	}
	r := NewRecorder(s, RecorderOptions{MaxSize: 1, SizeBlocks: 30})
	r.shrink()
	if st := r.Status(); st.RemovedBySize != 30*4 || !r.shrinking {
		t.Fatalf("after one turn: %+v, shrinking %v", st, r.shrinking)
	}
	// Every tag lost its first block before any lost its second.
	for i := range 50 {
		x, _, err := s.First(fmt.Sprintf("t%02d", i), math.MinInt64)
		want := int64(0)
		if i < 30 {
			want = 4 * sec
		}
		if err != nil || x.At != want {
			t.Fatalf("t%02d: first %+v, want %d s", i, x, want/sec)
		}
	}
	r.o.MaxSize = 1 << 40
	r.shrink()
	if r.shrinking || r.Status().RemovedBySize != 120 {
		t.Fatalf("within the limit: shrinking %v, %+v", r.shrinking, r.Status())
	}
}
