package redundancy

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/actors/actorstest"
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/redundancy/servicelevel"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// testTree is a node's supervision tree with the fault hook on, a short
// back-off on the wall clock, and its give-ups recorded.
func testTree(t *testing.T) (*actors.Tree, *atomic.Value) {
	t.Helper()
	sys := actors.NewLocal(slog.New(slog.DiscardHandler))
	gaveUp := &atomic.Value{}
	tree, err := actors.NewTree(sys, actors.TreeOptions{Faults: true, InitialBackoff: time.Millisecond,
		OnGiveUp: func(path string, _ any) { gaveUp.Store(path) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Shutdown(); sys.Shutdown(false) })
	return tree, gaveUp
}

// TestPublishActorRestartsAndPublishesAgain: a panic in the actor (a test
// fault) restarts it under the tree; the new incarnation recomputes at
// once, hands the same level to the Publisher again, advertises its
// NodeStatus and logs why "restart"; the snapshot entry and a pin made
// before the fault survive it.
func TestPublishActorRestartsAndPublishesAgain(t *testing.T) {
	actorstest.NoLeaks(t)
	tree, gaveUp := testTree(t)
	r := newPubRig(t)
	o := r.actor.o
	o.Parent = tree
	r.actor = NewPublishActor(o)
	r.start(t)
	path := tree.PID().Id + "/" + PublishActorName
	if r.actor.PID().Id != path {
		t.Fatalf("PID %v, want %s", r.actor.PID(), path)
	}
	if i, ok := tree.Actor(path); !ok || i.Kind != PublishActorKind {
		t.Fatalf("tree lists %+v", tree.Actors())
	}
	r.members.set(r.peer, r.self)
	r.db.set(true, r.clock.Now())
	r.actor.NotifyDbChanged()
	r.snapshot(RolePrimary, 2)
	r.wantLevel(t, 250)

	fault := func(restarts int) {
		t.Helper()
		n, st := len(r.levels.all()), len(all[*wire.NodeStatus](r.bus))
		if err := tree.Fault(path, "test"); err != nil {
			t.Fatal(err)
		}
		poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a Publish after the restart", func() bool { return len(r.levels.all()) > n }))
		poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the restart counted", func() bool { i, _ := tree.Actor(path); return i.Restarts == restarts }))
		poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a NodeStatus after the restart", func() bool { return len(all[*wire.NodeStatus](r.bus)) > st }))
	}

	// The restart publishes the same level again: the entry of the last
	// snapshot was kept, so the node does not drop to the stale band.
	fault(1)
	if got := r.levels.all(); got[len(got)-1] != 250 {
		t.Fatalf("levels %v: the restart must publish 250 again", got)
	}
	if !strings.Contains(r.log.String(), `msg="ServiceLevel computed" level=250 previous=250 why=restart`) {
		t.Fatalf("no restart compute logged:\n%s", r.log.String())
	}

	// A manual failover's pin holds across a restart.
	r.drain()
	r.wantLevel(t, 0)
	fault(2)
	r.settle(t)
	if l, _ := r.actor.Level(); r.levels.last() != 0 || l != 0 {
		t.Fatalf("the pin was lost in the restart: published %d, Level %d", r.levels.last(), l)
	}
	st := all[*wire.NodeStatus](r.bus)
	if st[len(st)-1].GetServiceLevel() != 0 {
		t.Fatalf("NodeStatus after the restart advertises %d", st[len(st)-1].GetServiceLevel())
	}

	// The restarted actor still takes its ticks.
	n := len(all[*wire.NodeStatus](r.bus))
	r.clock.Advance(HealthTick)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the tick's NodeStatus", func() bool { return len(all[*wire.NodeStatus](r.bus)) > n }))
	if gaveUp.Load() != nil {
		t.Fatal("the tree gave up")
	}
	r.actor.Stop()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the actor is gone from the tree", func() bool { _, ok := tree.Actor(path); return !ok }))
	if r.members.subscribers() != 0 {
		t.Fatal("Stop left the membership subscription")
	}
}

// TestPublishActorDbProbeSilent: a DB probe actor that never answers
// counts as the Config DB known and unreachable (100 without a fresh
// snapshot), with the reason in NodeStatus; one that answers is used.
func TestPublishActorDbProbeSilent(t *testing.T) {
	sys := actors.NewLocal(slog.New(slog.DiscardHandler))
	defer sys.Shutdown(false)
	silent := sys.Root().Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	var reachable atomic.Bool
	answering := sys.Root().Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*DbHealthQuery); ok {
			c.Respond(&DbHealthReply{Status: DbStatus{Reachable: reachable.Load(), AsOf: time.Now()}, Known: true})
		}
	}))

	members := newFakeMembers(m.UniqueAddress{Host: "127.0.0.1", Port: 4002, UID: 2})
	members.set(member("127.0.0.1", 4001, 1, m.Up, 1, "pair", "driver"), member("127.0.0.1", 4002, 2, m.Up, 2, "pair", "driver"))
	bus, lv := newFakeBus(), &levels{}
	parent := actors.Plain(sys.Root(), nil)
	a := NewPublishActor(PublishActorOptions{Parent: parent, Membership: members, PubSub: bus, Publisher: lv, DbProbe: silent,
		DbHealth:  DbHealthFunc(func() (DbStatus, bool) { return DbStatus{Reachable: true, AsOf: time.Now()}, true }),
		ClusterID: "pair", Clock: clockwork.NewRealClock()})
	begin := time.Now()
	a.Start(context.Background())
	defer a.Stop()
	if l, ok := a.Level(); !ok || l != servicelevel.Critical {
		t.Fatalf("level %d %v with a silent DB probe, want %d", l, ok, servicelevel.Critical)
	}
	if took := time.Since(begin); took < DbAskTimeout || took > 5*DbAskTimeout {
		t.Fatalf("the first compute took %v, want about DbAskTimeout", took)
	}
	st := all[*wire.NodeStatus](bus)
	if len(st) != 1 || st[0].GetConfigdbState() != wire.ConfigDbState_CONFIG_DB_STATE_UNREACHABLE ||
		!strings.Contains(st[0].GetConfigdbError(), "did not answer within 1s") {
		t.Fatalf("NodeStatus %v", st)
	}

	// The same with a probe that answers: its verdict counts (no snapshot
	// names this node: stale while the DB answers, 200).
	a.Stop()
	reachable.Store(true)
	b := NewPublishActor(PublishActorOptions{Parent: actors.Plain(sys.Root(), nil), Membership: members, PubSub: newFakeBus(), Publisher: &levels{}, DbProbe: answering,
		ClusterID: "pair"})
	b.Start(context.Background())
	defer b.Stop()

	if l, _ := b.Level(); l != servicelevel.Stale {
		t.Fatalf("level %d with a reachable DB, want %d", l, servicelevel.Stale)
	}
}
