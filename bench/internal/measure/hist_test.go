package measure

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name     string
		add      []time.Duration
		q        float64
		want     time.Duration
		negative uint64
	}{
		{"empty", nil, 0.5, 0, 0},
		{"single", []time.Duration{3 * ms}, 0.5, 4 * ms, 0},
		{"p50 of 1..10", seq(1, 10, ms), 0.5, 6 * ms, 0},
		{"p99 of 1..100", seq(1, 100, ms), 0.99, 100 * ms, 0},
		{"p100 of 1..100", seq(1, 100, ms), 1, 101 * ms, 0},
		{"p0 is first", seq(5, 9, ms), 0, 6 * ms, 0},
		{"overflow answers max", []time.Duration{time.Second, 2 * time.Second}, 1, 2 * time.Second, 0},
		{"negative counts in first bucket", []time.Duration{-ms, -ms, 7 * ms}, 0.5, ms, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHistogram(ms, 500*ms)
			for _, d := range c.add {
				h.Add(d)
			}
			if got := h.Quantile(c.q); got != c.want {
				t.Fatalf("Quantile(%v) = %v, want %v", c.q, got, c.want)
			}
			if h.Negative() != c.negative {
				t.Fatalf("Negative() = %d, want %d", h.Negative(), c.negative)
			}
			if h.Count() != uint64(len(c.add)) {
				t.Fatalf("Count() = %d, want %d", h.Count(), len(c.add))
			}
		})
	}
}

func seq(from, to int, unit time.Duration) []time.Duration {
	var out []time.Duration
	for i := from; i <= to; i++ {
		out = append(out, time.Duration(i)*unit)
	}
	return out
}

// TestHistogramAgainstSort checks the bucketed quantile against the exact
// order statistic: the answer must be the upper edge of the bucket that
// holds the sorted sample at the same rank.
func TestHistogramAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	width := 100 * time.Microsecond
	for round := 0; round < 50; round++ {
		n := 1 + r.IntN(5000)
		h := NewHistogram(width, time.Second)
		var all []time.Duration
		for range n {
			d := time.Duration(r.Int64N(int64(900 * time.Millisecond)))
			all = append(all, d)
			h.Add(d)
		}
		slices.Sort(all)
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
			rank := int(q * float64(n))
			if float64(rank) < q*float64(n) || rank == 0 {
				rank++
			}
			exact := all[rank-1]
			want := (exact/width + 1) * width
			if got := h.Quantile(q); got != want {
				t.Fatalf("round %d n=%d q=%v: got %v, want %v (exact %v)", round, n, q, got, want, exact)
			}
		}
	}
}

func TestHistogramMerge(t *testing.T) {
	a := NewHistogram(time.Millisecond, time.Second)
	b := NewHistogram(time.Millisecond, time.Second)
	a.Add(time.Millisecond)
	b.Add(3 * time.Millisecond)
	b.Add(2 * time.Second)
	a.Merge(b)
	if a.Count() != 3 || a.Overflow() != 1 || a.Max() != 2*time.Second {
		t.Fatalf("merged count=%d overflow=%d max=%v", a.Count(), a.Overflow(), a.Max())
	}
	a.Reset()
	if a.Count() != 0 || a.Quantile(0.5) != 0 {
		t.Fatalf("after Reset count=%d", a.Count())
	}
}
