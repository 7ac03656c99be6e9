package membership

import (
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

var hosts = []string{"a", "b", "c", "d", "e", "f", "g"}

// genMemberVersion draws one version of the member at host h as one side of
// a merge may hold it: its up-number is fixed per host (assigned once), its
// status anything; never-Up statuses carry NotUp.
func genMemberVersion(t *rapid.T, h string, up int, label string) Member {
	s := rapid.SampledFrom([]Status{Joining, WeaklyUp, Up, Leaving, Exiting, Down}).Draw(t, label)
	m := Member{Address: UniqueAddress{Host: h, Port: 2552, UID: 1}, Status: s, UpNumber: up, Roles: []string{"r"}}
	if s == Joining || s == WeaklyUp {
		m.UpNumber = NotUp
	}
	return m
}

func genGossipPair(t *rapid.T) (Gossip, Gossip) {
	var ma, mb []Member
	for _, h := range hosts {
		up := rapid.IntRange(1, 5).Draw(t, "up-"+h)
		if rapid.Bool().Draw(t, "in-a-"+h) {
			ma = append(ma, genMemberVersion(t, h, up, "a-"+h))
		}
		if rapid.Bool().Draw(t, "in-b-"+h) {
			mb = append(mb, genMemberVersion(t, h, up, "b-"+h))
		}
	}
	return NewGossip(ma...), NewGossip(mb...)
}

func sameMembers(x, y []Member) bool {
	return slices.EqualFunc(x, y, func(p, q Member) bool {
		return p.Address == q.Address && p.Status == q.Status && p.UpNumber == q.UpNumber
	})
}

// Gossip merge is commutative and idempotent on members.
func TestPropMergeCommutativeIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genGossipPair(t)
		ab, ba := a.Merge(b), b.Merge(a)
		if !sameMembers(ab.Members, ba.Members) {
			t.Fatalf("merge not commutative:\n a∪b %v\n b∪a %v", ab.Members, ba.Members)
		}
		if !sameMembers(a.Merge(a).Members, a.Members) {
			t.Fatalf("merge not idempotent: %v -> %v", a.Members, a.Merge(a).Members)
		}
		if err := ab.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		// each merged member is the higher-priority version of its inputs
		for _, m := range ab.Members {
			x, inA := a.Member(m.Address)
			y, inB := b.Member(m.Address)
			switch {
			case inA && inB:
				if want := HighestPriorityOf(x, y); want.Status != m.Status {
					t.Fatalf("%v merged to %v, want %v", m.Address, m.Status, want.Status)
				}
			case inA != inB && (m.Status == Down || m.Status == Exiting):
				t.Fatalf("%v is %v on one side only and must be dropped", m.Address, m.Status)
			}
		}
	})
}

// Oldest is a pure function of up-numbers (ties by address): it equals a
// brute-force sort, whatever the input order, and ignores members that are
// not Up, Leaving or Exiting or lack the role.
func TestPropOldestIsPureFunctionOfUpNumbers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var ms []Member
		for _, h := range hosts {
			if !rapid.Bool().Draw(t, "present-"+h) {
				continue
			}
			m := Member{
				Address:  UniqueAddress{Host: h, Port: rapid.IntRange(1, 3).Draw(t, "port-"+h), UID: 1},
				Status:   rapid.SampledFrom([]Status{Joining, WeaklyUp, Up, Leaving, Exiting, Down}).Draw(t, "st-"+h),
				UpNumber: rapid.IntRange(1, 4).Draw(t, "up-"+h),
			}
			if rapid.Bool().Draw(t, "driver-"+h) {
				m.Roles = []string{"driver"}
			}
			ms = append(ms, m)
		}
		role := rapid.SampledFrom([]string{"", "driver"}).Draw(t, "role")
		var eligible []Member
		for _, m := range ms {
			if (m.Status == Up || m.Status == Leaving || m.Status == Exiting) && m.HasRole(role) {
				eligible = append(eligible, m)
			}
		}
		slices.SortFunc(eligible, func(x, y Member) int {
			if x.UpNumber != y.UpNumber {
				return x.UpNumber - y.UpNumber
			}
			return x.Address.Address().Compare(y.Address.Address())
		})
		shuffled := rapid.Permutation(ms).Draw(t, "order")
		got, ok := Oldest(shuffled, role)
		if len(eligible) == 0 {
			if ok {
				t.Fatalf("oldest %v among no eligible member", got)
			}
			return
		}
		if !ok || got.Address != eligible[0].Address {
			t.Fatalf("Oldest = %v, brute force %v", got.Address, eligible[0].Address)
		}
	})
}

