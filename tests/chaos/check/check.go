package check

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Names of the invariants (Violation.Invariant).
const (
	TwoWriters    = "two-writers"
	TwoPrimaries  = "two-primaries"
	AlarmOnce     = "alarm-once"
	AlarmStored   = "alarm-stored"
	AckLandedOnce = "ack-landed-once"
	RestartBudget = "restart-budget"
	StuckLevel    = "stuck-level"
)

// Violation is one broken invariant with the timeline around it.
type Violation struct {
	Invariant string
	ClusterID string
	At        time.Time
	Statement string // one line, times relative to Origin
	Seed      int64
	Origin    time.Time // time zero of Statement and Events
	// Events are the observations of the ClusterId from Params.Context
	// before At (or before the earliest observation the statement cites,
	// when that is earlier) to Params.Context after At, the start and end
	// of every fault touching it whose window meets that time, and a line
	// marking At, sorted by time.
	Events []Event

	since time.Time // the earliest observation the statement cites
}

func (v Violation) String() string {
	return fmt.Sprintf("seed %d: %s in ClusterId %s at %s: %s", v.Seed, v.Invariant, v.ClusterID, rel(v.Origin, v.At), v.Statement)
}

// Check checks every invariant over run and returns the violations sorted
// by time. It panics when run is malformed (an unknown downing strategy, an
// observation naming a node, device or OPC UA node the configuration does
// not have): a checker that skipped what it cannot place would pass runs it
// never judged.
func Check(run Run) []Violation {
	c := newChecker(run)
	var vs []Violation
	for _, inv := range []func() []Violation{c.twoWriters, c.twoPrimaries, c.alarmOnce, c.alarmStored, c.ackLandedOnce, c.restartBudget, c.stuckLevel} {
		vs = append(vs, inv()...)
	}
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Invariant, b.Invariant), cmp.Compare(a.ClusterID, b.ClusterID))
	})
	for i := range vs {
		vs[i].Events = c.timeline(vs[i])
	}
	return vs
}

// checker is a Run indexed for the invariants.
type checker struct {
	run           Run
	p             Params
	origin        time.Time
	clusters      map[string]Cluster
	configured    []Cluster // the clusters in configuration order, defaults applied
	nodeCluster   map[string]string
	deviceCluster map[string]string
	levels        map[string][]LevelSample  // node → its samples, by time
	procs         map[string][]ProcessEvent // node → its process events, by time
}

func newChecker(run Run) *checker {
	c := &checker{
		run: run, p: run.Params.withDefaults(),
		clusters: map[string]Cluster{}, nodeCluster: map[string]string{}, deviceCluster: map[string]string{},
		levels: map[string][]LevelSample{}, procs: map[string][]ProcessEvent{},
	}
	for _, cl := range run.Clusters {
		c.addCluster(cl)
	}
	for _, s := range byTime(run.Levels, func(s LevelSample) time.Time { return s.At }) {
		must(s.ClusterID != "" && c.nodeCluster[s.Node] == s.ClusterID, "sample %s: node %q is not in ClusterId %q", s.Source, s.Node, s.ClusterID)
		c.levels[s.Node] = append(c.levels[s.Node], s)
	}
	for _, e := range byTime(run.Processes, func(e ProcessEvent) time.Time { return e.At }) {
		must(c.nodeCluster[e.Node] != "", "process event %s: node %q is in no ClusterId", e.Source, e.Node)
		c.procs[e.Node] = append(c.procs[e.Node], e)
	}
	for _, w := range run.Writes {
		must(c.deviceCluster[w.Device] != "", "device write %s: device %q is in no ClusterId", w.Source, w.Device)
	}
	for _, a := range run.Acks {
		_, ok := c.clusters[c.nodeCluster[a.Server]].Tags[a.NodeID]
		must(ok, "acknowledged write %s: server %q has no tag %q in its ClusterId", a.Source, a.Server, a.NodeID)
	}
	for _, r := range run.Alarms {
		must(c.clusters[r.ClusterID].ID != "", "alarm_history row %s: ClusterId %q is not configured", r.Source, r.ClusterID)
	}
	c.origin = run.Start
	if c.origin.IsZero() {
		c.origin = c.earliest()
	}
	return c
}

func (c *checker) addCluster(cl Cluster) {
	must(cl.ID != "" && c.clusters[cl.ID].ID == "", "ClusterId %q: empty or configured twice", cl.ID)
	must(cl.Downing == LeaseMajority || cl.Downing == AutoDown, "ClusterId %s: downing %q: accepted values are %q and %q", cl.ID, cl.Downing, LeaseMajority, AutoDown)
	if cl.RestartBudget == 0 {
		cl.RestartBudget = DefaultRestartBudget
	}
	c.clusters[cl.ID] = cl
	c.configured = append(c.configured, cl)
	for _, n := range cl.Nodes {
		must(c.nodeCluster[n] == "", "node %s is in ClusterIds %s and %s", n, c.nodeCluster[n], cl.ID)
		c.nodeCluster[n] = cl.ID
	}
	for _, d := range cl.Devices {
		c.deviceCluster[d] = cl.ID
	}
}

