package drills

import (
	"testing"

	"github.com/otopcua/otopcua/tests/procs"
)

// mkView builds a ClusterView for self from "address:uid:status:up:clusterId"
// member specs (driver role on every member).
func mkView(self string, members ...procs.Member) *procs.ClusterView {
	v := &procs.ClusterView{SelfStatus: procs.StatusUp, Converged: true}
	for _, m := range members {
		if m.Address == self {
			v.Self = procs.UniqueAddress{Address: m.Address, UID: m.UID}
			v.SelfStatus = m.Status
		}
		v.Members = append(v.Members, m)
	}
	return v
}

func mem(addr, uid, status string, up int, cid string) procs.Member {
	return procs.Member{Address: addr, UID: procs.UID(uid), Status: status, UpNumber: up, ClusterID: cid, Roles: []string{"admin", "driver"}, Reachable: true}
}

func TestClaims(t *testing.T) {
	a1 := mem("a", "1", procs.StatusUp, 1, "x")
	b2 := mem("b", "2", procs.StatusUp, 2, "x")
	c3 := mem("c", "3", procs.StatusUp, 3, "y")
	d4 := mem("d", "4", procs.StatusUp, 4, "y")
	aDown := mem("a", "1", procs.StatusDown, 1, "x")
	aLeaving := mem("a", "1", procs.StatusLeaving, 1, "x")
	noDriver := mem("e", "5", procs.StatusUp, 0, "x")
	noDriver.Roles = []string{"admin"}

	for _, tc := range []struct {
		name  string
		round []Observation
		want  []string // node names that claim
	}{
		{"agreeing pair", []Observation{{"A", mkView("a", a1, b2)}, {"B", mkView("b", a1, b2)}}, []string{"A"}},
		{"younger alone after the oldest was downed", []Observation{{"B", mkView("b", aDown, b2)}}, []string{"B"}},
		{"leaving oldest stops claiming", []Observation{{"A", mkView("a", aLeaving, b2)}}, nil},
		{"one claim per ClusterId", []Observation{{"A", mkView("a", a1, b2, c3, d4)}, {"C", mkView("c", a1, b2, c3, d4)}, {"D", mkView("d", a1, b2, c3, d4)}}, []string{"A", "C"}},
		{"silent node", []Observation{{"A", nil}, {"B", mkView("b", a1, b2)}}, nil},
		{"not yet a member", []Observation{{"A", &procs.ClusterView{SelfStatus: procs.StatusNone}}}, nil},
		{"node without the driver role", []Observation{{"E", mkView("e", noDriver)}}, nil},
		{"partitioned pair both alone", []Observation{{"A", mkView("a", a1)}, {"B", mkView("b", b2)}}, []string{"A", "B"}},
		{"up-number tie goes to the lower address", []Observation{{"B", mkView("b", mem("a", "1", procs.StatusUp, 1, "x"), mem("b", "2", procs.StatusUp, 1, "x"))}}, nil},
		{"ports compare as numbers", []Observation{
			{"P900", mkView("127.0.0.1:900", mem("127.0.0.1:900", "1", procs.StatusUp, 1, "x"), mem("127.0.0.1:10000", "2", procs.StatusUp, 1, "x"))},
			{"P10000", mkView("127.0.0.1:10000", mem("127.0.0.1:900", "1", procs.StatusUp, 1, "x"), mem("127.0.0.1:10000", "2", procs.StatusUp, 1, "x"))},
		}, []string{"P900"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range Claims(tc.round) {
				got = append(got, c.Node)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("claimers %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("claimers %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestOneOldestChecker(t *testing.T) {
	a1 := mem("a", "1", procs.StatusUp, 1, "x")
	b2 := mem("b", "2", procs.StatusUp, 2, "x")
	aDown := mem("a", "1", procs.StatusDown, 1, "x")
	pairAgree := []Observation{{"A", mkView("a", a1, b2)}, {"B", mkView("b", a1, b2)}}
	split := []Observation{{"A", mkView("a", a1)}, {"B", mkView("b", aDown, b2)}}
	handedOver := []Observation{{"A", nil}, {"B", mkView("b", aDown, b2)}}

	var c OneOldestChecker
	c.Round(pairAgree)
	c.Round(split) // one round: a near miss (sampling skew), not a violation
	c.Round(handedOver)
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("a one-round double claim was reported: %v", v)
	}
	if c.NearMisses() != 1 || c.Rounds() != 3 || c.ClaimRounds() != 3 {
		t.Fatalf("near misses %d, rounds %d, claim rounds %d; want 1, 3, 3", c.NearMisses(), c.Rounds(), c.ClaimRounds())
	}

	c.Round(split)
	c.Round(split) // the same two claimers twice in a row: dual-active
	v := c.Violations()
	if len(v) != 1 || v[0].ClusterID != "x" || len(v[0].Claimers) != 2 || v[0].Round != 5 {
		t.Fatalf("violations %v, want one in round 5 for ClusterId x with two claimers", v)
	}
}
