package main

import (
	"slices"
	"time"
)

// stats are the figures printed for one measurement.
type stats struct {
	median, p90, p99, max time.Duration
}

// summarize returns the median, p90, p99 (nearest rank) and maximum of
// ds; false when ds is empty.
func summarize(ds []time.Duration) (stats, bool) {
	if len(ds) == 0 {
		return stats{}, false
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return stats{median: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), max: s[len(s)-1]}, true
}

// percentile is the p-th percentile of sorted s by nearest rank: the
// smallest value with at least p % of the values at or below it.
func percentile(s []time.Duration, p int) time.Duration {
	rank := (p*len(s) + 99) / 100
	return s[max(rank, 1)-1]
}
