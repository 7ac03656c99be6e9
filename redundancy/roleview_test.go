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
	ask := func() (bool, gate.Reason) { d := gate.Decide(v.Input()); return d.Allow, d.Reason }

	// Lone driver before any snapshot: service (single-node posture).
	f.set(up("a", 1, 1, "pair", "driver"), up("x", 1, 9, "other", "driver"), up("adm", 1, 8, "pair", "admin"))
	if ok, _ := ask(); !ok || v.Input().Drivers != 1 {
		t.Fatalf("lone driver, role unknown: ok=%v drivers=%d", ok, v.Input().Drivers)
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
	if d := gate.Decide(redundancy.NewRoleView(nil, "pair").Input()); !d.Allow {
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
				if in := v.Input(); in.Role > redundancy.RoleDetached || in.Drivers != 2 {
					t.Errorf("Input() = %v, %d drivers", in.Role, in.Drivers)
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
	if n := v.Input().Drivers; n != 2 {
		t.Fatalf("joining next to an Up peer: %d driver members, want 2", n)
	}
	if d := gate.Decide(v.Input()); d.Allow || d.Reason != gate.DeniedRoleUnknown {
		t.Fatalf("a joining node with an Up peer is served: %+v", d)
	}
	// Alone and joining: the single-node posture.
	f.set(joining)
	if d := gate.Decide(v.Input()); !d.Allow || v.Input().Drivers != 1 {
		t.Fatalf("a lone joining driver is denied (drivers %d)", v.Input().Drivers)
	}
	// Once Up it is counted once.
	self := up("b", 1, 2, "pair", "driver")
	f.set(up("a", 1, 1, "pair", "driver"), self)
	if n := v.Input().Drivers; n != 2 {
		t.Fatalf("Up next to its peer: %d, want 2", n)
	}
}

// TestRoleViewInputBeforeAndAfterJoining: what the gate gets from a node
// restarted into a running pair: not a member (empty gossip), no driver
// member, denied unless it is alone by configuration; a member once it is
// Joining; Secondary once removed.
func TestRoleViewInputBeforeAndAfterJoining(t *testing.T) {
	f := &members{}
	f.st.Self = m.UniqueAddress{Host: "b", Port: 1, UID: 2}
	v := redundancy.NewRoleView(f, "pair")
	in := v.Input()
	if in.Member || in.Drivers != 0 || in.Alone || in.Role != redundancy.RoleUnknown || in.Licence != gate.Licensed {
		t.Fatalf("before joining: %+v", in)
	}
	if d := gate.Decide(in); d.Allow || d.Reason != gate.DeniedNotMember {
		t.Fatalf("before joining, in a pair: %+v", d)
	}
	v.SetAlone(true)
	if d := gate.Decide(v.Input()); !d.Allow || !v.Input().Alone {
		t.Fatalf("before forming, a single-node set: %+v", d)
	}
	v.SetAlone(false)
	joining := m.NewMember(f.st.Self, []string{"driver"}, "pair")
	f.set(up("a", 1, 1, "pair", "driver"), joining)
	if in := v.Input(); !in.Member || in.Drivers != 2 || in.Role != redundancy.RoleUnknown {
		t.Fatalf("joining: %+v", in)
	}
	v.SetRole(redundancy.RoleSecondary, 4)
	if d := gate.Decide(v.Input()); d.Allow || d.Reason != gate.DeniedSecondary {
		t.Fatalf("named Secondary: %+v", d)
	}
	f.set(up("a", 1, 1, "pair", "driver"))
	if in := v.Input(); in.Member || in.Role != redundancy.RoleSecondary {
		t.Fatalf("removed: %+v", in)
	}
	if in := redundancy.NewRoleView(nil, "pair").Input(); in.Member || !in.Alone || in.Drivers != 0 {
		t.Fatalf("no cluster at all: %+v", in)
	}
}

// TestRoleViewLicence: the licence is asked for the Primary only and is
// an input of its own, and an unlicensed Primary is fenced.
func TestRoleViewLicence(t *testing.T) {
	f := &members{st: m.State{Self: m.UniqueAddress{Host: "a", Port: 1, UID: 1}}}
	f.set(up("a", 1, 1, "pair", "driver"), up("b", 1, 2, "pair", "driver"))
	v := redundancy.NewRoleView(f, "pair")
	asked, licence := 0, gate.Holding
	v.SetLicence(func() gate.Licence { asked++; return licence })
	v.SetRole(redundancy.RoleSecondary, 3)
	if in := v.Input(); in.Licence != gate.Licensed || asked != 0 {
		t.Fatalf("Secondary: licence %v, asked %d times", in.Licence, asked)
	}
	v.SetRole(redundancy.RolePrimary, 4)
	in := v.Input()
	if in.Role != redundancy.RolePrimary || in.Licence != gate.Holding || asked != 1 {
		t.Fatalf("Primary on hold: %+v, asked %d", in, asked)
	}
	if d := gate.Decide(in); d.Allow || d.Reason != gate.DeniedFenced {
		t.Fatalf("Primary on hold: %+v", d)
	}
	licence = gate.Licensed
	if d := gate.Decide(v.Input()); !d.Allow || d.Epoch != 4 {
		t.Fatalf("licensed Primary: %+v", d)
	}
}

// TestRoleViewWoken: the woken-process fence is an input of every role —
// a Primary named by a snapshot from before the freeze is denied with the
// reason woken until the fence is down — and without SetWoken a node is
// never woken.
func TestRoleViewWoken(t *testing.T) {
	f := &members{st: m.State{Self: m.UniqueAddress{Host: "a", Port: 1, UID: 1}}}
	f.set(up("a", 1, 1, "pair", "driver"), up("b", 1, 2, "pair", "driver"))
	v := redundancy.NewRoleView(f, "pair")
	v.SetRole(redundancy.RolePrimary, 5)
	if in := v.Input(); in.Woken {
		t.Fatal("woken without a fence installed")
	}
	woken := true
	v.SetWoken(func() bool { return woken })
	for _, r := range []redundancy.Role{redundancy.RolePrimary, redundancy.RoleSecondary, redundancy.RoleUnknown} {
		v.SetRole(r, 5)
		if d := gate.Decide(v.Input()); d.Allow || d.Reason != gate.DeniedWoken {
			t.Fatalf("%v woken: %+v", r, d)
		}
	}
	v.SetRole(redundancy.RolePrimary, 6)
	woken = false
	if d := gate.Decide(v.Input()); !d.Allow || d.Epoch != 6 {
		t.Fatalf("Primary after the fence came down: %+v", d)
	}
}

// TestRoleViewNamesThePrimaryOfItsClusterId: the Primary a forwarded
// request goes to is the snapshot's Primary of this node's ClusterId, with
// the ClusterId's epoch, and none once a snapshot names none.
func TestRoleViewNamesThePrimaryOfItsClusterId(t *testing.T) {
	v := redundancy.NewRoleView(nil, "line-1")
	if _, ok := v.Primary(); ok {
		t.Fatal("a Primary before any snapshot")
	}
	s := redundancy.Snapshot{
		Entries: map[string]redundancy.Entry{
			"10.0.0.1:4053": {NodeID: "10.0.0.1:4053", UID: 7, ClusterID: "line-2", Role: redundancy.RolePrimary, IsDriverPrimary: true},
			"10.0.0.2:4053": {NodeID: "10.0.0.2:4053", UID: 8, ClusterID: "line-1", Role: redundancy.RolePrimary, IsDriverPrimary: true, ApplicationURI: "urn:b"},
			"10.0.0.3:4053": {NodeID: "10.0.0.3:4053", UID: 9, ClusterID: "line-1", Role: redundancy.RoleSecondary},
		},
		Epochs: redundancy.EpochBook{"line-1": {Epoch: 12}, "line-2": {Epoch: 30}},
	}
	v.SetPrimaryFrom(s)
	p, ok := v.Primary()
	if want := (redundancy.PrimaryRef{NodeID: "10.0.0.2:4053", UID: 8, ApplicationURI: "urn:b", Epoch: 12}); !ok || p != want {
		t.Fatalf("Primary() = %+v %v, want %+v", p, ok, want)
	}
	delete(s.Entries, "10.0.0.2:4053")
	v.SetPrimaryFrom(s)
	if p, ok := v.Primary(); ok {
		t.Fatalf("Primary() = %+v after a snapshot naming none", p)
	}
}