func TestPropVectorClockOrdering(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := func(label string) VectorClock {
			var vc VectorClock
			for _, n := range []string{"x", "y", "z"} {
				for i := rapid.IntRange(0, 3).Draw(t, label+n); i > 0; i-- {
					vc = vc.Increment(n)
				}
			}
			return vc
		}
		a, b := gen("a"), gen("b")
		inverse := map[Ordering]Ordering{Same: Same, Before: After, After: Before, Concurrent: Concurrent}
		if a.Compare(b) != inverse[b.Compare(a)] {
			t.Fatalf("%v vs %v: %v but reverse %v", a, b, a.Compare(b), b.Compare(a))
		}
		m := a.Merge(b)
		if c := a.Compare(m); c != Before && c != Same {
			t.Fatalf("a must not be after merge(a,b): %v", c)
		}
		if m.Compare(b.Merge(a)) != Same {
			t.Fatal("clock merge must be commutative")
		}
	})
}

// Gossip values are shared between nodes (and, in memory, between
// goroutines): no operation may modify its receiver or argument.
func TestPropGossipOperationsDoNotMutate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genGossipPair(t)
		var r Reachability
		for _, m := range a.Members {
			if rapid.Bool().Draw(t, "unreach-"+m.Address.Host) && len(a.Members) > 1 {
				r = r.Unreachable(a.Members[0].Address, m.Address)
			}
		}
		a = a.WithReachability(r).Increment("x")
		for _, m := range a.Members {
			a = a.WithSeen(m.Address)
		}
		snapA, snapB := deepCopy(a), deepCopy(b)
		_ = a.Merge(b)
		_ = b.Merge(a)
		_, _ = LeaderActionsOnConvergence(a, nil)
		for _, m := range a.Members {
			_ = a.UpdateMember(m)
			if CanTransition(m.Status, Down) {
				_ = a.MarkAsDown(m)
			}
			_ = a.Prune(VClockNode(m.Address))
			_ = a.Reachability.Reachable(a.Members[0].Address, m.Address)
			_ = a.Reachability.Terminated(a.Members[0].Address, m.Address)
			_ = a.Reachability.Remove([]UniqueAddress{m.Address})
		}
		_ = a.OnlySeen(UniqueAddress{}).MergeSeen(b).ClearSeen()
		_ = Diff(State{Gossip: a}, State{Gossip: b})
		if !gossipEqual(a, snapA) || !gossipEqual(b, snapB) {
			t.Fatal("an operation modified a shared gossip")
		}
	})
}

func gossipEqual(x, y Gossip) bool {
	return slices.EqualFunc(x.Members, y.Members, func(p, q Member) bool {
		return p.Address == q.Address && p.Status == q.Status && p.UpNumber == q.UpNumber &&
			p.ClusterID == q.ClusterID && slices.Equal(p.Roles, q.Roles)
	}) && slices.Equal(x.Seen, y.Seen) &&
		slices.Equal(x.Reachability.Records(), y.Reachability.Records()) &&
		reflect.DeepEqual(x.Reachability.Versions(), y.Reachability.Versions()) &&
		x.Version.String() == y.Version.String()
}

func deepCopy(g Gossip) Gossip {
	c := Gossip{Members: slices.Clone(g.Members), Seen: slices.Clone(g.Seen), Version: g.Version.Merge(VectorClock{})}
	for i := range c.Members {
		c.Members[i].Roles = slices.Clone(c.Members[i].Roles)
	}
	c.Reachability = NewReachability(g.Reachability.Records(), g.Reachability.Versions())
	return c
}
