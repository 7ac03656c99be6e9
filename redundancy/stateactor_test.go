package redundancy

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors/actorstest"
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/redundancy/wire"
)

type stateRig struct {
	clock   *clockwork.FakeClock
	members *fakeMembers
	bus     *fakeBus
	tracker *Tracker
	actor   *StateActor
}

func newStateRig(t *testing.T, clock *clockwork.FakeClock, bus *fakeBus, self m.UniqueAddress, members ...m.Member) *stateRig {
	t.Helper()
	r := &stateRig{clock: clock, members: newFakeMembers(self), bus: bus, tracker: NewTracker()}
	r.members.set(members...)
	cancel := bus.Subscribe(wire.Topic, r.tracker.Handle)
	t.Cleanup(cancel)
	return r
}

func (r *stateRig) start(t *testing.T) {
	t.Helper()
	r.actor = NewStateActor(StateActorOptions{Membership: r.members, PubSub: r.bus, Tracker: r.tracker, Clock: r.clock})
	r.actor.Start(context.Background())
	t.Cleanup(r.actor.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.clock.BlockUntilContext(ctx, 2); err != nil { // republish ticker + debounce timer
		t.Fatal(err)
	}
}

// event changes membership and waits until the actor has taken the event.
func (r *stateRig) event(t *testing.T, members ...m.Member) {
	t.Helper()
	before := r.actor.kicks.Load()
	r.members.set(members...)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the actor takes the membership event", func() bool { return r.actor.kicks.Load() > before }))
}

// settled checks that the debounce timer has not fired (the clock still
// holds it and the heartbeat ticker) and makes a round trip through the
// actor: until the clock moves or membership changes again nothing can
// publish, so a count read now is final.
func (r *stateRig) settled(t *testing.T) {
	t.Helper()
	if !holdsTimers(r.clock, 2) {
		t.Fatal("the debounce timer fired: the clock no longer holds it and the heartbeat ticker")
	}
	roundTrip(t, r.actor.parent.Root(), r.actor.pid)
}

func snapshots(b *fakeBus) []*wire.RedundancyStateChanged {
	return all[*wire.RedundancyStateChanged](b)
}

// firstFrom waits for the first snapshot that publisher put on the bus.
// Other instances' snapshots (a debounced one after an immediate one, say)
// may come before or after it: counting them would race the actors.
func firstFrom(t *testing.T, b *fakeBus, what string, publisher m.UniqueAddress) Snapshot {
	t.Helper()
	var got Snapshot
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True(what, func() bool {
		for _, w := range snapshots(b) {
			if w.GetPublisher() == publisher.NodeID() {
				got, _ = SnapshotFromWire(w)
				return true
			}
		}
		return false
	}))
	return got
}

func pairMembers(aUp, bUp int) []m.Member {
	return []m.Member{
		member("127.0.0.1", 4001, 1, m.Up, aUp, "pair", "admin", "driver"),
		member("127.0.0.1", 4002, 2, m.Up, bUp, "pair", "admin", "driver"),
	}
}

