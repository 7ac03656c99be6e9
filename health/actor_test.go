package health

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/redundancy"
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

func actorInfo(tree *actors.Tree, path string) (actors.ActorInfo, bool) {
	for _, a := range tree.Actors() {
		if a.Path == path {
			return a, true
		}
	}
	return actors.ActorInfo{}, false
}

// TestDbProbeActorRestartsAndProbesAgain: a panic in the probe actor
// restarts it under the tree; the new incarnation pings at once (the fake
// clock does not move), Last keeps the old verdict until the new one, and
// the actor answers DbHealthQuery again.
func TestDbProbeActorRestartsAndProbesAgain(t *testing.T) {
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
	if i, ok := actorInfo(tree, path); !ok || i.Kind != DbProbeKind || i.Restarts != 0 {
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
	waitFor(t, "restart counted", func() bool { i, _ := actorInfo(tree, path); return i.Restarts == 1 })
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
