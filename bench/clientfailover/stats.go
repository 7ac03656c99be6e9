package main

import (
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
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
	s := measure.Sorted(ds)
	return stats{median: measure.Percentile(s, 50), p90: measure.Percentile(s, 90), p99: measure.Percentile(s, 99), max: s[len(s)-1]}, true
}
