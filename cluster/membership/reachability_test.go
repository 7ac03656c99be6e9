package membership

import (
	"slices"
	"testing"
)

var (
	nodeA = UniqueAddress{Host: "a", Port: 2552, UID: 1}
	nodeB = UniqueAddress{Host: "b", Port: 2552, UID: 2}
	nodeC = UniqueAddress{Host: "c", Port: 2552, UID: 3}
	nodeD = UniqueAddress{Host: "d", Port: 2552, UID: 4}
	nodeE = UniqueAddress{Host: "e", Port: 2552, UID: 5}
)

// Ported from Akka.NET ReachabilitySpec.
func TestReachabilityTable(t *testing.T) {
	var empty Reachability
	if !empty.IsReachable(nodeA) || len(empty.AllUnreachable()) != 0 {
		t.Fatal("empty table: all reachable")
	}
	r := empty.Unreachable(nodeB, nodeA)
	if r.IsReachable(nodeA) || !slices.Equal(r.AllUnreachable(), []UniqueAddress{nodeA}) {
		t.Fatal("one observer unreachable makes the node unreachable")
	}
	term := empty.Terminated(nodeB, nodeA)
	if term.IsReachable(nodeA) || len(term.AllUnreachable()) != 0 || !slices.Equal(term.AllUnreachableOrTerminated(), []UniqueAddress{nodeA}) {
		t.Fatal("terminated: not reachable, not in AllUnreachable, in AllUnreachableOrTerminated")
	}
	if term.Reachable(nodeB, nodeA).Version(nodeB) != term.Version(nodeB) || term.Unreachable(nodeB, nodeA).StatusFrom(nodeB, nodeA) != Terminated {
		t.Fatal("a terminated entry never changes")
	}
	if r.Unreachable(nodeB, nodeA).Version(nodeB) != r.Version(nodeB) {
		t.Fatal("same status must not bump the version")
	}
	if r2 := empty.Unreachable(nodeB, nodeA).Unreachable(nodeC, nodeA).Reachable(nodeD, nodeA); r2.IsReachable(nodeA) {
		t.Fatal("unreachable when some observe unreachable and another reachable")
	}
	r3 := empty.Unreachable(nodeB, nodeA).Unreachable(nodeC, nodeA).
		Reachable(nodeB, nodeA).Reachable(nodeC, nodeA).
		Unreachable(nodeB, nodeC).Unreachable(nodeC, nodeB)
	if !r3.IsReachable(nodeA) {
		t.Fatal("reachable again when all observers see it reachable")
	}
}

func TestReachabilityExcludeDownedObservers(t *testing.T) {
	var r Reachability
	r = r.Unreachable(nodeC, nodeA).Reachable(nodeC, nodeA).
		Unreachable(nodeC, nodeB).
		Unreachable(nodeB, nodeA).Unreachable(nodeB, nodeC)
	if !slices.Equal(r.AllUnreachableOrTerminated(), []UniqueAddress{nodeA, nodeB, nodeC}) {
		t.Fatalf("all = %v", r.AllUnreachableOrTerminated())
	}
	if got := r.RemoveObservers([]UniqueAddress{nodeB}).AllUnreachableOrTerminated(); !slices.Equal(got, []UniqueAddress{nodeB}) {
		t.Fatalf("without B's observations = %v", got)
	}
}

func TestReachabilityPrunedWhenObserverAllReachable(t *testing.T) {
	var r Reachability
	r = r.Unreachable(nodeB, nodeA).Unreachable(nodeB, nodeC).
		Unreachable(nodeD, nodeC).
		Reachable(nodeB, nodeA).Reachable(nodeB, nodeC)
	if !r.IsReachable(nodeA) || r.IsReachable(nodeC) {
		t.Fatal("A reachable, C unreachable")
	}
	want := []Record{{nodeD, nodeC, Unreachable, 1}}
	if !slices.Equal(r.Records(), want) {
		t.Fatalf("records = %v, want %v", r.Records(), want)
	}
	r2 := r.Unreachable(nodeB, nodeD).Unreachable(nodeB, nodeE)
	want2 := []Record{{nodeB, nodeD, Unreachable, 5}, {nodeB, nodeE, Unreachable, 6}, {nodeD, nodeC, Unreachable, 1}}
	if !slices.Equal(r2.Records(), want2) {
		t.Fatalf("records = %v, want %v", r2.Records(), want2)
	}
}