func TestStateActorDebouncesAndRepublishes(t *testing.T) {
	clock := clockwork.NewFakeClockAt(tEpoch)
	bus := newFakeBus()
	ms := pairMembers(1, 2)
	r := newStateRig(t, clock, bus, ms[0].Address, ms...)
	r.start(t)
	count := func() int { return len(snapshots(bus)) }

	// The first snapshot waits for the quiet period after Start.
	clock.Advance(200 * time.Millisecond)
	r.settled(t)
	if count() > 0 {
		t.Fatal("a snapshot before 250 ms")
	}
	// An event at +200 ms moves the deadline to +450 ms.
	r.event(t, ms...)
	clock.Advance(200 * time.Millisecond) // +400
	r.settled(t)
	if count() > 0 {
		t.Fatal("a snapshot before the quiet period after the last event")
	}
	clock.Advance(50 * time.Millisecond) // +450
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the debounced snapshot", func() bool { return count() == 1 }))
	s, err := SnapshotFromWire(snapshots(bus)[0])
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries["127.0.0.1:4001"].Role != RolePrimary || s.Entries["127.0.0.1:4002"].Role != RoleSecondary {
		t.Fatalf("entries %+v", s.Entries)
	}
	if s.Publisher != "127.0.0.1:4001" || s.Sequence != 1 || !s.AsOf.Equal(tEpoch.Add(450*time.Millisecond)) {
		t.Fatalf("snapshot header %q #%d at %v", s.Publisher, s.Sequence, s.AsOf)
	}

	// A steady stream of events: at most DebounceMax after the first.
	for i := range 5 { // events at +450 … +1250 ms
		r.event(t, ms...)
		clock.Advance(200 * time.Millisecond)
		if i < 4 {
			r.settled(t)
			if count() > 1 {
				t.Fatalf("a snapshot while events keep coming within the cap (event %d)", i)
			}
		}
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the capped snapshot", func() bool { return count() == 2 }))
	if capped, _ := SnapshotFromWire(snapshots(bus)[1]); !capped.AsOf.Equal(tEpoch.Add(1450 * time.Millisecond)) {
		t.Fatalf("capped snapshot at +%v, want +1.45s (DebounceMax after the first event)", capped.AsOf.Sub(tEpoch))
	}

	// Nothing happens: the heartbeat republishes every 10 s (the ticker
	// started at Start, so its first beat is at +10 s).
	clock.Advance(10*time.Second - 1450*time.Millisecond)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the heartbeat", func() bool { return count() == 3 }))
	clock.Advance(RepublishEvery)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the next heartbeat", func() bool { return count() == 4 }))
	last, _ := SnapshotFromWire(snapshots(bus)[3])
	if last.Sequence != 4 || last.Epochs["pair"] != s.Epochs["pair"] {
		t.Fatalf("heartbeat #%d epochs %v, first %v", last.Sequence, last.Epochs, s.Epochs)
	}

	// Stop: nothing more. The actor is gone and so are its timers, so
	// nothing is left that could publish when the clock moves.
	r.actor.Stop()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("Stop left no timer on the clock", func() bool { return !holdsTimers(clock, 1) }))
	clock.Advance(time.Minute)
	if count() > 4 {
		t.Fatalf("%d snapshots: one after Stop", count())
	}
	if r.members.subscribers() != 0 {
		t.Fatal("Stop left the membership subscription")
	}
}

func TestStateActorCarriesAdvertisedEndpoints(t *testing.T) {
	clock := clockwork.NewFakeClockAt(tEpoch)
	bus := newFakeBus()
	ms := pairMembers(1, 2)
	r := newStateRig(t, clock, bus, ms[0].Address, ms...)
	r.start(t)
	clock.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the first snapshot", func() bool { return len(snapshots(bus)) == 1 }))

	// The Secondary advertises its endpoint: the actor publishes again
	// after the quiet period, with the endpoint in the entry.
	before := r.actor.kicks.Load()
	bus.Publish(wire.Topic, NodeInfo{NodeID: "127.0.0.1:4002", UID: 2, ApplicationURI: "urn:b", OpcUaEndpoint: "opc.tcp://127.0.0.1:4842"}.ToWire())
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the NodeStatus wakes the actor", func() bool { return r.actor.kicks.Load() > before }))
	clock.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the snapshot after the NodeStatus", func() bool { return len(snapshots(bus)) == 2 }))
	s, _ := SnapshotFromWire(snapshots(bus)[1])
	if e := s.Entries["127.0.0.1:4002"]; e.OpcUaEndpoint != "opc.tcp://127.0.0.1:4842" || e.ApplicationURI != "urn:b" {
		t.Fatalf("entry %+v", e)
	}
	// The same NodeStatus again (a HealthTick) changes nothing and does
	// not wake the actor.
	before = r.actor.kicks.Load()
	bus.Publish(wire.Topic, NodeInfo{NodeID: "127.0.0.1:4002", UID: 2, ApplicationURI: "urn:b", OpcUaEndpoint: "opc.tcp://127.0.0.1:4842", ServiceLevel: 240}.ToWire())
	roundTrip(t, r.actor.parent.Root(), r.actor.pid)
	if r.actor.kicks.Load() > before {
		t.Fatal("a repeated NodeStatus wakes the actor")
	}
}

