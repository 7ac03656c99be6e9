package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/otopcua/otopcua/bench/internal/hostrig"
	"github.com/otopcua/otopcua/tests/procs"
)

// Healthy band and roles.
const (
	healthyFloor byte = 200 // the lowest level the run accepts (stale but serving)
	primaryLevel      = hostrig.PrimaryLevel
	followLevel       = hostrig.SecondaryLevel
)

// Log markers counted in every node's log. The downing markers fail the
// run; the others are reported.
var (
	downMarkers = []string{"cluster member downed", "cluster this node was downed", "cluster crash fast path: downing", "coordinated shutdown"}
	noteMarkers = []string{"cluster member unreachable", "cluster member reachable again", "lease lost to another node", "lease store did not answer",
		"did not run for longer than the heartbeat pause", "promotion hold"}
)

// NodeObs is what the samplers saw of one node during the run.
type NodeObs struct {
	// Reads is how many ServiceLevel reads were made, Answered how many
	// returned a level.
	Reads, Answered int
	// Levels counts the answered reads by level.
	Levels map[byte]int
	// Changes counts consecutive answered reads whose levels differ.
	Changes int
	// Views is how many GET /api/cluster/members were made, ViewsAnswered
	// how many answered; ViewFaults counts answered views that break the
	// invariant (a member missing or not Up, another oldest driver), and
	// FirstFault describes the first one.
	Views, ViewsAnswered, ViewFaults int
	FirstFault                       string
	// Unreachable counts answered views with a member marked unreachable.
	Unreachable int
	// Exited and ExitCode tell whether the process ended during the run.
	Exited   bool
	ExitCode int
	// Marks counts the log lines carrying each marker.
	Marks map[string]int
	// DeviceReads is how many reads of the device the node counted
	// (otopcua_driver_reads_total, result ok) during the run; -1 unknown.
	DeviceReads, DeviceFailed int64
}

// MinLevel is the lowest answered level, or -1 when nothing answered.
func (o *NodeObs) MinLevel() int {
	m := -1
	for l, n := range o.Levels {
		if n > 0 && (m < 0 || int(l) < m) {
			m = int(l)
		}
	}
	return m
}

// Observations are the inputs of the verdict.
type Observations struct {
	Primary, Secondary string
	Nodes              map[string]*NodeObs
	// Pause is the nodes' effective acceptable heartbeat pause.
	Pause time.Duration
	// Stalls is how many stalls were injected, Longest the longest measured
	// from SIGSTOP sent to SIGCONT sent.
	Stalls  int
	Longest time.Duration
}

// Verdict lists every broken promise of a run; none means the healthy
// pair never failed over and never left the Healthy band:
//
//	a node exited                                 → failover
//	the Secondary read 250, the Primary read 240  → failover (the Primary changed)
//	any answered level below 200                  → left the Healthy band
//	a member view without both nodes Up, or with
//	another oldest driver                         → failover (Down/removed, or Primary moved)
//	a downing marker in a node's log              → failover
//	a node answered fewer than half of its reads
//	or views                                      → not checked
//	a node counted no device read                 → the data plane was idle
//	a stall as long as the heartbeat pause        → not the run it claims
func Verdict(o Observations) []string {
	var out []string
	for _, name := range sortedNames(o.Nodes) {
		n := o.Nodes[name]
		if n.Exited {
			out = append(out, fmt.Sprintf("%s exited with code %d", name, n.ExitCode))
		}
		if name == o.Secondary && n.Levels[primaryLevel] > 0 {
			out = append(out, fmt.Sprintf("failover: the Secondary %s read %d in %d samples", name, primaryLevel, n.Levels[primaryLevel]))
		}
		if name == o.Primary && n.Levels[followLevel] > 0 {
			out = append(out, fmt.Sprintf("failover: the Primary %s read %d in %d samples", name, followLevel, n.Levels[followLevel]))
		}
		if m := n.MinLevel(); m >= 0 && m < int(healthyFloor) {
			out = append(out, fmt.Sprintf("%s left the Healthy band: %s", name, below(n.Levels)))
		}
		if n.ViewFaults > 0 {
			out = append(out, fmt.Sprintf("%s: %d member views broke the pair (first: %s)", name, n.ViewFaults, n.FirstFault))
		}
		for _, m := range downMarkers {
			if n.Marks[m] > 0 {
				out = append(out, fmt.Sprintf("%s logged %q %d times", name, m, n.Marks[m]))
			}
		}
		if n.Reads == 0 || 2*n.Answered < n.Reads {
			out = append(out, fmt.Sprintf("%s answered %d of %d ServiceLevel reads: the levels were not checked", name, n.Answered, n.Reads))
		}
		if n.Views == 0 || 2*n.ViewsAnswered < n.Views {
			out = append(out, fmt.Sprintf("%s answered %d of %d member views: membership was not checked", name, n.ViewsAnswered, n.Views))
		}
		if n.DeviceReads == 0 {
			out = append(out, fmt.Sprintf("%s read nothing from the device during the run", name))
		}
	}
	if o.Longest >= o.Pause {
		out = append(out, fmt.Sprintf("the longest stall (%v) was not shorter than the heartbeat pause (%v)", o.Longest, o.Pause))
	}
	return out
}

// below renders the counts of the levels under the floor.
func below(levels map[byte]int) string {
	var ls []int
	for l, n := range levels {
		if n > 0 && l < healthyFloor {
			ls = append(ls, int(l))
		}
	}
	sort.Ints(ls)
	s := ""
	for i, l := range ls {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d×%d", levels[byte(l)], l)
	}
	return s
}

// checkView judges one node's member view: every node of the pair is a
// member and Up, and the oldest Up driver of the ClusterId (the Primary)
// is still primaryAddr. It reports whether a member is marked unreachable
// separately: a suspicion is not a failover.
func checkView(v *procs.ClusterView, addrs []string, clusterID, primaryAddr string) (unreachable bool, err error) {
	for _, a := range addrs {
		m, ok := v.Member(a)
		if !ok {
			return false, fmt.Errorf("%s missing from %s", a, v)
		}
		if m.Status != procs.StatusUp {
			return false, fmt.Errorf("%s is %s in %s", a, m.Status, v)
		}
		if !m.Reachable {
			unreachable = true
		}
	}
	if o, ok := v.OldestUp("driver", clusterID); !ok || o.Address != primaryAddr {
		return unreachable, fmt.Errorf("oldest driver is %q, want %s: %s", o.Address, primaryAddr, v)
	}
	return unreachable, nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
