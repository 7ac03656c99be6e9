package check

import (
	"cmp"
	"slices"
	"time"
)

// stuckLevel checks that no node stays at 255 or below 200 (0 included)
// for longer than Params.StuckLimit while its pair is healthy.
//
// A stuck stretch of a node begins at an answered read of 255 or below 200
// and lasts until its next answered read of any other level (200…254), or
// its last read; reads without an answer do not end it (a node that stops
// answering while stuck is still stuck). The pair is unhealthy during the
// window of every fault touching its ClusterId and at every process event
// of its nodes (start, exit, kill, stop, continue), each extended by
// Params.Settle; it is healthy the rest of the time. A stretch with a
// healthy part longer than the limit is a violation, at the moment the
// limit ran out.
func (c *checker) stuckLevel() []Violation {
	var out []Violation
	for _, cl := range c.configured {
		unhealthy := c.unhealthy(cl)
		for _, node := range cl.Nodes {
			for _, st := range stuckStretches(c.levels[node]) {
				from, ok := longHealthyPart(st.span, unhealthy, c.p.StuckLimit)
				if !ok {
					continue
				}
				out = append(out, c.violation(StuckLevel, cl.ID, st.from, from.Add(c.p.StuckLimit),
					"%s read %d from %s to %s, more than %s of it from %s on while its pair was healthy",
					node, st.level, c.rel(st.from), c.rel(st.to), c.p.StuckLimit, c.rel(from)))
			}
		}
	}
	return out
}

// stretch is a stuck stretch and the level that began it.
type stretch struct {
	span
	level byte
}

// stuckStretches are the stuck stretches of one node's samples (in time
// order).
func stuckStretches(samples []LevelSample) []stretch {
	var out []stretch
	var open *stretch
	for _, s := range samples {
		switch {
		case !s.Answered:
		case s.Level == LevelUnset || s.Level < LevelStale:
			if open == nil {
				open = &stretch{span{s.At, s.At}, s.Level}
			}
		case open != nil:
			open.to = s.At
			out, open = append(out, *open), nil
		}
	}
	if open != nil {
		open.to = samples[len(samples)-1].At
		out = append(out, *open)
	}
	return out
}

// unhealthy are the spans in which cl's pair is not healthy, sorted by
// start.
func (c *checker) unhealthy(cl Cluster) []span {
	out := c.faultSpans(cl.ID, func(Fault) bool { return true })
	for _, node := range cl.Nodes {
		for _, e := range c.procs[node] {
			out = append(out, span{e.At, e.At.Add(c.p.Settle)})
		}
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Or(a.from.Compare(b.from), a.to.Compare(b.to)) })
	return out
}

// longHealthyPart returns the start of the first part of st outside every
// span of unhealthy (sorted by start) that is longer than limit.
func longHealthyPart(st span, unhealthy []span, limit time.Duration) (time.Time, bool) {
	cur := st.from
	for _, u := range unhealthy {
		if u.from.After(st.to) {
			break
		}
		if u.from.Sub(cur) > limit {
			return cur, true
		}
		if u.to.After(cur) {
			cur = u.to
		}
	}
	if st.to.Sub(cur) > limit {
		return cur, true
	}
	return time.Time{}, false
}