// TestEpochMonotonicAcrossInstances: a new singleton instance after a
// take-over continues the epochs above the old instance's, even with a
// clock an hour behind; a node that saw nothing (a whole-cluster restart)
// starts above them thanks to the clock floor; an instance moving while the
// Primary stays keeps the epoch.
func TestEpochMonotonicAcrossInstances(t *testing.T) {
	bus := newFakeBus()
	ms := pairMembers(1, 2)
	clockA := clockwork.NewFakeClockAt(tEpoch)
	a := newStateRig(t, clockA, bus, ms[0].Address, ms...)
	// Node b's tracker listens from its process start, like the host's.
	clockB := clockwork.NewFakeClockAt(tEpoch.Add(-time.Hour))
	b := newStateRig(t, clockB, bus, ms[1].Address, ms...)

	a.start(t)
	clockA.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a's snapshot", func() bool { return len(snapshots(bus)) == 1 }))
	first, _ := SnapshotFromWire(snapshots(bus)[0])
	epA := first.Epochs["pair"]
	if epA.Primary != "127.0.0.1:4001" || epA.Epoch == 0 {
		t.Fatalf("first epoch %+v", epA)
	}

	// a is killed; b takes over with only itself left.
	a.actor.Stop()
	b.members.set(ms[1])
	b.start(t)
	// The Primary moved from the one a published: b's first snapshot goes
	// out at once, without waiting for the quiet period.
	second := firstFrom(t, bus, "b's snapshot", ms[1].Address)
	epB := second.Epochs["pair"]
	if epB.Primary != "127.0.0.1:4002" || epB.Epoch <= epA.Epoch {
		t.Fatalf("epoch after take-over %+v, before %+v: must be higher", epB, epA)
	}

	// A hand-over to a third admin node while the Primary stays: same epoch.
	c := newStateRig(t, clockwork.NewFakeClockAt(tEpoch.Add(-2*time.Hour)), bus,
		m.UniqueAddress{Host: "127.0.0.1", Port: 4003, UID: 3}, ms[1], member("127.0.0.1", 4003, 3, m.Up, 3, "pair", "admin"))
	c.tracker.ObserveEpochs(b.tracker.Epochs()) // c heard b's snapshots
	b.actor.Stop()
	c.start(t)
	c.clock.Advance(DebounceQuiet)
	third := firstFrom(t, bus, "c's snapshot", m.UniqueAddress{Host: "127.0.0.1", Port: 4003, UID: 3})
	if third.Epochs["pair"] != epB {
		t.Fatalf("epoch after a hand-over with the same Primary %+v, want %+v", third.Epochs["pair"], epB)
	}

	// Whole cluster restarted later: a fresh process with an empty tracker
	// and new incarnations still issues a higher epoch.
	fresh := newStateRig(t, clockwork.NewFakeClockAt(tEpoch.Add(time.Minute)), newFakeBus(),
		m.UniqueAddress{Host: "127.0.0.1", Port: 4001, UID: 11}, member("127.0.0.1", 4001, 11, m.Up, 1, "pair", "admin", "driver"))
	fresh.start(t)
	fresh.clock.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the fresh snapshot", func() bool { return len(snapshots(fresh.bus)) == 1 }))
	fourth, _ := SnapshotFromWire(snapshots(fresh.bus)[0])
	if fourth.Epochs["pair"].Epoch <= epB.Epoch {
		t.Fatalf("epoch after a full restart %d, before %d", fourth.Epochs["pair"].Epoch, epB.Epoch)
	}
}

