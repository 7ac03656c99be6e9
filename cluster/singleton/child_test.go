package singleton_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/actors/actorstest"
	"github.com/otopcua/otopcua/cluster/pubsub/pubsubtest"
	"github.com/otopcua/otopcua/cluster/singleton"
	"github.com/otopcua/otopcua/internal/poll"
)

// childInstance is an instance actor that counts its running
// incarnations.
type childInstance struct{ running *atomic.Int32 }

func (c childInstance) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		c.running.Add(1)
	case *actor.Stopping, *actor.Restarting:
		c.running.Add(-1)
	}
}

type childRig struct {
	c       *pubsubtest.Cluster
	mu      sync.Mutex
	trees   map[string]*actors.Tree
	mgrs    map[string]*singleton.Manager
	running atomic.Int32 // instance incarnations across the cluster
	gaveUp  atomic.Value
}

func newChildRig(t *testing.T) *childRig {
	r := &childRig{c: pubsubtest.New(t), trees: map[string]*actors.Tree{}, mgrs: map[string]*singleton.Manager{}}
	exits := map[string]*singleton.ExitGroup{}
	r.c.Configure = func(name string, cfg *pubsubtest.Config) {
		g := &singleton.ExitGroup{}
		exits[name] = g
		cfg.Node.CrashFastPath = true
		cfg.Daemon.ExitingTasks = append(cfg.Daemon.ExitingTasks, g.Task)
	}
	r.c.OnStart = func(n *pubsubtest.Node) {
		tree, err := actors.NewTree(n.System, actors.TreeOptions{Faults: true, InitialBackoff: time.Millisecond,
			OnGiveUp: func(path string, _ any) { r.gaveUp.Store(path) }})
		if err != nil {
			t.Fatal(err)
		}
		n.OnStop(tree.Shutdown)
		m, err := singleton.Start(singleton.Options{
			Daemon: n.Daemon, Mediator: n.Mediator, Role: "admin", Name: "redundancy-state",
			Parent: tree,
			Child: func() (string, actor.Producer) {
				return "TestInstance", func() actor.Actor { return childInstance{running: &r.running} }
			},
			Exit: exits[n.Name], Clock: r.c.Clock, Logger: n.Logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		n.OnStop(m.Stop)
		r.mu.Lock()
		r.trees[n.Name], r.mgrs[n.Name] = tree, m
		r.mu.Unlock()
	}
	return r
}

func (r *childRig) tree(name string) *actors.Tree {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.trees[name]
}

func (r *childRig) mgr(name string) *singleton.Manager {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mgrs[name]
}

const (
	managerPath  = "node/redundancy-state-manager"
	instancePath = managerPath + "/redundancy-state"
)

// TestChildInstanceIsTheManagersActorChild: with Child set, the running
// instance is the actor node/<name>-manager/<name> of the tree on the
// active node only; it moves on a hand-over, survives a restart of itself
// and of its manager, and is gone after Stop.
func TestChildInstanceIsTheManagersActorChild(t *testing.T) {
	actorstest.NoLeaks(t)
	r := newChildRig(t)
	ns := r.c.Form("a", "b")
	a := ns[0]
	r.c.Until(3*time.Second, "a active", func() bool { return r.mgr("a").Active() })
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the instance actor on a", func() bool { _, ok := r.tree("a").Actor(instancePath); return ok }))
	if i, _ := r.tree("a").Actor(instancePath); i.Kind != "TestInstance" {
		t.Fatalf("instance %+v", i)
	}
	if i, ok := r.tree("b").Actor(managerPath); !ok || i.Kind != singleton.ManagerKind {
		t.Fatalf("b's tree %+v", r.tree("b").Actors())
	}
	if _, ok := r.tree("b").Actor(instancePath); ok {
		t.Fatal("the instance actor runs on the younger node too")
	}

	// The instance fails: the tree restarts it, the manager stays active.
	if err := r.tree("a").Fault(instancePath, "test"); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the instance restarted", func() bool { i, _ := r.tree("a").Actor(instancePath); return i.Restarts == 1 }))
	// The manager fails: its restart stops the child, the new incarnation
	// starts it again and is still the oldest.
	if err := r.tree("a").Fault(managerPath, "test"); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the manager restarted", func() bool { i, _ := r.tree("a").Actor(managerPath); return i.Restarts == 1 }))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the instance again on a", func() bool { _, ok := r.tree("a").Actor(instancePath); return ok && r.running.Load() == 1 }))
	if !r.mgr("a").Active() || r.mgr("a").Phase() != singleton.Oldest {
		t.Fatalf("a after its manager's restart: active %v, %v", r.mgr("a").Active(), r.mgr("a").Phase())
	}

	// Hand-over: a leaves, the instance moves to b.
	a.Daemon.Leave()
	r.c.Until(10*time.Second, "b active", func() bool { return r.mgr("b").Active() })
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the instance actor on b", func() bool { _, ok := r.tree("b").Actor(instancePath); return ok }))
	if _, ok := r.tree("a").Actor(instancePath); ok {
		t.Fatal("the instance actor still runs on a after the hand-over")
	}
	if n := r.running.Load(); n != 1 {
		t.Fatalf("%d instance actors run", n)
	}

	// Stop: the instance and the manager leave the tree.
	r.mgr("b").Stop()
	for _, p := range []string{instancePath, managerPath} {
		if _, ok := r.tree("b").Actor(p); ok {
			t.Fatalf("%s still in b's tree after Stop: %+v", p, r.tree("b").Actors())
		}
	}
	if r.mgr("b").Active() || r.running.Load() != 0 {
		t.Fatalf("after Stop: active %v, %d running", r.mgr("b").Active(), r.running.Load())
	}
	if r.gaveUp.Load() != nil {
		t.Fatalf("the tree gave up on %v", r.gaveUp.Load())
	}
}
