package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/actors/actorstest"
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// newTestTree is a node's supervision tree with the fault hook on and a
// 1 ms back-off (wall clock), shut down at the end of the test.
func newTestTree(t *testing.T, name string) *actors.Tree {
	t.Helper()
	sys := actors.NewLocal(slog.New(slog.DiscardHandler))
	tree, err := actors.NewTree(sys, actors.TreeOptions{Name: name, Faults: true, InitialBackoff: time.Millisecond,
		OnGiveUp: func(path string, reason any) { t.Errorf("gave up on %s: %v", path, reason) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Shutdown(); sys.Shutdown(false) })
	return tree
}

// TestDbProbeActorRestartsAndProbesAgain: a panic in the probe actor
// restarts it under the tree; the new incarnation pings at once (the fake
// clock does not move), Last keeps the old verdict until the new one, and
// the actor answers DbHealthQuery again.
func TestDbProbeActorRestartsAndProbesAgain(t *testing.T) {
	actorstest.NoLeaks(t)
	tree := newTestTree(t, "n1")
	clock := clockwork.NewFakeClockAt(probeT0)
	pinger := newFakePinger(clock)
	p, err := NewDbProbe(pinger, DbProbeConfig{Parent: tree, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	r := &probeRig{t: t, clock: clock, pinger: pinger, probe: p}
	const path = "n1/" + DbProbeName
	if p.PID().Id != path {
		t.Fatalf("PID %v, want %s", p.PID(), path)
	}

	r.nextCall().reply <- nil
	first := r.resultAt(probeT0)
	if i, ok := tree.Actor(path); !ok || i.Kind != DbProbeKind || i.Restarts != 0 {
		t.Fatalf("tree lists %+v, %v", i, ok)
	}

	if err := tree.Fault(path, "x"); err != nil {
		t.Fatal(err)
	}
	c := r.nextCall() // promptly, without a tick
	if !c.at.Equal(probeT0) {
		t.Fatalf("the restarted actor pinged at +%v, want at once", c.at.Sub(probeT0))
	}
	if got, ok := p.Last(); !ok || got != first {
		t.Fatalf("Last() during the new probe = %+v, %v; want the old verdict %+v", got, ok, first)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("restart counted", func() bool { i, _ := tree.Actor(path); return i.Restarts == 1 }))
	ask := func(q any) *redundancy.DbHealthReply {
		t.Helper()
		rep, err := actors.Ask[*redundancy.DbHealthReply](tree.Root(), p.PID(), q, redundancy.DbAskTimeout)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := ask(&redundancy.DbHealthQuery{}); !rep.Known || !rep.Status.Reachable || !rep.Status.AsOf.Equal(probeT0) {
		t.Fatalf("answer while the new probe runs = %+v, want the old verdict", rep)
	}

	clock.Advance(time.Second)
	c.reply <- errors.New("refused")
	r.resultAt(probeT0.Add(time.Second))
	rep := ask(&redundancy.DbHealthQuery{})
	if !rep.Known || rep.Status.Reachable || rep.Status.Err != "refused" || !rep.Status.AsOf.Equal(probeT0.Add(time.Second)) {
		t.Fatalf("answer after the new probe = %+v", rep)
	}
	if rep := ask(redundancy.DbHealthQuery{}); rep.Status.Err != "refused" {
		t.Fatalf("answer to the value query = %+v", rep)
	}

	// One timer: the old incarnation's ticks stopped, so the next Interval
	// brings exactly one Ping.
	clock.Advance(DefaultDbProbeInterval)
	r.nextCall().reply <- nil
	r.noCall("one tick, one Ping")
	if m := pinger.maxInFlight.Load(); m != 1 {
		t.Fatalf("%d Ping calls overlapped", m)
	}
}

// peerRig is a PeerProbeSupervisor under a tree, on a fake clock, with two
// peers (h:2 and h:3) from a snapshot.
type peerRig struct {
	tree   *actors.Tree
	clock  *clockwork.FakeClock
	bus    *fakeBus
	prober *fakeProber
	sup    *PeerProbeSupervisor
}

const (
	peerEpB = "opc.tcp://127.0.0.1:4842"
	peerEpC = "opc.tcp://127.0.0.1:4843"
)

func newPeerRig(t *testing.T, treeName string) *peerRig {
	t.Helper()
	r := &peerRig{tree: newTestTree(t, treeName), clock: clockwork.NewFakeClockAt(probeT0),
		bus: &fakeBus{subs: map[int]func(m.UniqueAddress, proto.Message){}}, prober: &fakeProber{calls: map[string]int{}, bad: map[string]bool{}}}
	self := m.UniqueAddress{Host: "127.0.0.1", Port: 4001, UID: 1}
	members := &fakeMembers{st: m.State{Self: self}, subs: map[int]func(m.Event){}}
	members.set(upMember("127.0.0.1", 4001, 1, m.Up), upMember("127.0.0.1", 4002, 2, m.Up), upMember("127.0.0.1", 4003, 3, m.Up))
	r.sup = NewPeerProbeSupervisor(PeerProbeOptions{Membership: members, PubSub: r.bus, Probe: r.prober.probe,
		Clock: r.clock, Parent: r.tree})
	r.sup.Start(context.Background())
	t.Cleanup(r.sup.Stop)
	_ = r.bus.Publish(wire.Topic, snap(entry("127.0.0.1:4001", 1, redundancy.RolePrimary, "opc.tcp://127.0.0.1:4841"),
		entry("127.0.0.1:4002", 2, redundancy.RoleSecondary, peerEpB),
		entry("127.0.0.1:4003", 3, redundancy.RoleSecondary, peerEpC)).ToWire())
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("both peers probed", func() bool { return r.prober.count(peerEpB) == 1 && r.prober.count(peerEpC) == 1 }))
	return r
}

// results counts the published results about target.
func (r *peerRig) results(target string) int {
	n := 0
	for _, res := range r.bus.results() {
		if res.GetTarget() == target {
			n++
		}
	}
	return n
}

// TestPeerProbeChildRestartKeepsItsSiblings: a panic in one peer's probe
// actor restarts that actor alone — the supervisor and the other probe
// keep their incarnations — and the restarted one probes and publishes
// again at once; Probing lists both peers throughout.
func TestPeerProbeChildRestartKeepsItsSiblings(t *testing.T) {
	actorstest.NoLeaks(t)
	r := newPeerRig(t, "n2")
	const supPath = "n2/" + PeerProbeSupervisorName
	pathB, pathC := supPath+"/"+PeerProbeName("127.0.0.1:4002"), supPath+"/"+PeerProbeName("127.0.0.1:4003")
	if pathB != "n2/peer-probe-supervisor/peer-127.0.0.1:4002" {
		t.Fatalf("path %s", pathB)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("both results", func() bool { return r.results("127.0.0.1:4002") == 1 && r.results("127.0.0.1:4003") == 1 }))
	before := map[string]actors.ActorInfo{}
	for _, p := range []string{supPath, pathB, pathC} {
		i, ok := r.tree.Actor(p)
		if !ok {
			t.Fatalf("the tree does not list %s: %+v", p, r.tree.Actors())
		}
		before[p] = i
	}
	if before[supPath].Kind != PeerProbeSupervisorKind || before[pathB].Kind != PeerProbeKind {
		t.Fatalf("kinds %+v", before)
	}

	time.Sleep(5 * time.Millisecond) // so that a new start time differs
	if err := r.tree.Fault(pathB, "x"); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the faulted probe restarted", func() bool { i, _ := r.tree.Actor(pathB); return i.Restarts == 1 }))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("it probes and publishes again at once", func() bool {
		return r.prober.count(peerEpB) == 2 && r.results("127.0.0.1:4002") == 2
	}))
	if i, _ := r.tree.Actor(pathB); !i.StartedAt.After(before[pathB].StartedAt) {
		t.Fatalf("the faulted probe kept its start time: %+v", i)
	}
	for _, p := range []string{supPath, pathC} {
		if i, _ := r.tree.Actor(p); i.Restarts != 0 || !i.StartedAt.Equal(before[p].StartedAt) {
			t.Fatalf("%s changed incarnation: %+v, was %+v", p, i, before[p])
		}
	}
	if n := r.prober.count(peerEpC); n != 1 {
		t.Fatalf("the sibling probed %d times without a tick", n)
	}
	if got := r.sup.Probing(); len(got) != 2 || got["127.0.0.1:4002"] != peerEpB || got["127.0.0.1:4003"] != peerEpC {
		t.Fatalf("probing %v", got)
	}

	// Both keep their period: one tick, one probe each.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.clock.BlockUntilContext(ctx, 2); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		if n := fakeWaiters(r.clock); n != 2 {
			return fmt.Errorf("%d timers on the clock, want 2 (the old incarnation's timer must be gone)", n)
		}
		return nil
	})
	r.clock.Advance(ProbeInterval)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("one more probe each", func() bool {
		return r.prober.count(peerEpB) == 3 && r.prober.count(peerEpC) == 2 && r.results("127.0.0.1:4002") == 3 && r.results("127.0.0.1:4003") == 2
	}))
	// A second period: exactly one more probe each, counted after an
	// advance that follows every tick of the first one.
	r.clock.Advance(ProbeInterval)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a second probe each", func() bool { return r.prober.count(peerEpB) >= 4 && r.prober.count(peerEpC) >= 3 }))
	if b, c := r.prober.count(peerEpB), r.prober.count(peerEpC); b != 4 || c != 3 {
		t.Fatalf("after two ticks: %d and %d probes, want 4 and 3 (the old incarnation's timer must be gone)", b, c)
	}
	if n := fakeWaiters(r.clock); n != 2 {
		t.Fatalf("%d timers on the clock after two ticks, want 2", n)
	}
}

