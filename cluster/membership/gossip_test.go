package membership

import (
	"slices"
	"strconv"
	"testing"
)

// members as in Akka.NET GossipSpec: up-number 0, uid per address.
func gm(u UniqueAddress, s Status) Member { return Member{Address: u, Status: s} }

var (
	a1 = gm(nodeA, Up)
	a2 = gm(nodeA, Joining)
	b1 = gm(nodeB, Up)
	c1 = gm(nodeC, Leaving)
	c2 = gm(nodeC, Up)
	c3 = gm(nodeC, Exiting)
	d1 = gm(nodeD, Leaving)
	e1 = gm(nodeE, Joining)
	e2 = gm(nodeE, Up)
	e3 = gm(nodeE, Down)
)

func st(g Gossip, self UniqueAddress) State { return State{Gossip: g, Self: self} }

// Ported from Akka.NET GossipSpec.
func TestConvergence(t *testing.T) {
	none := []UniqueAddress(nil)
	withR := func(g Gossip, r Reachability) Gossip { return g.WithReachability(r) }
	var r0 Reachability
	cases := []struct {
		name      string
		g         Gossip
		self      UniqueAddress
		confirmed []UniqueAddress
		want      bool
	}{
		{"empty", Gossip{}, nodeA, none, true},
		{"one node", NewGossip(a1).WithSeen(nodeA), nodeA, none, true},
		{"not until all have seen", NewGossip(a1, b1).WithSeen(nodeA), nodeA, none, false},
		{"two nodes", NewGossip(a1, b1).WithSeen(nodeA).WithSeen(nodeB), nodeA, none, true},
		{"skipping joining", NewGossip(a1, b1, e1).WithSeen(nodeA).WithSeen(nodeB), nodeA, none, true},
		{"skipping down", NewGossip(a1, b1, e3).WithSeen(nodeA).WithSeen(nodeB), nodeA, none, true},
		{"skipping leaving with exiting confirmed", NewGossip(a1, b1, c1).WithSeen(nodeA).WithSeen(nodeB), nodeA, []UniqueAddress{nodeC}, true},
		{"leaving not confirmed blocks", NewGossip(a1, b1, c1).WithSeen(nodeA).WithSeen(nodeB), nodeA, none, false},
		{"skipping unreachable leaving with exiting confirmed",
			withR(NewGossip(a1, b1, c1), r0.Unreachable(nodeB, nodeC)).WithSeen(nodeA).WithSeen(nodeB), nodeA, []UniqueAddress{nodeC}, true},
		{"not when unreachable (from b)", withR(NewGossip(a1, b1), r0.Unreachable(nodeB, nodeA)).WithSeen(nodeA).WithSeen(nodeB), nodeB, none, false},
		{"a ignores its own unreachability", withR(NewGossip(a1, b1), r0.Unreachable(nodeB, nodeA)).WithSeen(nodeA).WithSeen(nodeB), nodeA, none, true},
		{"downed observer ignored", withR(NewGossip(a1, b1, e3), r0.Unreachable(nodeE, nodeA)).WithSeen(nodeA).WithSeen(nodeB).WithSeen(nodeE), nodeB, none, true},
		{"unreachable down member ignored", withR(NewGossip(a1, b1, e3), r0.Unreachable(nodeA, nodeE)).WithSeen(nodeA).WithSeen(nodeB), nodeB, none, true},
		{"unreachable exiting member ignored", withR(NewGossip(a1, b1, c3), r0.Unreachable(nodeA, nodeC)).WithSeen(nodeA).WithSeen(nodeB), nodeB, none, true},
		{"unreachable up member blocks", withR(NewGossip(a1, b1, c2), r0.Unreachable(nodeA, nodeC)).WithSeen(nodeA).WithSeen(nodeB).WithSeen(nodeC), nodeB, none, false},
	}
	for _, c := range cases {
		if got := st(c.g, c.self).Convergence(c.confirmed); got != c.want {
			t.Errorf("%s: convergence = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestMergeMembersByStatusPriority(t *testing.T) {
	g1 := NewGossip(a1, c1, e1)
	g2 := NewGossip(a2, c2, e2)
	for _, m := range []Gossip{g1.Merge(g2), g2.Merge(g1)} {
		var got []Status
		for _, x := range m.Members {
			got = append(got, x.Status)
		}
		if !slices.Equal(got, []Status{Up, Leaving, Up}) {
			t.Fatalf("merged statuses = %v, want [Up Leaving Up]", got)
		}
	}
}

func TestMergeUnreachable(t *testing.T) {
	var r0 Reachability
	g1 := NewGossip(a1, b1, c1).WithReachability(r0.Unreachable(nodeB, nodeA).Unreachable(nodeB, nodeC))
	g2 := NewGossip(a1, b1, c1, d1).WithReachability(r0.Unreachable(nodeA, nodeD))
	m1, m2 := g1.Merge(g2), g2.Merge(g1)
	want := []UniqueAddress{nodeA, nodeC, nodeD}
	if !slices.Equal(m1.Reachability.AllUnreachable(), want) || !slices.Equal(m2.Reachability.AllUnreachable(), want) {
		t.Fatalf("merged unreachable %v / %v", m1.Reachability.AllUnreachable(), m2.Reachability.AllUnreachable())
	}
}

func TestMergeDropsRemovedMembers(t *testing.T) {
	var r0 Reachability
	r1 := r0.Unreachable(nodeB, nodeA)
	g1 := NewGossip(a1, b1).WithReachability(r1)
	g2 := NewGossip(a1, b1, c3).WithReachability(r1.Unreachable(nodeB, nodeC)) // c3 Exiting, removed in g1
	for _, m := range []Gossip{g1.Merge(g2), g2.Merge(g1)} {
		if len(m.Members) != 2 || m.HasMember(nodeC) {
			t.Fatalf("members = %v", m.Members)
		}
		if !slices.Equal(m.Reachability.AllUnreachable(), []UniqueAddress{nodeA}) {
			t.Fatalf("unreachable = %v", m.Reachability.AllUnreachable())
		}
	}
}

func TestMergeClearsSeen(t *testing.T) {
	g1 := NewGossip(a1, b1, c1, d1).Increment("x").WithSeen(nodeA).WithSeen(nodeB)
	g2 := NewGossip(a1, b1, c1, d1).Increment("x").WithSeen(nodeA).WithSeen(nodeC)
	if m := g1.Merge(g2); len(m.Seen) != 0 {
		t.Fatalf("seen after merge = %v", m.Seen)
	}
}

func TestLeader(t *testing.T) {
	cases := []struct {
		g    Gossip
		want UniqueAddress
		ok   bool
	}{
		{NewGossip(c2, e2), nodeC, true},
		{NewGossip(c3, e2), nodeE, true}, // Exiting is not preferred
		{NewGossip(c3), nodeC, true},
		{NewGossip(e3), UniqueAddress{}, false}, // a Down member is never leader
		{NewGossip(a2, e1), nodeA, true},        // only Joining: lowest address
	}
	for i, c := range cases {
		got, ok := st(c.g, nodeA).Leader()
		if got != c.want || ok != c.ok {
			t.Errorf("case %d: leader %v %v, want %v %v", i, got, ok, c.want, c.ok)
		}
	}
	// unreachable members are skipped, except self
	var r0 Reachability
	g := NewGossip(a1, b1, c2).WithReachability(r0.Unreachable(nodeC, nodeA))
	if l, _ := st(g, nodeB).Leader(); l != nodeB {
		t.Fatalf("leader seen from b = %v, want b (a unreachable)", l)
	}
	if l, _ := st(g, nodeA).Leader(); l != nodeA {
		t.Fatalf("leader seen from a = %v, want a (self always reachable)", l)
	}
}

func TestRoleLeaderAndOldestDiffer(t *testing.T) {
	// b restarted: its new incarnation is the youngest but has the lowest
	// address, so the role leader (lowest address) is not the oldest.
	a := NewMember(nodeA, []string{"driver"}, "").WithUp(3)
	b := NewMember(nodeB, []string{"driver"}, "").WithUp(2)
	s := st(NewGossip(a, b), nodeA)
	if rl, _ := s.RoleLeader("driver"); rl != nodeA {
		t.Fatalf("role leader = %v", rl)
	}
	if o, _ := s.Oldest("driver"); o.Address != nodeB {
		t.Fatalf("oldest = %v", o.Address)
	}
	if _, ok := s.RoleLeader("nope"); ok {
		t.Fatal("no role leader for an unknown role")
	}
}

func TestYoungestUpNumber(t *testing.T) {
	if got := NewGossip(a2, b1.WithUp(3), e1).YoungestUpNumber(); got != 3 {
		t.Fatalf("youngest = %d", got)
	}
	if got := NewGossip(a2, e1).YoungestUpNumber(); got != 0 {
		t.Fatalf("youngest without Up members = %d", got)
	}
}

func TestOldest(t *testing.T) {
	mk := func(u UniqueAddress, s Status, up int, roles ...string) Member {
		return Member{Address: u, Status: s, UpNumber: up, Roles: roles}
	}
	ms := []Member{
		mk(nodeA, Up, 3, "driver"),
		mk(nodeB, Joining, NotUp, "driver"),
		mk(nodeC, Down, 1, "driver"),
		mk(nodeD, Leaving, 2),
		mk(nodeE, Exiting, 3, "driver"),
	}
	cases := []struct {
		role string
		want UniqueAddress
	}{
		{"driver", nodeA}, // C is Down, B never Up; A and E tie on 3, A has the lower address
		{"", nodeD},
	}
	for _, c := range cases {
		if o, ok := Oldest(ms, c.role); !ok || o.Address != c.want {
			t.Errorf("Oldest(%q) = %v %v, want %v", c.role, o.Address, ok, c.want)
		}
	}
	if _, ok := Oldest(ms[1:3], "driver"); ok {
		t.Fatal("no oldest among Joining and Down members")
	}
}

func TestLeaderActionsOnConvergence(t *testing.T) {
	var r0 Reachability
	up1 := NewMember(nodeA, nil, "").WithUp(1)
	leaving := NewMember(nodeB, nil, "").WithUp(2).WithStatus(Leaving)
	joinC := NewMember(nodeC, nil, "")
	joinD := NewMember(nodeD, nil, "")
	downE := NewMember(nodeE, nil, "").WithUp(3).WithStatus(Down)
	g := NewGossip(up1, leaving, joinC, joinD, downE).
		WithReachability(r0.Unreachable(nodeA, nodeE)).
		Increment(VClockNode(nodeA)).Increment(VClockNode(nodeE)).
		WithSeen(nodeA).WithSeen(nodeB).WithSeen(nodeE)
	got, changed := LeaderActionsOnConvergence(g, nil)
	if !changed {
		t.Fatal("expected changes")
	}
	want := map[UniqueAddress]string{nodeA: "Up 1", nodeB: "Exiting 2", nodeC: "Up 4", nodeD: "Up 5"}
	if len(got.Members) != len(want) {
		t.Fatalf("members = %v", got.Members)
	}
	for _, m := range got.Members {
		if s := m.Status.String() + " " + strconv.Itoa(m.UpNumber); s != want[m.Address] {
			t.Errorf("%v: %s, want %s", m.Address.Host, s, want[m.Address])
		}
	}
	if got.HasMember(nodeE) || got.SeenBy(nodeE) || !got.Reachability.IsAllReachable() || got.Version.Get(VClockNode(nodeE)) != 0 {
		t.Fatal("the unreachable Down member must be removed from members, seen, reachability and the clock")
	}
	if got.Version.Get(VClockNode(nodeA)) != 1 {
		t.Fatal("other clock entries stay")
	}
	// Exiting with a confirmed exit is removed even while reachable
	ex := NewMember(nodeB, nil, "").WithUp(2).WithStatus(Leaving).WithStatus(Exiting)
	g2 := NewGossip(up1, ex)
	if got, _ := LeaderActionsOnConvergence(g2, []UniqueAddress{nodeB}); got.HasMember(nodeB) {
		t.Fatal("confirmed Exiting member must be removed")
	}
	if _, changed := LeaderActionsOnConvergence(NewGossip(up1), nil); changed {
		t.Fatal("nothing to do must report no change")
	}
}

func TestDiffEvents(t *testing.T) {
	var r0 Reachability
	a := NewMember(nodeA, []string{"driver"}, "").WithUp(1)
	b := NewMember(nodeB, []string{"driver"}, "").WithUp(2)
	old := st(NewGossip(a, b), nodeB)
	newG := NewGossip(a.WithStatus(Down), b).WithReachability(r0.Unreachable(nodeB, nodeA))
	evs := Diff(old, st(newG, nodeB))
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.String())
	}
	want := []string{
		"UnreachableMember a:2552#1",
		"MemberDowned a:2552#1",
		"LeaderChanged b:2552#2",
		"RoleLeaderChanged driver=b:2552#2",
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events:\n%v\nwant\n%v", kinds, want)
	}
	// removal and self-down
	evs = Diff(st(NewGossip(a, b), nodeB), st(NewGossip(b.WithStatus(Down)), nodeB))
	kinds = nil
	for _, e := range evs {
		kinds = append(kinds, e.Kind.String())
	}
	if !slices.Equal(kinds, []string{"MemberDowned", "MemberRemoved", "LeaderChanged", "RoleLeaderChanged", "SelfDowned"}) {
		t.Fatalf("events = %v", kinds)
	}
}
