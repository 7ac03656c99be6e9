package check

import (
	"maps"
	"slices"
	"time"
)

// twoPrimaries checks "never two 250s in one ClusterId": under
// lease-majority always, under auto-down outside partitions (windows
// extended by Params.Settle).
//
// The rule. A read of 250 at t says the node was at 250 at t and nothing
// about it between the sampler's previous and next reads, so it stands for
// (t − P, t + P), P = Params.SamplePeriod. Two answered reads of 250 from
// different nodes of one ClusterId are simultaneous when those intervals
// meet: when they are less than 2P apart, i.e. in the same or neighbouring
// rounds of the samplers, whatever their jitter (60 ms apart with 50 ms
// samplers is a violation, 100 ms is not). A correct hand-over keeps them
// further apart: the redundancy state is debounced 250 ms.
//
// Violations in one ClusterId closer than Params.Context to each other are
// folded into the first.
func (c *checker) twoPrimaries() []Violation {
	at250 := slices.DeleteFunc(byTime(c.run.Levels, func(s LevelSample) time.Time { return s.At }),
		func(s LevelSample) bool { return !s.Answered || s.Level != LevelPrimary })
	var out []Violation
	for _, same := range groups(at250, func(s LevelSample) string { return s.ClusterID }) {
		out = append(out, c.fold(c.clusterPrimaries(same[0].ClusterID, same))...)
	}
	return out
}

// clusterPrimaries checks the reads of 250 of one ClusterId, in time order.
func (c *checker) clusterPrimaries(clusterID string, at250 []LevelSample) []Violation {
	var out []Violation
	apart := 2 * c.p.SamplePeriod
	last := map[string]time.Time{} // node → its latest read of 250
	for _, s := range at250 {
		for _, node := range slices.Sorted(maps.Keys(last)) {
			t := last[node]
			if node == s.Node || s.At.Sub(t) >= apart || c.partitionExcused(clusterID, t, s.At) {
				continue
			}
			out = append(out, c.violation(TwoPrimaries, clusterID, t, s.At,
				"%s read 250 at %s and %s at %s, less than %s (two sampling periods) apart",
				node, c.rel(t), s.Node, c.rel(s.At), apart))
		}
		last[s.Node] = s.At
	}
	return out
}