func TestReachabilityAggregatedStatus(t *testing.T) {
	r := NewReachability([]Record{
		{nodeA, nodeB, Reachable, 2}, {nodeC, nodeB, Unreachable, 2},
		{nodeA, nodeD, Unreachable, 3}, {nodeD, nodeB, Terminated, 4},
	}, map[UniqueAddress]int64{nodeA: 3, nodeC: 3, nodeD: 4})
	if r.Status(nodeA) != Reachable || r.Status(nodeB) != Terminated || r.Status(nodeD) != Unreachable {
		t.Fatalf("statuses %v %v %v", r.Status(nodeA), r.Status(nodeB), r.Status(nodeD))
	}
}

func TestReachabilityMixOfNodes(t *testing.T) {
	var r Reachability
	r = r.Unreachable(nodeB, nodeA).Unreachable(nodeC, nodeA).Unreachable(nodeD, nodeA).
		Unreachable(nodeC, nodeB).Reachable(nodeC, nodeB).Unreachable(nodeD, nodeB).
		Unreachable(nodeD, nodeC).Reachable(nodeD, nodeC).
		Reachable(nodeE, nodeD).
		Unreachable(nodeA, nodeE).Terminated(nodeB, nodeE)
	checks := []struct {
		o, s UniqueAddress
		want ReachStatus
	}{
		{nodeB, nodeA, Unreachable}, {nodeC, nodeA, Unreachable}, {nodeD, nodeA, Unreachable},
		{nodeC, nodeB, Reachable}, {nodeD, nodeB, Unreachable},
		{nodeA, nodeE, Unreachable}, {nodeB, nodeE, Terminated},
	}
	for _, c := range checks {
		if got := r.StatusFrom(c.o, c.s); got != c.want {
			t.Errorf("%v -> %v = %v, want %v", c.o.Host, c.s.Host, got, c.want)
		}
	}
	if r.IsReachable(nodeA) || r.IsReachable(nodeB) || !r.IsReachable(nodeC) || !r.IsReachable(nodeD) || r.IsReachable(nodeE) {
		t.Fatal("aggregate reachability wrong")
	}
	if got := r.AllUnreachableFrom(nodeD); !slices.Equal(got, []UniqueAddress{nodeA, nodeB}) {
		t.Fatalf("unreachable from D = %v", got)
	}
}

func TestReachabilityMergeKeepsNewestRowsPerObserver(t *testing.T) {
	var base Reachability
	r1 := base.Unreachable(nodeB, nodeA).Unreachable(nodeB, nodeC) // B v2
	r2 := base.Unreachable(nodeB, nodeA).Unreachable(nodeC, nodeD) // B v1, C v1
	all := []UniqueAddress{nodeA, nodeB, nodeC, nodeD}
	for _, m := range []Reachability{r1.Merge(all, r2), r2.Merge(all, r1)} {
		if !slices.Equal(m.AllUnreachable(), []UniqueAddress{nodeA, nodeC, nodeD}) {
			t.Fatalf("merged unreachable = %v", m.AllUnreachable())
		}
		if m.Version(nodeB) != 2 || m.Version(nodeC) != 1 {
			t.Fatalf("versions %v", m.Versions())
		}
	}
	// restricted to the allowed members
	if m := r1.Merge([]UniqueAddress{nodeA, nodeB}, r2); !slices.Equal(m.AllUnreachable(), []UniqueAddress{nodeA}) {
		t.Fatalf("restricted merge = %v", m.AllUnreachable())
	}
	// a newer "all reachable again" (rows dropped, version bumped) wins
	healed := r1.Reachable(nodeB, nodeA).Reachable(nodeB, nodeC)
	if m := r1.Merge(all, healed); !m.IsAllReachable() {
		t.Fatalf("healed observer must win: %v", m)
	}
}
