package redundancy_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub/pubsubtest"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// lastLevel is a LevelPublisher that keeps the last level.
type lastLevel struct {
	mu    sync.Mutex
	level int
}

func (l *lastLevel) Publish(b byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.level = int(b)
}

func (l *lastLevel) get() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.level
}

// runtimeNode is the redundancy runtime of one in-process node: a tracker,
// a publish actor, and the state actor when the test places it there.
type runtimeNode struct {
	n       *pubsubtest.Node
	tracker *redundancy.Tracker
	level   *lastLevel
	state   *redundancy.StateActor
	view    *redundancy.RoleView
	epochs  *epochLog
}

// epochLog records the epochs this node saw on the topic, in order.
type epochLog struct {
	mu   sync.Mutex
	seen []redundancy.EpochState
}

func (e *epochLog) add(_ membership.UniqueAddress, msg proto.Message) {
	if m, ok := msg.(*wire.RedundancyStateChanged); ok {
		if s, err := redundancy.SnapshotFromWire(m); err == nil {
			e.mu.Lock()
			e.seen = append(e.seen, s.Epochs["site-a"])
			e.mu.Unlock()
		}
	}
}

func (e *epochLog) all() []redundancy.EpochState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]redundancy.EpochState(nil), e.seen...)
}

func startRuntime(t *testing.T, c *pubsubtest.Cluster, n *pubsubtest.Node) *runtimeNode {
	t.Helper()
	r := &runtimeNode{n: n, tracker: redundancy.NewTracker(), level: &lastLevel{level: -1}, epochs: &epochLog{}}
	n.OnStop(n.Mediator.Subscribe(wire.Topic, r.tracker.Handle))
	n.OnStop(n.Mediator.Subscribe(wire.Topic, r.epochs.add))
	r.view = redundancy.NewRoleView(n.Daemon, "site-a")
	db := redundancy.DbHealthFunc(func() (redundancy.DbStatus, bool) {
		return redundancy.DbStatus{Reachable: true, AsOf: c.Clock.Now()}, true
	})
	pa := redundancy.NewPublishActor(redundancy.PublishActorOptions{
		Membership: n.Daemon, PubSub: n.Mediator, DbHealth: db, Publisher: r.level, RoleView: r.view,
		ConfiguredRoles: []string{"admin", "driver"}, ClusterID: "site-a",
		OpcUaEndpoint: "opc.tcp://" + n.Name + ":4840", Clock: c.Clock, Logger: n.Logger,
	})
	pa.Start(context.Background())
	n.OnStop(pa.Stop)
	return r
}

// placeSingleton starts the state actor on r, as the singleton manager
// does on the oldest admin member.
func (r *runtimeNode) placeSingleton(c *pubsubtest.Cluster) {
	r.state = redundancy.NewStateActor(redundancy.StateActorOptions{
		Membership: r.n.Daemon, PubSub: r.n.Mediator, Tracker: r.tracker, Clock: c.Clock, Logger: r.n.Logger,
	})
	r.state.Start(context.Background())
	r.n.OnStop(r.state.Stop)
}

// TestPairOverPubSub runs the runtime on two in-process nodes over the
// real membership daemon and pub/sub mediator: the oldest reads 250, the
// other 240; when the oldest crashes and the singleton is taken over by the
// survivor, the survivor reads 250 under a higher epoch.
func TestPairOverPubSub(t *testing.T) {
	c := pubsubtest.New(t)
	nodes := c.Form("a", "b")
	a, b := startRuntime(t, c, nodes[0]), startRuntime(t, c, nodes[1])
	a.placeSingleton(c)

	took := c.Until(15*time.Second, "a at 250 and b at 240", func() bool { return a.level.get() == 250 && b.level.get() == 240 })
	t.Logf("levels 250/240 after %v of cluster time", took)
	if a.view.Role() != redundancy.RolePrimary || b.view.Role() != redundancy.RoleSecondary {
		t.Fatalf("role views a=%v b=%v", a.view.Role(), b.view.Role())
	}
	before := b.epochs.all()
	first := before[len(before)-1]
	if first.Primary != "a:2552" || first.Epoch == 0 {
		t.Fatalf("epoch seen by b: %+v", first)
	}
	// Peers' endpoints reach the snapshot through NodeStatus.
	c.Until(15*time.Second, "b's tracker knows a's endpoint", func() bool {
		return a.tracker.NodeInfos()["b:2552"].OpcUaEndpoint == "opc.tcp://b:4840"
	})

	// a crashes. The survivor downs it (crash fast path) and, as the
	// singleton manager would, takes the singleton over.
	c.Kill("a")
	c.Until(20*time.Second, "a gone from b's view", func() bool {
		return pubsubtest.StatusAt(b.n, "a") == membership.Removed || pubsubtest.StatusAt(b.n, "a") == membership.Down
	})
	b.placeSingleton(c)
	took = c.Until(15*time.Second, "b at 250", func() bool { return b.level.get() == 250 })
	t.Logf("b at 250 %v after a was gone from its view", took)
	after := b.epochs.all()
	last := after[len(after)-1]
	if last.Primary != "b:2552" || last.Epoch <= first.Epoch {
		t.Fatalf("epoch after the take-over %+v, before %+v", last, first)
	}
	for i := 1; i < len(after); i++ {
		if after[i].Epoch < after[i-1].Epoch {
			t.Fatalf("epochs seen by b went back: %v", after)
		}
	}
	if b.view.Role() != redundancy.RolePrimary {
		t.Fatalf("b's role view %v", b.view.Role())
	}
}
