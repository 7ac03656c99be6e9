package redundancy

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// deviceRig is a pubRig whose node counts devices, rates them and decides
// device hand-overs (Redundancy:DeviceHealth failover, After 10 s, Hold 0).
type deviceRig struct {
	*pubRig
	reached atomic.Int32 // of 1 device
	mu      sync.Mutex
	reasons []string // HandOver calls
}

func newDeviceRig(t *testing.T) *deviceRig {
	r := &deviceRig{pubRig: newPubRig(t)}
	r.reached.Store(1)
	r.actor.o.Devices = func() (int, int) { return int(r.reached.Load()), 1 }
	r.actor.o.DeviceLevel = true
	r.actor.o.DeviceFailover = &DeviceFailover{After: 10 * time.Second, Hold: 0}
	r.actor.o.HandOver = func(reason string) {
		r.mu.Lock()
		r.reasons = append(r.reasons, reason)
		r.mu.Unlock()
	}
	return r
}

func (r *deviceRig) handOvers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reasons)
}

// peerDevices publishes the peer's NodeStatus with its device count.
func (r *deviceRig) peerDevices(reached int) {
	r.bus.Publish(wire.Topic, NodeInfo{NodeID: peerNode, UID: 1, ClusterID: "pair", ApplicationURI: "urn:a",
		ServiceLevel: 240, At: r.clock.Now(), DevicesReached: reached, DevicesTotal: 1}.ToWire())
}

// healthyTick keeps the Config DB verdict and the snapshot (Primary)
// fresh, then ticks.
func (r *deviceRig) healthyTick(t *testing.T) {
	t.Helper()
	r.db.set(true, r.clock.Now())
	r.snapshot(RolePrimary, 2)
	r.settle(t)
	r.tick(t)
}

// lastAdvertised is this node's latest NodeStatus device counts.
func (r *deviceRig) lastAdvertised() (reached, total uint32) {
	st := all[*wire.NodeStatus](r.bus)
	for i := len(st) - 1; i >= 0; i-- {
		if st[i].GetNodeId() == selfNode {
			return st[i].GetDevicesReached(), st[i].GetDevicesTotal()
		}
	}
	return 0, 0
}

// TestPublishActorDeviceHealth: the node advertises its device counts; a
// Primary that loses the device its peer still reaches drops to 2 at the
// next compute and, after After of being behind, asks for one hand-over;
// a peer that lost it too restores 250 and no hand-over follows.
func TestPublishActorDeviceHealth(t *testing.T) {
	r := newDeviceRig(t)
	r.start(t)
	r.members.set(r.peer, r.self)
	r.db.set(true, r.clock.Now())
	r.actor.NotifyDbChanged()
	r.snapshot(RolePrimary, 2)
	r.wantLevel(t, 250)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("1 of 1 advertised", func() bool {
		reached, total := r.lastAdvertised()
		return reached == 1 && total == 1
	}))

	// The peer reaches the device too: nothing moves.
	r.peerDevices(1)
	r.settle(t)
	r.healthyTick(t)
	r.wantLevel(t, 250)

	// This node loses it: the next compute (a tick) shows 2 and
	// advertises 0 of 1.
	r.reached.Store(0)
	r.healthyTick(t)
	r.wantLevel(t, 2)
	if reached, total := r.lastAdvertised(); reached != 0 || total != 1 {
		t.Fatalf("advertised %d of %d after the loss", reached, total)
	}
	if h := r.handOvers(); len(h) != 0 {
		t.Fatalf("hand-over before DeviceFailoverAfter: %v", h)
	}
	// Behind for 10 s at the first of two more ticks (the peer's news
	// kept fresh): one hand-over; none at the second tick, 5 s later
	// (Hold 0 here: a repeat needs another DeviceFailoverAfter).
	for range 2 {
		r.peerDevices(1)
		r.settle(t)
		r.healthyTick(t)
	}
	r.settle(t)
	if h := r.handOvers(); len(h) != 1 {
		t.Fatalf("hand-overs %v, want exactly one", h)
	}

	// The peer loses the device as well: both reach 0, 250 again.
	r.peerDevices(0)
	r.settle(t)
	r.healthyTick(t)
	r.wantLevel(t, 250)
}

// TestPublishActorDeviceHealthOff: without DeviceLevel the counts are
// advertised but change no level, and without DeviceFailover nothing is
// handed over.
func TestPublishActorDeviceHealthOff(t *testing.T) {
	r := newDeviceRig(t)
	r.actor.o.DeviceLevel = false
	r.actor.o.DeviceFailover = nil
	r.start(t)
	r.members.set(r.peer, r.self)
	r.db.set(true, r.clock.Now())
	r.actor.NotifyDbChanged()
	r.snapshot(RolePrimary, 2)
	r.wantLevel(t, 250)
	r.reached.Store(0)
	for range 4 {
		r.peerDevices(1)
		r.settle(t)
		r.healthyTick(t)
	}
	if got := r.levels.last(); got != 250 {
		t.Fatalf("level %d with device health off", got)
	}
	if reached, total := r.lastAdvertised(); reached != 0 || total != 1 {
		t.Fatalf("advertised %d of %d", reached, total)
	}
	if h := r.handOvers(); len(h) != 0 {
		t.Fatalf("hand-over with device health off: %v", h)
	}
}

// TestNodeInfoDeviceCounts: the counts survive the wire; a count above the
// total is clamped, and an older node's NodeStatus (no fields) reads 0 of 0.
func TestNodeInfoDeviceCounts(t *testing.T) {
	in := NodeInfo{NodeID: peerNode, UID: 1, ClusterID: "pair", DevicesReached: 3, DevicesTotal: 4}
	got, err := NodeInfoFromWire(in.ToWire())
	if err != nil || got.DevicesReached != 3 || got.DevicesTotal != 4 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	got, err = NodeInfoFromWire(&wire.NodeStatus{NodeId: peerNode, DevicesReached: 9, DevicesTotal: 2})
	if err != nil || got.DevicesReached != 2 || got.DevicesTotal != 2 {
		t.Fatalf("reached above total: %+v, %v", got, err)
	}
	got, err = NodeInfoFromWire(&wire.NodeStatus{NodeId: peerNode})
	if err != nil || got.DevicesReached != 0 || got.DevicesTotal != 0 {
		t.Fatalf("older node: %+v, %v", got, err)
	}
}
