package drivers

import (
	"math"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		failures int
		want     time.Duration
	}{
		{-1, 0}, {0, 0},
		{1, 100 * ms}, {2, 200 * ms}, {3, 400 * ms}, {4, 800 * ms},
		{5, 1600 * ms}, {6, 3200 * ms}, {7, 5 * time.Second}, {8, 5 * time.Second},
		{64, 5 * time.Second}, {math.MaxInt, 5 * time.Second},
	} {
		if got := Backoff(c.failures); got != c.want {
			t.Errorf("Backoff(%d) = %v, want %v", c.failures, got, c.want)
		}
	}
}