// TestStateActorGreetsNewSubscribers: a node that appears in the topic's
// registry gets a snapshot after the quiet period, not at the next
// heartbeat; a node that disappears does not cause one.
func TestStateActorGreetsNewSubscribers(t *testing.T) {
	clock := clockwork.NewFakeClockAt(tEpoch)
	bus := newFakeBus()
	ms := pairMembers(1, 2)
	r := newStateRig(t, clock, bus, ms[0].Address, ms...)
	var mu sync.Mutex
	subs := []m.UniqueAddress{ms[0].Address}
	var reads atomic.Int32 // of Subscribers: one at the start, then one per poll
	r.actor = NewStateActor(StateActorOptions{Membership: r.members, PubSub: bus, Tracker: r.tracker, Clock: clock,
		Subscribers: func() []m.UniqueAddress { reads.Add(1); mu.Lock(); defer mu.Unlock(); return slices.Clone(subs) }})
	r.actor.Start(context.Background())
	t.Cleanup(r.actor.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 3); err != nil { // heartbeat, poll, debounce
		t.Fatal(err)
	}
	clock.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the first snapshot", func() bool { return len(snapshots(bus)) == 1 }))

	mu.Lock()
	subs = append(subs, ms[1].Address)
	mu.Unlock()
	before := r.actor.kicks.Load()
	clock.Advance(SubscriberPoll - DebounceQuiet) // the poll at +500 ms
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the poll sees the new subscriber", func() bool { return r.actor.kicks.Load() > before }))
	clock.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a snapshot for the new subscriber", func() bool { return len(snapshots(bus)) == 2 }))

	mu.Lock()
	subs = subs[:1]
	mu.Unlock()
	before = r.actor.kicks.Load()
	for range 2 { // two polls, each read before the clock moves again
		n := reads.Load()
		clock.Advance(SubscriberPoll)
		poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the poll reads the subscribers", func() bool { return reads.Load() > n }))
	}
	roundTrip(t, r.actor.parent.Root(), r.actor.pid) // the second poll is done
	if r.actor.kicks.Load() > before {
		t.Fatal("a departed subscriber wakes the actor")
	}
	if len(snapshots(bus)) != 2 {
		t.Fatalf("%d snapshots, want 2", len(snapshots(bus)))
	}
}

