package measure

import (
	"slices"
	"testing"
	"time"
)

func TestPercentileByNearestRank(t *testing.T) {
	in := seq(1, 20, time.Millisecond)
	slices.Reverse(in)
	s := Sorted(in)
	for _, tc := range []struct {
		p    int
		want time.Duration
	}{{0, 1}, {1, 1}, {5, 1}, {6, 2}, {50, 10}, {51, 11}, {90, 18}, {95, 19}, {99, 20}, {100, 20}} {
		if got := Percentile(s, tc.p); got != tc.want*time.Millisecond {
			t.Errorf("p%d of 1..20 ms = %v, want %v ms", tc.p, got, tc.want)
		}
	}
	if got := Percentile([]time.Duration{7}, 50); got != 7 {
		t.Errorf("p50 of one value = %v", got)
	}
}
