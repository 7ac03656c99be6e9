package check

import (
	"cmp"
	"slices"
)

// twoPrimaries checks "never two 250s in one ClusterId": under
// lease-majority always, under auto-down outside partitions (windows
// extended by Params.Settle).
//
// The rule. Each node's sampler reads it in turn, so a node's own reads
// are ordered; two nodes' reads are not (their samplers run apart, and a
// hand-over takes less than one sampling period). So the rule compares
// stretches, never single reads of two nodes: a node held 250 from one
// answered read of 250 to the last of the adjacent answered reads of 250
// that follow it (a single read of 250 between other answers is a
// stretch of one instant). A read with no answer, or of another level,
// ends the stretch: the node said something else, or said nothing, which
// a client cannot take for 250. Two nodes of one ClusterId whose stretches
// meet (a common instant, their ends included) were both at 250 then: a
// violation at the later stretch's start.
//
// Why not "two reads of 250 less than two periods apart": a correct
// hand-over is faster than one period. A graceful leave moves 250 from one
// node to the other within a millisecond (the leaver's 250 → 0 and its
// peer's 240 → 250 are 0.4 ms apart in their logs), and so does the crash
// fast path after a SIGKILL; the samplers then read the leaver at 250 and
// its peer at 250 one round later, 50 ms apart, while the leaver's own
// next read already says 0 (or nothing). Its own next read is the proof
// that it left 250 first. A dual-Primary episode shorter than a sampling
// period stays unseen, as under any sampler.
//
// Violations in one ClusterId closer than Params.Context to each other are
// folded into the first.
func (c *checker) twoPrimaries() []Violation {
	var out []Violation
	for _, cl := range c.configured {
		var stretches []nodeStretch
		for _, node := range cl.Nodes {
			for _, s := range stretches250(c.levels[node]) {
				stretches = append(stretches, nodeStretch{node, s})
			}
		}
		slices.SortStableFunc(stretches, func(a, b nodeStretch) int { return cmp.Or(a.from.Compare(b.from), a.to.Compare(b.to)) })
		out = append(out, c.fold(c.clusterPrimaries(cl.ID, stretches))...)
	}
	return out
}

// nodeStretch is a stretch of one node at 250.
type nodeStretch struct {
	node string
	span
}

// stretches250 are the stretches at 250 of one node's samples (in time
// order).
func stretches250(samples []LevelSample) []span {
	var out []span
	var open *span
	for _, s := range samples {
		if s.Answered && s.Level == LevelPrimary {
			if open == nil {
				open = &span{s.At, s.At}
			}
			open.to = s.At
			continue
		}
		if open != nil {
			out, open = append(out, *open), nil
		}
	}
	if open != nil {
		out = append(out, *open)
	}
	return out
}

// clusterPrimaries checks the stretches at 250 of one ClusterId's nodes
// (sorted by start).
func (c *checker) clusterPrimaries(clusterID string, stretches []nodeStretch) []Violation {
	var out []Violation
	for i, x := range stretches {
		for _, y := range stretches[i+1:] {
			if y.from.After(x.to) {
				break // sorted by start: no later stretch meets x
			}
			if y.node == x.node {
				continue
			}
			to := x.to
			if y.to.Before(to) {
				to = y.to
			}
			if c.partitionExcused(clusterID, y.from, to) {
				continue
			}
			// The timeline is the one around the overlap's start: x may
			// have held 250 for minutes before.
			out = append(out, c.violation(TwoPrimaries, clusterID, y.from, y.from,
				"%s read 250 from %s to %s and %s from %s to %s: both at 250 from %s to %s",
				x.node, c.rel(x.from), c.rel(x.to), y.node, c.rel(y.from), c.rel(y.to), c.rel(y.from), c.rel(to)))
		}
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return a.At.Compare(b.At) })
	return out
}
