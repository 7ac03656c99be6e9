package history

import "math"

// Gap is an interval of one tag's history that this node did not record
// and asks its peer for (back-fill). Times are OPC UA ticks.
//
// A gap opens when this process starts recording a tag (Start): the node
// was not recording it from its last stored sample before Start (the
// node was down, or the tag not historized here) up to its first own
// sample at or after Start (End). End is unknown until that first sample
// is stored; until then only the part before Start is asked for, so that
// the first sample at or after Start is always the node's own.
//
// From moves forward as slices arrive: every sample of the peer with a
// time ≤ From is stored. The gap is filled when From reaches the last
// tick before End.
type Gap struct {
	Tag   string
	Start int64 // when this process began recording the tag
	From  int64 // exclusive: the peer's samples after From are still wanted
	End   int64 // exclusive: the node's first own sample at or after Start; EndUnknown until known
}

// EndUnknown is Gap.End while the node has recorded nothing of the tag since
// Start.
const EndUnknown = math.MinInt64

// NewGap is the gap of a tag whose recording starts at start: from the
// last stored sample before start (last, when has), but no further back
// than retention (ticks) — a node with nothing stored asks for the whole
// retention.
func NewGap(tag string, start int64, last int64, has bool, retention int64) Gap {
	from := int64(math.MinInt64)
	// flip(start) is start's distance from the earliest time, in uint64
	// so that it cannot overflow.
	if span := flip(start); retention >= 0 && uint64(retention) < span-1 {
		from = start - retention - 1
	}
	if has {
		from = max(from, last)
	}
	return Gap{Tag: tag, Start: start, From: from, End: EndUnknown}
}

// Window is the next interval to ask the peer for, as (after, before),
// both exclusive, at now: up to End when it is known, else up to Start.
// Only times at least settle (ticks) before now are asked for: the peer
// stores what it reads a moment later (its recorder's batch), and a
// window asked too early would miss its last samples. ok is false when
// nothing can be asked yet: the window is empty or not settled.
func (g Gap) Window(now, settle int64) (after, before int64, ok bool) {
	before = g.Start
	if g.End != EndUnknown {
		before = g.End
	}
	if before > now-settle {
		return 0, 0, false
	}
	return g.From, before, g.From < before-1
}

// Filled reports whether nothing more is wanted: End is known and From
// reached the tick before it.
func (g Gap) Filled() bool { return g.End != EndUnknown && g.From >= g.End-1 }

// Advance is g after the peer answered the window (after, before) with
// samples xs (oldest first, every one inside the window) and more (the
// peer holds more in the window after the last one): From moves to the
// last sample's time, or to the window's end when the peer has no more.
func (g Gap) Advance(after, before int64, xs []Sample, more bool) Gap {
	switch {
	case more && len(xs) > 0:
		g.From = max(g.From, xs[len(xs)-1].At)
	case !more:
		g.From = max(g.From, before-1)
	}
	return g
}

// Lag is how far behind the back-fill of gaps is at now, in ticks: the
// longest span still to fill (up to End, or up to now while End is
// unknown); 0 when there is none.
func Lag(gaps []Gap, now int64) int64 {
	var lag int64
	for _, g := range gaps {
		end := now
		if g.End != EndUnknown {
			end = g.End
		}
		lag = max(lag, end-g.From)
	}
	return lag
}

// CheckSlice checks a peer's answer to the window (after, before) asked
// with limit: at most limit samples, strictly increasing times, each
// inside the window, and at least one when the peer says it has more (an
// answer that moves nothing forward would be asked again without end). A
// peer's answer that breaks it is refused whole.
func CheckSlice(after, before int64, limit int, xs []Sample, more bool) bool {
	if len(xs) > limit || (more && len(xs) == 0) {
		return false
	}
	prev := after
	for _, x := range xs {
		if x.At <= prev || x.At >= before {
			return false
		}
		prev = x.At
	}
	return true
}

// TrimEdges drops the back-filled samples that only repeat, at the edges
// of a gap, what this node recorded itself: the first of xs when it has
// the value and status of prev (this node's last sample before the gap),
// and the last of xs when it has those of next (its first own sample
// after the gap). Both nodes read the same device moments apart, so the
// peer's first and last samples of a gap are often the very readings this
// node stored on either side of it, a few milliseconds off; stored too,
// they would show one value twice. Samples inside the gap are kept as the
// peer recorded them (its maximum-interval repeats included).
func TrimEdges(xs []Sample, prev Sample, hasPrev bool, next Sample, hasNext bool) []Sample {
	same := func(a, b Sample) bool { return a.Value == b.Value && a.Status == b.Status }
	if hasPrev && len(xs) > 0 && same(xs[0], prev) {
		xs = xs[1:]
	}
	if hasNext && len(xs) > 0 && same(xs[len(xs)-1], next) {
		xs = xs[:len(xs)-1]
	}
	return xs
}
