package actors_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.uber.org/goleak"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/internal/poll"
)

// counting counts its incarnations and the pings it received.
type counting struct {
	starts *atomic.Int32
	pings  *atomic.Int32
	block  chan struct{} // a ping waits for it when set
}

type ping struct{}

func (c *counting) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		c.starts.Add(1)
	case ping:
		if c.block != nil {
			<-c.block
		}
		c.pings.Add(1)
	}
}

type treeRig struct {
	tree   *actors.Tree
	gaveUp atomic.Value // string path
	logs   *syncBuffer
}

func newTreeRig(t *testing.T, o actors.TreeOptions) *treeRig {
	t.Helper()
	r := &treeRig{logs: &syncBuffer{}}
	sys := actors.NewLocal(slog.New(slog.DiscardHandler))
	o.Faults = true
	o.InitialBackoff = time.Millisecond
	o.Logger = slog.New(slog.NewJSONHandler(r.logs, nil))
	o.OnGiveUp = func(path string, _ any) { r.gaveUp.Store(path) }
	tree, err := actors.NewTree(sys, o)
	if err != nil {
		t.Fatal(err)
	}
	r.tree = tree
	t.Cleanup(func() { tree.Shutdown(); sys.Shutdown(false) })
	return r
}

func (r *treeRig) spawn(t *testing.T, name string, c *counting) *actor.PID {
	t.Helper()
	pid, err := r.tree.Spawn(r.tree.Props("counting", func() actor.Actor { return &counting{starts: c.starts, pings: c.pings, block: c.block} }), name)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func newCounting() *counting { return &counting{starts: &atomic.Int32{}, pings: &atomic.Int32{}} }

// TestTreeRestartsOneChildAndKeepsItsSiblings: a child that panics is
// restarted (a new incarnation, counted, logged as a Warning naming it),
// its sibling keeps its incarnation, and both keep taking messages.
func TestTreeRestartsOneChildAndKeepsItsSiblings(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r := newTreeRig(t, actors.TreeOptions{Name: "n1"})
	a, b := newCounting(), newCounting()
	pa, pb := r.spawn(t, "a", a), r.spawn(t, "b", b)
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("both started", func() bool { return a.starts.Load() == 1 && b.starts.Load() == 1 }))
	if pa.Id != "n1/a" || pb.Id != "n1/b" {
		t.Fatalf("paths %q %q, want n1/a n1/b", pa.Id, pb.Id)
	}
	if err := r.tree.Fault("n1/a", "boom"); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("a restarted", func() bool { return a.starts.Load() == 2 }))
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("restart counted", func() bool { i, _ := r.tree.Actor("n1/a"); return i.Restarts == 1 }))
	r.tree.Root().Send(pa, ping{})
	r.tree.Root().Send(pb, ping{})
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("both answer", func() bool { return a.pings.Load() == 1 && b.pings.Load() == 1 }))
	if b.starts.Load() != 1 {
		t.Fatalf("the sibling started %d times, want once", b.starts.Load())
	}
	if i, _ := r.tree.Actor("n1/b"); i.Restarts != 0 || i.Kind != "counting" {
		t.Fatalf("sibling %+v", i)
	}
	if !strings.Contains(r.logs.String(), `"msg":"actor failed; restarting it","actor":"n1/a"`) {
		t.Fatalf("no Warning naming the actor: %s", r.logs.String())
	}
	if r.gaveUp.Load() != nil {
		t.Fatal("gave up after one failure")
	}
}

// TestTreeGivesUpPastTheLimit: the failure after MaxRestarts within the
// window stops the actor and reports it once, naming it.
func TestTreeGivesUpPastTheLimit(t *testing.T) {
	r := newTreeRig(t, actors.TreeOptions{Name: "n2", MaxRestarts: 2})
	a := newCounting()
	r.spawn(t, "a", a)
	for i := 1; i <= 2; i++ {
		poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("started", func() bool { return a.starts.Load() == int32(i) }))
		if err := r.tree.Fault("n2/a", "boom"); err != nil {
			t.Fatal(err)
		}
	}
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("third incarnation", func() bool { return a.starts.Load() == 3 }))
	if err := r.tree.Fault("n2/a", "boom"); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-r.tree.Failed():
		if f.Path != "n2/a" || !strings.Contains(f.Reason, "boom") {
			t.Fatalf("failure %+v", f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no give-up")
	}
	// OnGiveUp and the Failed channel are told independently: either may
	// come first.
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, func() error {
		if p, _ := r.gaveUp.Load().(string); p != "n2/a" {
			return fmt.Errorf("OnGiveUp %q", p)
		}
		return nil
	})
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("the actor is gone", func() bool { _, ok := r.tree.Actor("n2/a"); return !ok }))
	if !strings.Contains(r.logs.String(), `"msg":"actor failed past its restart limit: ending the node","actor":"n2/a"`) {
		t.Fatalf("no Error naming the actor: %s", r.logs.String())
	}
}

// TestTreeListsMailboxLength: messages waiting behind a busy actor show
// as its mailbox length, and faults are refused unless enabled.
func TestTreeListsMailboxLength(t *testing.T) {
	r := newTreeRig(t, actors.TreeOptions{Name: "n3"})
	c := newCounting()
	c.block = make(chan struct{})
	pid := r.spawn(t, "busy", c)
	for range 5 {
		r.tree.Root().Send(pid, ping{})
	}
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("4 waiting and 1 in hand", func() bool { i, _ := r.tree.Actor("n3/busy"); return i.Mailbox == 5 }))
	close(c.block)
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("drained", func() bool { i, _ := r.tree.Actor("n3/busy"); return i.Mailbox == 0 && c.pings.Load() == 5 }))
	if i, _ := r.tree.Actor("n3/busy"); i.StartedAt.IsZero() {
		t.Fatal("no start time")
	}

	sys := actors.NewLocal(slog.New(slog.DiscardHandler))
	defer sys.Shutdown(false)
	off, err := actors.NewTree(sys, actors.TreeOptions{OnGiveUp: func(string, any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Shutdown()
	if err := off.Fault("node", "x"); err == nil {
		t.Fatal("a fault was accepted without the test hook")
	}
}
