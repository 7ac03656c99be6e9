package check

import "time"

// twoWriters checks "never two writers to one device": under
// lease-majority always, under auto-down outside partitions.
//
// The rule. Each device's write log is read in time order. A write by node
// X at t3 makes X a second writer when all of these hold:
//
//  1. X wrote to the device before, last at t1, and another node Y wrote
//     to it after that, first at t2 (t1 < t2 ≤ t3): X, Y, X interleave.
//  2. The interleaving lasted longer than Params.OverlapWindow:
//     t3 − t2 > OverlapWindow (default 0, so any interleaving counts).
//  3. Nothing outside shows that X's writes at t1 and t3 belong to two
//     tenures: X's process was not Started again in (t1, t3], and no
//     sampler read X's ServiceLevel as 240 (healthy Secondary) or 0 (not a
//     member) in (t1, t3).
//  4. Under auto-down, [t2, t3] meets no partition touching the ClusterId
//     (window extended by Params.Settle).
//
// Why this rule:
//
//   - A hand-over alone — X's last write, then Y's first — is never a
//     violation. The write log cannot tell whether X still believed itself
//     Primary when Y began (the two-primaries rule judges the levels);
//     only X writing again after Y proves both held the right to write.
//     So a killed Primary's last write followed by the survivor's first
//     passes.
//   - A kill, an exit or a SIGSTOP in between does not end X's tenure by
//     itself. A frozen process keeps its beliefs: woken by SIGCONT it
//     writes with the authority it had before the freeze — the stale
//     writer that the lease and the fencing exist to stop. A write that
//     lands after X was killed with no restart is one X issued before it
//     died, delivered late: the device ends with the older value. Only a
//     new process (which must rejoin and be elected again) or X telling
//     every client that it is not the Primary starts a new tenure.
//   - Levels 100 and 200 do not count: the calculator gives them to a
//     stale node whatever its role, so a Primary cut off from the Config
//     DB may still write at 100. "No answer" does not count either: a
//     stopped or partitioned node does not answer and believes what it
//     believed.
//   - OverlapWindow exists for a plant that accepts an in-flight write
//     landing just after the hand-over; the default accepts none.
//
// Violations on one device closer than Params.Context to each other are
// folded into the first.
func (c *checker) twoWriters() []Violation {
	writes := byTime(c.run.Writes, func(w DeviceWrite) time.Time { return w.At })
	var out []Violation
	for _, same := range groups(writes, func(w DeviceWrite) string { return w.Device }) {
		out = append(out, c.fold(c.deviceWriters(same))...)
	}
	return out
}

// tenure is what a writer did on one device since its last write.
type tenure struct {
	last    DeviceWrite  // its last write
	foreign *DeviceWrite // the first write by another node after it, if any
}

// deviceWriters checks the writes to one device, in time order.
func (c *checker) deviceWriters(writes []DeviceWrite) []Violation {
	var out []Violation
	seen := map[string]*tenure{}
	for _, w := range writes {
		if t, ok := seen[w.Writer]; ok && t.foreign != nil && c.secondWriter(t.last, *t.foreign, w) {
			out = append(out, c.violation(TwoWriters, c.deviceCluster[w.Device], t.last.At, w.At,
				"device %s: %s wrote at %s, %s at %s, %s again at %s with no restart of %s and no level 240 or 0 from it in between",
				w.Device, w.Writer, c.rel(t.last.At), t.foreign.Writer, c.rel(t.foreign.At), w.Writer, c.rel(w.At), w.Writer))
		}
		for name, t := range seen {
			if name != w.Writer && t.foreign == nil {
				t.foreign = &w
			}
		}
		seen[w.Writer] = &tenure{last: w}
	}
	return out
}

// secondWriter applies rules 2 to 4 to X's write first, Y's write other and
// X's write again.
func (c *checker) secondWriter(first, other, again DeviceWrite) bool {
	clusterID := c.deviceCluster[again.Device]
	return again.At.Sub(other.At) > c.p.OverlapWindow &&
		!c.newTenure(again.Writer, first.At, again.At) &&
		!c.partitionExcused(clusterID, other.At, again.At)
}

// newTenure reports whether node's process started again in (t1, t3] or a
// sampler read it at 240 or 0 in (t1, t3).
func (c *checker) newTenure(node string, t1, t3 time.Time) bool {
	for _, e := range c.procs[node] {
		if e.Kind == Started && e.At.After(t1) && !e.At.After(t3) {
			return true
		}
	}
	for _, s := range c.levels[node] {
		if s.Answered && (s.Level == LevelSecondary || s.Level == LevelDetached) && s.At.After(t1) && s.At.Before(t3) {
			return true
		}
	}
	return false
}
