package membership

import "testing"

func TestVectorClockCompare(t *testing.T) {
	var zero VectorClock
	a1 := zero.Increment("a")
	a2 := a1.Increment("a")
	b1 := zero.Increment("b")
	ab := a1.Merge(b1)
	cases := []struct {
		x, y VectorClock
		want Ordering
	}{
		{zero, zero, Same},
		{a1, a1, Same},
		{zero, a1, Before},
		{a1, zero, After},
		{a1, a2, Before},
		{a2, a1, After},
		{a1, b1, Concurrent},
		{a2, ab, Concurrent},
		{a1, ab, Before},
		{ab.Increment("b"), ab, After},
	}
	for i, c := range cases {
		if got := c.x.Compare(c.y); got != c.want {
			t.Errorf("case %d: %v vs %v = %v, want %v", i, c.x, c.y, got, c.want)
		}
	}
	if a1.Get("a") != 1 || a2.Get("a") != 2 || zero.Len() != 0 {
		t.Fatal("Increment must not modify the receiver")
	}
	if p := ab.Prune("a"); p.Get("a") != 0 || p.Get("b") != 1 || ab.Get("a") != 1 {
		t.Fatal("Prune drops one entry and leaves the receiver")
	}
}

func TestNewVectorClockRoundTrip(t *testing.T) {
	vc := VectorClock{}.Increment("a").Increment("a").Increment("b")
	entries := map[string]uint64{}
	for _, n := range vc.Nodes() {
		entries[n] = vc.Get(n)
	}
	entries["zero"] = 0
	got := NewVectorClock(entries)
	if got.Compare(vc) != Same || got.Len() != 2 {
		t.Fatalf("NewVectorClock(%v) = %v, want %v", entries, got, vc)
	}
	entries["a"] = 3
	if NewVectorClock(entries).Compare(vc) != After {
		t.Fatal("a larger counter must be After")
	}
}