// must panics, naming the broken expectation, unless ok.
func must(ok bool, format string, args ...any) {
	if !ok {
		panic("check: malformed run: " + fmt.Sprintf(format, args...))
	}
}

// earliest is the time of the run's first ServiceLevel sample.
func (c *checker) earliest() time.Time {
	var first time.Time
	for _, s := range c.run.Levels {
		if first.IsZero() || s.At.Before(first) {
			first = s.At
		}
	}
	return first
}

// violation builds a violation of inv in clusterID at at whose statement
// (formatted by fmt, times given through c.rel) cites observations from
// since on.
func (c *checker) violation(inv, clusterID string, since, at time.Time, format string, args ...any) Violation {
	return Violation{Invariant: inv, ClusterID: clusterID, At: at, Statement: fmt.Sprintf(format, args...), Seed: c.run.Seed, Origin: c.origin, since: since}
}

// rel is t relative to the run's time zero.
func (c *checker) rel(t time.Time) string { return rel(c.origin, t) }

func rel(origin, t time.Time) string { return fmt.Sprintf("%+.3fs", t.Sub(origin).Seconds()) }

// span is a closed interval of time.
type span struct{ from, to time.Time }

// overlaps reports whether [a, b] meets s.
func (s span) overlaps(a, b time.Time) bool { return !a.After(s.to) && !b.Before(s.from) }

// touches reports whether f concerns a node or device of cl.
func (f Fault) touches(cl Cluster) bool {
	if len(f.Targets) == 0 {
		return true
	}
	return slices.ContainsFunc(f.Targets, func(t string) bool {
		return slices.Contains(cl.Nodes, t) || slices.Contains(cl.Devices, t)
	})
}

// faultSpans are the windows of the faults touching clusterID that keep
// satisfies, each extended by the settle margin.
func (c *checker) faultSpans(clusterID string, keep func(Fault) bool) []span {
	var out []span
	for _, f := range c.run.Faults {
		if keep(f) && f.touches(c.clusters[clusterID]) {
			out = append(out, span{f.Start, f.End.Add(c.p.Settle)})
		}
	}
	return out
}

// partitionExcused reports whether [a, b] in clusterID falls in the
// auto-down trade: the ClusterId runs auto-down and a partition touching it
// was active, or ended less than the settle margin before.
func (c *checker) partitionExcused(clusterID string, a, b time.Time) bool {
	if c.clusters[clusterID].Downing != AutoDown {
		return false
	}
	partitions := c.faultSpans(clusterID, func(f Fault) bool { return f.Kind == FaultPartition })
	return slices.ContainsFunc(partitions, func(s span) bool { return s.overlaps(a, b) })
}

// byTime returns a copy of xs sorted by time, keeping the order of equal
// times.
func byTime[T any](xs []T, at func(T) time.Time) []T {
	out := slices.Clone(xs)
	slices.SortStableFunc(out, func(a, b T) int { return at(a).Compare(at(b)) })
	return out
}

// groups splits xs into groups of equal key, each in the order of xs, the
// groups in the order their key first appears.
func groups[T any, K comparable](xs []T, key func(T) K) [][]T {
	index := map[K]int{}
	var out [][]T
	for _, x := range xs {
		i, ok := index[key(x)]
		if !ok {
			i = len(out)
			index[key(x)] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], x)
	}
	return out
}

// fold keeps the first of each series of violations (of one subject, in
// time order) that follow each other within Params.Context, and says in
// its statement how many it folded and until when: a dual-Primary episode
// is one violation, not one per sample.
func (c *checker) fold(vs []Violation) []Violation {
	var out []Violation
	var folded int
	var last time.Time
	flush := func() {
		if folded > 0 {
			out[len(out)-1].Statement += fmt.Sprintf(" (and %d more until %s)", folded, c.rel(last))
		}
	}
	for _, v := range vs {
		if len(out) > 0 && v.At.Sub(last) <= c.p.Context {
			folded++
			last = v.At
			continue
		}
		flush()
		out, folded, last = append(out, v), 0, v.At
	}
	flush()
	return out
}

// lastObservation is the latest instant the run recorded anything at.
func (c *checker) lastObservation() time.Time {
	var last time.Time
	see := func(t time.Time) {
		if t.After(last) {
			last = t
		}
	}
	for _, l := range c.run.Levels {
		see(l.At)
	}
	for _, w := range c.run.Writes {
		see(w.At)
	}
	for _, a := range c.run.Alarms {
		see(a.At)
	}
	for _, t := range c.run.Toggles {
		see(t.At)
	}
	for _, p := range c.run.Processes {
		see(p.At)
	}
	for _, a := range c.run.Acks {
		see(a.At)
	}
	return last
}