// fakeWaiters is the number of timers and tickers waiting on c: a
// BlockUntilContext whose context is already done answers at once
// whether at least n are waiting.
func fakeWaiters(c *clockwork.FakeClock) int {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	for c.BlockUntilContext(ctx, n+1) == nil {
		n++
	}
	return n
}

// TestPeerProbeSupervisorRestartRebuildsItsChildren: a panic in the
// supervisor restarts it; protoactor stops its children, and the new
// incarnation spawns them again from the snapshot the façade kept, at
// once (no new snapshot is published).
func TestPeerProbeSupervisorRestartRebuildsItsChildren(t *testing.T) {
	r := newPeerRig(t, "n3")
	const supPath = "n3/" + PeerProbeSupervisorName
	pathB := supPath + "/" + PeerProbeName("127.0.0.1:4002")
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the children are listed", func() bool { _, ok := r.tree.Actor(pathB); return ok }))
	before, _ := r.tree.Actor(pathB)
	time.Sleep(5 * time.Millisecond)
	if err := r.tree.Fault(supPath, "x"); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the supervisor restarted", func() bool { i, _ := r.tree.Actor(supPath); return i.Restarts == 1 }))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("both peers probed again", func() bool { return r.prober.count(peerEpB) == 2 && r.prober.count(peerEpC) == 2 }))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("new child incarnations", func() bool {
		i, ok := r.tree.Actor(pathB)
		return ok && i.StartedAt.After(before.StartedAt)
	}))
	if got := r.sup.Probing(); len(got) != 2 {
		t.Fatalf("probing %v", got)
	}
	r.sup.Stop()
	if _, ok := r.tree.Actor(supPath); ok {
		t.Fatal("Stop left the supervisor in the tree")
	}
	if _, ok := r.tree.Actor(pathB); ok {
		t.Fatal("Stop left a probe in the tree")
	}
}
