package failover

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Primary is the ServiceLevel of a healthy Primary; Secondary that of a
// healthy Secondary.
const (
	Primary   byte = 250
	Secondary byte = 240
)

// Observation is one node's ServiceLevel in one sampling round.
type Observation struct {
	Node      string
	ClusterID string
	Level     byte
	// OK is false when the node gave no value this round (not connected,
	// killed, frozen, cut off): it publishes nothing a client could follow.
	OK bool
}

// Round is one sampling round: every node read at about the same instant.
type Round struct {
	At  time.Time
	Obs []Observation
}

// Level returns node's observation in the round.
func (r Round) Level(node string) (Observation, bool) {
	for _, o := range r.Obs {
		if o.Node == node {
			return o, true
		}
	}
	return Observation{}, false
}

// Violation is a round in which two or more nodes of one ClusterId read
// ServiceLevel 250.
type Violation struct {
	At        time.Time
	ClusterID string
	Nodes     []string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s all read ServiceLevel 250 in ClusterId %s", v.At.Format("15:04:05.000"), strings.Join(v.Nodes, ", "), v.ClusterID)
}

// OnePrimaryChecker checks the redundancy invariant over sampling rounds:
// at most one node per ClusterId reads ServiceLevel 250 at any sampled
// instant. The only exception is the documented auto-down trade: during a
// genuine network partition each side of a pair runs alone and advertises
// 250; a drill that creates one says so with Allow for that ClusterId.
//
// It is a plain value; the caller serialises access.
type OnePrimaryChecker struct {
	allowed    map[string]string // ClusterId → why two Primaries are tolerated
	rounds     int
	tolerated  int
	violations []Violation
}

// Allow tolerates two Primaries in clusterID until Disallow; reason names
// the documented case (the auto-down partition drill).
func (c *OnePrimaryChecker) Allow(clusterID, reason string) {
	if reason == "" {
		panic("OnePrimaryChecker.Allow: a reason is required (only the documented auto-down partition trade allows two Primaries)")
	}
	if c.allowed == nil {
		c.allowed = map[string]string{}
	}
	c.allowed[clusterID] = reason
}

// Disallow ends an Allow.
func (c *OnePrimaryChecker) Disallow(clusterID string) { delete(c.allowed, clusterID) }

// Observe checks one round and returns its violations (also kept for
// Violations).
func (c *OnePrimaryChecker) Observe(r Round) []Violation {
	c.rounds++
	at250 := map[string][]string{}
	for _, o := range r.Obs {
		if o.OK && o.Level == Primary {
			at250[o.ClusterID] = append(at250[o.ClusterID], o.Node)
		}
	}
	var out []Violation
	ids := make([]string, 0, len(at250))
	for id := range at250 {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		nodes := at250[id]
		if len(nodes) < 2 {
			continue
		}
		if _, ok := c.allowed[id]; ok {
			c.tolerated++
			continue
		}
		slices.Sort(nodes)
		out = append(out, Violation{At: r.At, ClusterID: id, Nodes: nodes})
	}
	c.violations = append(c.violations, out...)
	return out
}

// Violations are every violation seen so far.
func (c *OnePrimaryChecker) Violations() []Violation { return slices.Clone(c.violations) }

// Rounds is the number of rounds observed; Tolerated the rounds with two
// Primaries in an allowed ClusterId.
func (c *OnePrimaryChecker) Rounds() int    { return c.rounds }
func (c *OnePrimaryChecker) Tolerated() int { return c.tolerated }

// LongestGap is the longest stretch of time, within rounds (in time order)
// from `from` on, in which no node of clusterID was seen with a level
// satisfying ok: it runs from the first round without such a node to the
// next round with one (or to the last round when none follows).
func LongestGap(rounds []Round, clusterID string, from time.Time, ok func(byte) bool) time.Duration {
	var longest time.Duration
	var start time.Time
	for _, r := range rounds {
		if r.At.Before(from) {
			continue
		}
		good := false
		for _, o := range r.Obs {
			if o.ClusterID == clusterID && o.OK && ok(o.Level) {
				good = true
				break
			}
		}
		switch {
		case !good && start.IsZero():
			start = r.At
		case good && !start.IsZero():
			longest = max(longest, r.At.Sub(start))
			start = time.Time{}
		}
	}
	if !start.IsZero() && len(rounds) > 0 {
		longest = max(longest, rounds[len(rounds)-1].At.Sub(start))
	}
	return longest
}
