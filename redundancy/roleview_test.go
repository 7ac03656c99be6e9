package redundancy_test

import (
	"sync"
	"testing"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/redundancy"
)

type members struct {
	mu sync.Mutex
	st m.State
}

func (f *members) Self() m.UniqueAddress { return f.st.Self }
func (f *members) Snapshot() m.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}
func (f *members) Subscribe(func(m.Event)) (m.State, func()) { return f.Snapshot(), func() {} }
func (f *members) set(ms ...m.Member) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Gossip = m.NewGossip(ms...)
}

func up(host string, port int, uid uint64, cid string, roles ...string) m.Member {
	mb := m.NewMember(m.UniqueAddress{Host: host, Port: port, UID: uid}, roles, cid)
	mb.Status, mb.UpNumber = m.Up, int(uid)
	return mb
}

// TestRoleViewFeedsTheGate: what data-plane code gets when it asks the gate
// through the view, across the boot window and steady state.
func TestRoleViewFeedsTheGate(t *testing.T) {
	f := &members{st: m.State{Self: m.UniqueAddress{Host: "a", Port: 1, UID: 1}}}
	v := redundancy.NewRoleView(f, "pair")
	ask := func() (bool, gate.Reason) { return gate.ShouldServiceAsPrimary(v.State()) }

	// Lone driver before any snapshot: service (single-node posture).
	f.set(up("a", 1, 1, "pair", "driver"), up("x", 1, 9, "other", "driver"), up("adm", 1, 8, "pair", "admin"))
	if ok, _ := ask(); !ok || v.DriverMemberCount() != 1 {
		t.Fatalf("lone driver, role unknown: ok=%v drivers=%d", ok, v.DriverMemberCount())
	}
	// A driver peer in the same ClusterId joins: deny until a snapshot.
	f.set(up("a", 1, 1, "pair", "driver"), up("b", 1, 2, "pair", "driver"))
	if ok, r := ask(); ok || r != gate.DeniedRoleUnknown {
		t.Fatalf("two drivers, role unknown: %v %v", ok, r)
	}
	v.SetRole(redundancy.RolePrimary, 7)
	if ok, _ := ask(); !ok {
		t.Fatal("Primary denied")
	}
	if v.Epoch() != 7 {
		t.Fatalf("Epoch %d, want the snapshot's 7", v.Epoch())
	}
	v.SetRole(redundancy.RoleSecondary, 8)
	if ok, r := ask(); ok || r != gate.DeniedSecondary {
		t.Fatalf("Secondary: %v %v", ok, r)
	}
	v.SetRole(redundancy.RoleUnknown, 0)
	if ok, r := ask(); ok || r != gate.DeniedRoleUnknown {
		t.Fatalf("snapshot omitted this node: %v %v", ok, r)
	}
	// Downed (or leaving, or removed) after the last snapshot: never the
	// Primary again, even as the lone driver it now sees.
	for _, st := range []m.Status{m.Leaving, m.Exiting, m.Down} {
		self := up("a", 1, 1, "pair", "driver")
		self.Status = st
		f.set(self, up("b", 1, 2, "pair", "driver"))
		v.SetRole(redundancy.RoleUnknown, 0)
		if ok, r := ask(); ok || r != gate.DeniedSecondary {
			t.Fatalf("self %v: %v %v, want denied", st, ok, r)
		}
		v.SetRole(redundancy.RolePrimary, 9)
		if ok, _ := ask(); ok {
			t.Fatalf("self %v with a stale Primary snapshot: serviced", st)
		}
	}
	f.set(up("b", 1, 2, "pair", "driver")) // removed: no longer a member
	if ok, _ := ask(); ok {
		t.Fatal("a node no longer among the members is serviced")
	}
	// No membership at all: driver count 0.
	if ok, _ := gate.ShouldServiceAsPrimary(redundancy.NewRoleView(nil, "pair").State()); !ok {
		t.Fatal("a node without membership is denied")
	}
}

// TestRoleViewConcurrent: readers and the writer race freely (-race).
func TestRoleViewConcurrent(t *testing.T) {
	f := &members{}
	f.set(up("a", 1, 1, "pair", "driver"), up("b", 1, 2, "pair", "driver"))
	v := redundancy.NewRoleView(f, "pair")
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 1000 {
				if i == 0 {
					v.SetRole(redundancy.Role(j%4), uint64(j))
					continue
				}
				if r, n := v.State(); r > redundancy.RoleDetached || n != 2 {
					t.Errorf("State() = %v, %d", r, n)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestRoleViewJoiningNodeSeesItsPeer: a node joining a running pair sees
// one Up driver, its peer; counting itself, it is not the single-node
// posture and the gate denies until a snapshot names it.
func TestRoleViewJoiningNodeSeesItsPeer(t *testing.T) {
	f := &members{}
	f.st.Self = m.UniqueAddress{Host: "b", Port: 1, UID: 2}
	v := redundancy.NewRoleView(f, "pair")
	joining := m.NewMember(f.st.Self, []string{"driver"}, "pair") // Joining
	f.set(up("a", 1, 1, "pair", "driver"), joining)
	if n := v.DriverMemberCount(); n != 2 {
		t.Fatalf("joining next to an Up peer: %d driver members, want 2", n)
	}
	if ok, r := gate.ShouldServiceAsPrimary(v.State()); ok || r != gate.DeniedRoleUnknown {
		t.Fatalf("a joining node with an Up peer is served: %v %v", ok, r)
	}
	// Alone and joining: the single-node posture.
	f.set(joining)
	if ok, _ := gate.ShouldServiceAsPrimary(v.State()); !ok || v.DriverMemberCount() != 1 {
		t.Fatalf("a lone joining driver is denied (drivers %d)", v.DriverMemberCount())
	}
	// Once Up it is counted once.
	self := up("b", 1, 2, "pair", "driver")
	f.set(up("a", 1, 1, "pair", "driver"), self)
	if n := v.DriverMemberCount(); n != 2 {
		t.Fatalf("Up next to its peer: %d, want 2", n)
	}
}
