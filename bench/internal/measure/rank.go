package measure

import (
	"fmt"
	"runtime"
	"slices"
	"time"
)

// Sorted returns a sorted copy of ds.
func Sorted(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s
}

// Percentile is the p-th percentile of sorted (non-empty) s by nearest
// rank: the smallest value with at least p % of the values at or below it.
// With 20 values p99 is the largest.
func Percentile(s []time.Duration, p int) time.Duration {
	rank := (p*len(s) + 99) / 100
	return s[max(rank, 1)-1]
}

// Machine describes the machine a benchmark ran on, for the results'
// heading: "2026-11-30, 2 CPUs (GOMAXPROCS 2), linux/amd64, go1.26.8".
func Machine(day time.Time) string {
	return fmt.Sprintf("%s, %d CPUs (GOMAXPROCS %d), %s/%s, %s", day.UTC().Format("2006-01-02"),
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
}
