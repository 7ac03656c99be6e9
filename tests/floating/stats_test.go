package floating

import (
	"slices"
	"testing"
	"time"
)

// percentile is the nearest-rank p-th percentile of ds (0 when empty).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100 // ceil(p/100 · n)
	return s[max(rank, 1)-1].Round(time.Millisecond)
}

// rounded is ds to the millisecond, for the report.
func rounded(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	for _, c := range []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(30, 10, 20), 50, 20 * time.Millisecond},
		{ms(40, 10, 30, 20), 50, 20 * time.Millisecond},
		{ms(40, 10, 30, 20), 99, 40 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 100), 99, 100 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 100), 90, 9 * time.Millisecond},
	} {
		if got := percentile(c.in, c.p); got != c.want {
			t.Errorf("percentile(%v, %d) = %v, want %v", c.in, c.p, got, c.want)
		}
	}
}