// TestStateActorRestartKeepsEpochsAndSequence: the state actor as the
// host runs it (StateActorChild under the tree) fails and is restarted;
// its next snapshot continues the sequence and keeps the epoch, rebuilt
// from the Tracker.
func TestStateActorRestartKeepsEpochsAndSequence(t *testing.T) {
	actorstest.NoLeaks(t)
	tree, gaveUp := testTree(t)
	clock := clockwork.NewFakeClockAt(tEpoch)
	bus := newFakeBus()
	ms := pairMembers(1, 2)
	r := newStateRig(t, clock, bus, ms[0].Address, ms...)
	pid, err := tree.Spawn(tree.Props(StateActorChild(StateActorOptions{Membership: r.members, PubSub: bus, Tracker: r.tracker, Clock: clock})), StateActorName)
	if err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the tree lists the actor", func() bool { i, ok := tree.Actor(pid.Id); return ok && i.Kind == StateActorKind }))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 2); err != nil { // republish ticker + debounce timer
		t.Fatal(err)
	}
	clock.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the first snapshot", func() bool { return len(snapshots(bus)) == 1 }))
	clock.Advance(RepublishEvery)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the heartbeat", func() bool { return len(snapshots(bus)) == 2 }))
	before, _ := SnapshotFromWire(snapshots(bus)[1])
	if before.Sequence != 2 || before.Epochs["pair"].Epoch == 0 {
		t.Fatalf("before the fault: #%d %v", before.Sequence, before.Epochs)
	}

	if err := tree.Fault(pid.Id, "test"); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the restart counted", func() bool { i, _ := tree.Actor(pid.Id); return i.Restarts == 1 }))
	// The new incarnation publishes after its quiet period (or at its
	// first heartbeat); the clock moves until it did.
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a snapshot after the restart", func() bool {
		clock.Advance(50 * time.Millisecond)
		return len(snapshots(bus)) > 2
	}))
	clock.Advance(RepublishEvery)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the next heartbeat", func() bool { return len(snapshots(bus)) > 3 }))
	prev := before
	for _, w := range snapshots(bus)[2:] {
		s, err := SnapshotFromWire(w)
		if err != nil {
			t.Fatal(err)
		}
		if s.Sequence <= prev.Sequence {
			t.Fatalf("sequence %d after %d: it went back in the restart", s.Sequence, prev.Sequence)
		}
		if s.Epochs["pair"].Epoch < prev.Epochs["pair"].Epoch {
			t.Fatalf("epoch %d after %d: it went back in the restart", s.Epochs["pair"].Epoch, prev.Epochs["pair"].Epoch)
		}
		if s.Epochs["pair"] != before.Epochs["pair"] {
			t.Fatalf("epoch %+v after the restart, want %+v (the Primary did not change)", s.Epochs["pair"], before.Epochs["pair"])
		}
		prev = s
	}
	if gaveUp.Load() != nil {
		t.Fatal("the tree gave up")
	}
	// A membership event still reaches the new incarnation.
	n := len(snapshots(bus))
	r.members.set(ms[1])
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a snapshot after the membership event", func() bool {
		clock.Advance(50 * time.Millisecond)
		return len(snapshots(bus)) > n
	}))
	last, _ := SnapshotFromWire(snapshots(bus)[len(snapshots(bus))-1])
	if ep := last.Epochs["pair"]; ep.Primary != "127.0.0.1:4002" || ep.Epoch <= before.Epochs["pair"].Epoch {
		t.Fatalf("epoch after the Primary changed %+v, before %+v", ep, before.Epochs["pair"])
	}
	_ = tree.Root().StopFuture(pid).Wait()
	if r.members.subscribers() != 0 {
		t.Fatal("the stopped actor left its membership subscription")
	}
}

// TestStateActorPublishesAPrimaryChangeAtOnce: a membership event that
// moves the Primary goes out without waiting for the debounce (the clock
// does not move); the debounce still publishes the settled view after
// it. An event that keeps the Primary waits as before.
func TestStateActorPublishesAPrimaryChangeAtOnce(t *testing.T) {
	clock := clockwork.NewFakeClockAt(tEpoch)
	bus := newFakeBus()
	ms := pairMembers(1, 2)
	r := newStateRig(t, clock, bus, ms[1].Address, ms...)
	r.start(t)
	count := func() int { return len(snapshots(bus)) }
	clock.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the first snapshot", func() bool { return count() == 1 }))

	// The same Primary: debounced.
	r.event(t, ms...)
	r.settled(t)
	if count() > 1 {
		t.Fatal("an immediate snapshot without a Primary change")
	}
	clock.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the debounced snapshot", func() bool { return count() == 2 }))

	// The Primary (4001) is downed: 4002 is Primary at once.
	down := ms[0]
	down.Status = m.Down
	r.event(t, down, ms[1])
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the Primary change without the debounce", func() bool { return count() == 3 }))
	s, err := SnapshotFromWire(snapshots(bus)[2])
	if err != nil {
		t.Fatal(err)
	}
	if s.Epochs["pair"].Primary != "127.0.0.1:4002" || !s.AsOf.Equal(clock.Now()) {
		t.Fatalf("snapshot %+v at %v, want Primary 4002 at once", s.Epochs, s.AsOf)
	}
	clock.Advance(DebounceQuiet)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the settled snapshot after the debounce", func() bool { return count() == 4 }))
}
