package historian

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/internal/poll"
)

// TestDrainActorRestartsAndDrainsAgain: the drain runs as the historian
// actor of the node's tree; a panic in it restarts it (counted by the
// tree), and the new incarnation drains at once — without a tick of the
// clock — and then keeps its DrainEvery period.
func TestDrainActorRestartsAndDrainsAgain(t *testing.T) {
	sys := actors.NewLocal(slog.New(slog.DiscardHandler))
	tree, err := actors.NewTree(sys, actors.TreeOptions{Name: "n1", Faults: true, InitialBackoff: time.Millisecond,
		OnGiveUp: func(path string, reason any) { t.Errorf("gave up on %s: %v", path, reason) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Shutdown(); sys.Shutdown(false) }) // after the node's own cleanup
	central := sqliteCentral()(t)
	n := newNode(t, "a", filepath.Join(t.TempDir(), "a.db"), central, true, func(o *Options) { o.Parent = tree })
	const path = "n1/" + ActorName
	if i, ok := tree.Actor(path); !ok || i.Kind != ActorKind || n.h.PID().Id != path {
		t.Fatalf("the tree lists %+v, %v; PID %v", i, ok, n.h.PID())
	}

	n.enqueue(evs(0, 5)...)
	if err := tree.Fault(path, "x"); err != nil {
		t.Fatal(err)
	}
	n.waitTick() // the new incarnation's first tick, at once
	wantExactlyOnce(t, central, evs(0, 5))
	if i, _ := tree.Actor(path); i.Restarts != 1 {
		t.Fatalf("restarts %d, want 1", i.Restarts)
	}
	if st := n.h.Status(); st.State != StateIdle || st.QueueDepth != 0 || st.Drained != 5 {
		t.Fatalf("status after the restart %+v", st)
	}

	// The old incarnation's ticker leaves the clock (its goroutine stops
	// it), so the new one's is the only ticker left: one DrainEvery can
	// make one tick only.
	poll.CheckFor(t, wait, time.Millisecond, poll.True("the old incarnation's ticker gone from the clock", func() bool { return !holdsTimers(n.clock, 2) }))
	if !holdsTimers(n.clock, 1) {
		t.Fatal("the new incarnation has no ticker on the clock")
	}
	n.enqueue(evs(5, 8)...)
	n.tick()
	wantExactlyOnce(t, central, evs(0, 8))
	select {
	case <-n.ticks:
		t.Fatal("two ticks for one DrainEvery: the old incarnation's timer still runs")
	default:
	}
	n.stop()
	if _, ok := tree.Actor(path); ok {
		t.Fatal("Stop left the actor in the tree")
	}
	if st := n.h.Status(); st.State != StateStopped {
		t.Fatalf("state after Stop %s", st.State)
	}
}
