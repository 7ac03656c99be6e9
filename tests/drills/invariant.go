package drills

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/otopcua/otopcua/tests/procs"
)

// DriverRole is the role the Primary election counts.
const DriverRole = "driver"

// Observation is one node's answer in one sampling round: its view, or
// nil when it did not answer (stopped, partitioned, gone, starting).
type Observation struct {
	Node string // the harness's name for the node
	View *procs.ClusterView
}

// Claim is a node that, in its own view, is Up and the oldest Up driver of
// its own ClusterId: the node that would publish the Primary ServiceLevel.
type Claim struct {
	ClusterID string
	Node      string // harness name
	Self      string // address#uid
}

// Claims returns the claims found in one round, sorted by ClusterId and node.
func Claims(round []Observation) []Claim {
	var out []Claim
	for _, o := range round {
		v := o.View
		if v == nil || v.SelfStatus != procs.StatusUp {
			continue
		}
		self, ok := v.SelfMember()
		if !ok || !self.HasRole(DriverRole) {
			continue
		}
		oldest, ok := v.OldestUp(DriverRole, self.ClusterID)
		if !ok || oldest.Address != self.Address || oldest.UID != self.UID {
			continue
		}
		out = append(out, Claim{ClusterID: self.ClusterID, Node: o.Node, Self: self.Address + "#" + string(self.UID)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ClusterID != out[j].ClusterID {
			return out[i].ClusterID < out[j].ClusterID
		}
		return out[i].Node < out[j].Node
	})
	return out
}

// Violation is a ClusterId with more than one claimer in two consecutive
// rounds.
type Violation struct {
	Round     int
	ClusterID string
	Claimers  []string // address#uid, sorted
}

func (v Violation) String() string {
	return fmt.Sprintf("round %d: ClusterId %q has %d oldest drivers: %s", v.Round, v.ClusterID, len(v.Claimers), strings.Join(v.Claimers, ", "))
}

// OneOldestChecker checks "at most one oldest driver per ClusterId across
// the views of the nodes that answered". Rounds are not atomic snapshots
// (the nodes are asked concurrently, a few ms apart), and a correct
// hand-over moves the claim from one node to the other in about a message
// delay, so one round with two claimers proves nothing: it is counted as a
// near miss. Two claimers that both claim in two consecutive rounds (at
// least one sampling period) are a violation.
type OneOldestChecker struct {
	rounds     int
	claimRound int                 // rounds with at least one claim
	prev       map[string][]string // ClusterId → claimers of the previous round
	violations []Violation
	nearMisses int
}

// Round feeds one sampling round.
func (c *OneOldestChecker) Round(obs []Observation) {
	c.rounds++
	cur := map[string][]string{}
	for _, cl := range Claims(obs) {
		cur[cl.ClusterID] = append(cur[cl.ClusterID], cl.Self)
	}
	if len(cur) > 0 {
		c.claimRound++
	}
	for id, claimers := range cur {
		if len(claimers) < 2 {
			continue
		}
		var both []string
		for _, s := range claimers {
			if slices.Contains(c.prev[id], s) {
				both = append(both, s)
			}
		}
		if len(both) >= 2 {
			sort.Strings(both)
			c.violations = append(c.violations, Violation{Round: c.rounds, ClusterID: id, Claimers: both})
		} else {
			c.nearMisses++
		}
	}
	c.prev = cur
}

// Rounds is the number of rounds fed.
func (c *OneOldestChecker) Rounds() int { return c.rounds }

// ClaimRounds is the number of rounds in which some node claimed.
func (c *OneOldestChecker) ClaimRounds() int { return c.claimRound }

// NearMisses is the number of single-round double claims.
func (c *OneOldestChecker) NearMisses() int { return c.nearMisses }

// Violations returns the violations found so far.
func (c *OneOldestChecker) Violations() []Violation { return slices.Clone(c.violations) }
