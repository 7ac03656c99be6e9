package singleton

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/wire"
)

func testMachine(self m.UniqueAddress) *machine {
	return newMachine(machineConfig{self: self, role: "admin", handOverTicks: 3, takeOverTicks: 5, exitTicks: 2})
}

// describe renders effects compactly for table comparisons.
func describe(es []effect) string {
	var out []string
	for _, e := range es {
		switch e := e.(type) {
		case startInstance:
			out = append(out, "start:"+e.how)
		case stopInstance:
			out = append(out, "stop")
		case sendSignal:
			out = append(out, fmt.Sprintf("send:%s:%s", e.to.Host, strings.TrimPrefix(e.sig.String(), "SINGLETON_SIGNAL_")))
		case handedOver:
			out = append(out, "handed-over:"+e.to.Host)
		case ended:
			out = append(out, "ended")
		case stillWaiting:
			out = append(out, "waiting")
		}
	}
	return strings.Join(out, " ")
}

func expect(t *testing.T, what string, got []effect, want string) {
	t.Helper()
	if d := describe(got); d != want {
		t.Fatalf("%s: effects %q, want %q", what, d, want)
	}
}

func upAB(self m.UniqueAddress) m.State {
	return state(self, mem(na, 1, m.Up, "admin"), mem(nb, 2, m.Up, "admin"))
}

// TestMachineOldestStartsAtOnce: the first oldest, with nobody before it,
// starts at once; a younger node does not.
func TestMachineOldestStartsAtOnce(t *testing.T) {
	a, b := testMachine(na), testMachine(nb)
	expect(t, "a", a.onView(upAB(na)), "start:oldest")
	expect(t, "b", b.onView(upAB(nb)), "")
	if a.phase != Oldest || b.phase != Younger {
		t.Fatalf("phases %v %v", a.phase, b.phase)
	}
}

// TestMachineGracefulHandOver walks the leave protocol between the old
// and the new oldest, step by step.
func TestMachineGracefulHandOver(t *testing.T) {
	a, b := testMachine(na), testMachine(nb)
	a.onView(upAB(na))
	b.onView(upAB(nb))
	exiting := func(self m.UniqueAddress) m.State {
		return state(self, mem(na, 1, m.Exiting, "admin"), mem(nb, 2, m.Up, "admin"))
	}
	// b sees a Exiting: it asks, and does not start
	expect(t, "b sees a exiting", b.onView(exiting(nb)), "send:a:HAND_OVER_TO_ME")
	if b.phase != BecomingOldest {
		t.Fatalf("b %v", b.phase)
	}
	// a sees itself Exiting: it offers
	expect(t, "a sees itself exiting", a.onView(exiting(na)), "send:b:TAKE_OVER_FROM_ME")
	expect(t, "a's exit task", a.onLeaving(), "")
	expect(t, "b gets TakeOverFromMe", b.onReceive(na, TakeOverFromMe), "send:a:HAND_OVER_TO_ME")
	expect(t, "a gets HandOverToMe", a.onReceive(nb, HandOverToMe), "send:b:HAND_OVER_IN_PROGRESS stop")
	expect(t, "a gets it again", a.onReceive(nb, HandOverToMe), "send:b:HAND_OVER_IN_PROGRESS")
	expect(t, "b hears in progress", b.onReceive(na, HandOverInProgress), "")
	expect(t, "b ticks while waiting", b.onTick(), "send:a:HAND_OVER_TO_ME")
	if b.phase != BecomingOldest {
		t.Fatalf("b must wait for HandOverDone, is %v", b.phase)
	}
	expect(t, "a's instance stopped", a.onStopped(), "send:b:HAND_OVER_DONE handed-over:b")
	expect(t, "HandOverDone from a stranger", b.onReceive(nc, HandOverDone), "")
	expect(t, "b gets HandOverDone", b.onReceive(na, HandOverDone), "start:hand-over")
	// a, now Younger and leaving, answers a late HandOverToMe at once
	expect(t, "late ask", a.onReceive(nb, HandOverToMe), "send:b:HAND_OVER_DONE")
	if a.phase.Running() || !b.phase.Running() {
		t.Fatalf("a %v b %v", a.phase, b.phase)
	}
}

// TestMachineCrash: an unreachable oldest keeps the singleton; a Down and
// unreachable one, or a removed one, is taken over at once; a Down but
// reachable one after the hand-over timeout.
func TestMachineCrash(t *testing.T) {
	unreachable := func(s m.State) m.State {
		s.Gossip = s.Gossip.WithReachability(s.Gossip.Reachability.Unreachable(nb, na))
		return s
	}
	b := testMachine(nb)
	b.onView(upAB(nb))
	expect(t, "a unreachable", b.onView(unreachable(upAB(nb))), "")
	for range 10 {
		expect(t, "tick while a unreachable", b.onTick(), "")
	}
	down := state(nb, mem(na, 1, m.Down, "admin"), mem(nb, 2, m.Up, "admin"))
	expect(t, "a Down and unreachable", b.onView(unreachable(down)), "start:take-over")

	b = testMachine(nb)
	b.onView(upAB(nb))
	expect(t, "a removed", b.onView(state(nb, mem(nb, 2, m.Up, "admin"))), "start:take-over")

	b = testMachine(nb)
	b.onView(upAB(nb))
	expect(t, "a Down, reachable", b.onView(down), "send:a:HAND_OVER_TO_ME")
	expect(t, "tick 1", b.onTick(), "send:a:HAND_OVER_TO_ME")
	expect(t, "tick 2", b.onTick(), "send:a:HAND_OVER_TO_ME")
	expect(t, "tick 3: timeout", b.onTick(), "send:a:HAND_OVER_TO_ME start:take-over")
}

// TestMachineWaitsForLivePrevious: a previous oldest that is Exiting (its
// hand-over under way) is waited for past the timeout.
func TestMachineWaitsForLivePrevious(t *testing.T) {
	b := testMachine(nb)
	b.onView(upAB(nb))
	b.onView(state(nb, mem(na, 1, m.Exiting, "admin"), mem(nb, 2, m.Up, "admin")))
	var all []string
	for range 9 {
		all = append(all, describe(b.onTick()))
	}
	if b.phase != BecomingOldest || !strings.Contains(strings.Join(all, " "), "waiting") {
		t.Fatalf("b %v after %q", b.phase, all)
	}
}

// TestMachineSelfDownAndRemoved: a downed oldest stops its instance and
// ends; a HandOverToMe meanwhile gets HandOverDone once stopped.
func TestMachineSelfDownAndRemoved(t *testing.T) {
	a := testMachine(na)
	a.onView(upAB(na))
	expect(t, "a downed", a.onView(state(na, mem(na, 1, m.Down, "admin"), mem(nb, 2, m.Up, "admin"))), "stop")
	expect(t, "b asks meanwhile", a.onReceive(nb, HandOverToMe), "send:b:HAND_OVER_IN_PROGRESS")
	expect(t, "stopped", a.onStopped(), "send:b:HAND_OVER_DONE ended")
	expect(t, "views after the end", a.onView(upAB(na)), "")
	if a.phase != Ended {
		t.Fatalf("a %v", a.phase)
	}
	c := testMachine(nb)
	c.onView(upAB(nb))
	expect(t, "younger removed", c.onView(state(nb, mem(na, 1, m.Up, "admin"))), "ended")
}

// TestMachineTakeOverOfferTimesOut: an oldest that finds a newer
// placement (not leaving itself) stops its instance when the new one
// never asks, and tells it.
func TestMachineTakeOverOfferTimesOut(t *testing.T) {
	b := testMachine(nb)
	// b runs it; then a's older incarnation reappears as Up (a removal
	// that did not complete, as Akka allows for)
	b.onView(state(nb, mem(nb, 2, m.Up, "admin")))
	expect(t, "older member appears", b.onView(upAB(nb)), "send:a:TAKE_OVER_FROM_ME")
	for i := 1; i < 5; i++ {
		expect(t, fmt.Sprint("tick ", i), b.onTick(), "send:a:TAKE_OVER_FROM_ME")
	}
	expect(t, "tick 5", b.onTick(), "send:a:HAND_OVER_IN_PROGRESS stop")
	expect(t, "stopped", b.onStopped(), "send:a:HAND_OVER_DONE handed-over:a")
}

// TestMachineWaitsForEveryFormerHolder: a node that becomes the
// placement while two older members are leaving waits for both, not only
// for the last placement it saw (here b, which never ran the instance).
func TestMachineWaitsForEveryFormerHolder(t *testing.T) {
	c := testMachine(nc)
	expect(t, "a exiting, b leaving", c.onView(state(nc, mem(na, 1, m.Exiting, "admin"), mem(nb, 2, m.Leaving, "admin"), mem(nc, 3, m.Up, "admin"))), "")
	both := state(nc, mem(na, 1, m.Exiting, "admin"), mem(nb, 2, m.Exiting, "admin"), mem(nc, 3, m.Up, "admin"))
	expect(t, "both exiting", c.onView(both), "send:a:HAND_OVER_TO_ME send:b:HAND_OVER_TO_ME")
	expect(t, "b never ran it", c.onReceive(nb, HandOverDone), "")
	expect(t, "b removed", c.onView(state(nc, mem(na, 1, m.Exiting, "admin"), mem(nc, 3, m.Up, "admin"))), "")
	expect(t, "tick", c.onTick(), "send:a:HAND_OVER_TO_ME")
	expect(t, "a stopped it", c.onReceive(na, HandOverDone), "start:hand-over")
}

// TestMachineAdoptsTakeOverOffer: an unknown holder that offers
// TakeOverFromMe is waited for too.
func TestMachineAdoptsTakeOverOffer(t *testing.T) {
	c := testMachine(nc)
	c.onView(state(nc, mem(na, 1, m.Up, "admin"), mem(nb, 2, m.Up, "admin"), mem(nc, 3, m.Up, "admin")))
	// c's view jumps: a removed, b Exiting
	expect(t, "a gone, b exiting", c.onView(state(nc, mem(nb, 2, m.Exiting, "admin"), mem(nc, 3, m.Up, "admin"))), "send:b:HAND_OVER_TO_ME")
	expect(t, "b done", c.onReceive(nb, HandOverDone), "start:take-over")

	d := testMachine(nc)
	d.onView(state(nc, mem(na, 1, m.Up, "admin"), mem(nc, 3, m.Up, "admin")))
	expect(t, "a exiting", d.onView(state(nc, mem(na, 1, m.Exiting, "admin"), mem(nb, 2, m.Exiting, "admin"), mem(nc, 3, m.Up, "admin"))),
		"send:a:HAND_OVER_TO_ME send:b:HAND_OVER_TO_ME")
	expect(t, "a done", d.onReceive(na, HandOverDone), "")
	expect(t, "b offers", d.onReceive(nb, TakeOverFromMe), "send:b:HAND_OVER_TO_ME")
	expect(t, "b done", d.onReceive(nb, HandOverDone), "start:hand-over")
}

// world is a model of a cluster of machines for TestMachineNeverOverlaps:
// one global membership that each node's view copies when it syncs, a
// pool of hand-over messages delivered in any order or lost, and
// instances that stop when the test says so. Nodes crash (their instance
// dies with them) and leave gracefully; only crashed nodes are downed.
type world struct {
	t        *rapid.T
	names    []string
	nodes    map[string]*wnode
	global   map[string]m.Member
	inflight []wmsg
	log      []string
}

type wnode struct {
	u                                   m.UniqueAddress
	mach                                *machine
	alive, running, stopping, exitAsked bool
}

type wmsg struct {
	from, to m.UniqueAddress
	sig      wire.SingletonSignal
}

func newWorld(t *rapid.T, n int) *world {
	w := &world{t: t, nodes: map[string]*wnode{}, global: map[string]m.Member{}}
	for i := range n {
		name := string(rune('a' + i))
		u := ua(name, uint64(i+1))
		w.names = append(w.names, name)
		w.nodes[name] = &wnode{u: u, alive: true,
			mach: newMachine(machineConfig{self: u, role: "admin", handOverTicks: 3, takeOverTicks: 5, exitTicks: 2})}
		w.global[name] = mem(u, i+1, m.Up, "admin")
	}
	return w
}

func (w *world) view(self m.UniqueAddress) m.State {
	var ms []m.Member
	for _, mb := range w.global {
		ms = append(ms, mb)
	}
	g := m.NewGossip(ms...)
	var observer m.UniqueAddress
	for _, name := range w.names {
		if n := w.nodes[name]; n.alive && g.HasMember(n.u) {
			observer = n.u
			break
		}
	}
	r := g.Reachability
	for _, name := range w.names {
		if n := w.nodes[name]; !n.alive && g.HasMember(n.u) && !observer.IsZero() {
			r = r.Unreachable(observer, n.u)
		}
	}
	return m.State{Gossip: g.WithReachability(r), Self: self}
}

func (w *world) apply(n *wnode, es []effect) {
	for _, e := range es {
		switch e := e.(type) {
		case startInstance:
			if n.running {
				w.t.Fatalf("%v started twice\n%s", n.u, strings.Join(w.log, "\n"))
			}
			n.running = true
		case stopInstance:
			n.stopping = true
		case sendSignal:
			w.inflight = append(w.inflight, wmsg{n.u, e.to, e.sig})
		}
		w.log = append(w.log, fmt.Sprintf("  %s: %s", n.u.Host, describe([]effect{e})))
	}
	w.check()
}

func (w *world) check() {
	var on []string
	for _, name := range w.names {
		if n := w.nodes[name]; n.alive && n.running {
			on = append(on, name)
		}
	}
	if len(on) > 1 {
		w.t.Fatalf("instances run on %v at once\n%s", on, strings.Join(w.log, "\n"))
	}
}

// step draws and performs one event.
func (w *world) step() {
	name := rapid.SampledFrom(w.names).Draw(w.t, "node")
	n := w.nodes[name]
	mb, member := w.global[name]
	op := rapid.SampledFrom([]string{"sync", "sync", "sync", "deliver", "deliver", "deliver", "drop", "tick", "tick",
		"stopDone", "stopDone", "leave", "exiting", "exitTask", "removeExited", "crash", "down", "removeDown"}).Draw(w.t, "op")
	w.log = append(w.log, op+" "+name)
	switch op {
	case "sync":
		if n.alive {
			w.apply(n, n.mach.onView(w.view(n.u)))
		}
	case "deliver", "drop":
		if len(w.inflight) == 0 {
			return
		}
		i := rapid.IntRange(0, len(w.inflight)-1).Draw(w.t, "msg")
		msg := w.inflight[i]
		w.inflight = slices.Delete(w.inflight, i, i+1)
		dst := w.nodes[msg.to.Host]
		w.log = append(w.log, fmt.Sprintf("  %s %s→%s", msg.sig, msg.from.Host, msg.to.Host))
		if op == "deliver" && dst.alive {
			w.apply(dst, dst.mach.onReceive(msg.from, msg.sig))
		}
	case "tick":
		if n.alive {
			w.apply(n, n.mach.onTick())
		}
	case "stopDone":
		if n.alive && n.stopping {
			n.running, n.stopping = false, false
			w.apply(n, n.mach.onStopped())
		}
	case "leave":
		if n.alive && member && mb.Status == m.Up {
			w.global[name] = mb.WithStatus(m.Leaving)
		}
	case "exiting":
		if member && mb.Status == m.Leaving {
			w.global[name] = mb.WithStatus(m.Exiting)
		}
	case "exitTask":
		// the daemon runs the exit task once its own view has it Exiting
		if n.alive && !n.exitAsked && n.mach.view.Gossip.StatusOf(n.u) == m.Exiting {
			n.exitAsked = true
			w.apply(n, n.mach.onLeaving())
		}
	case "removeExited":
		// removed once its exit task returned (nothing runs), or when it
		// crashed while Exiting
		if member && mb.Status == m.Exiting && (!n.alive || (n.exitAsked && !n.mach.phase.Running())) {
			delete(w.global, name)
		}
	case "crash":
		if n.alive {
			n.alive, n.running, n.stopping = false, false, false
		}
	case "down":
		if !n.alive && member && mb.Status != m.Down {
			w.global[name] = mb.WithStatus(m.Down)
		}
	case "removeDown":
		if member && mb.Status == m.Down {
			delete(w.global, name)
		}
	}
}

// settle runs every pending duty for a while: views synced, messages
// delivered, stops completed, ticks, exits and removals.
func (w *world) settle() {
	for range 40 {
		for _, name := range w.names {
			n := w.nodes[name]
			mb, member := w.global[name]
			switch {
			case member && !n.alive && mb.Status != m.Down && mb.Status != m.Exiting:
				w.global[name] = mb.WithStatus(m.Down)
			case member && !n.alive:
				delete(w.global, name)
			case member && mb.Status == m.Leaving:
				w.global[name] = mb.WithStatus(m.Exiting)
			case member && mb.Status == m.Exiting && n.exitAsked && !n.mach.phase.Running():
				delete(w.global, name)
			}
			if !n.alive {
				continue
			}
			w.apply(n, n.mach.onView(w.view(n.u)))
			if !n.exitAsked && n.mach.view.Gossip.StatusOf(n.u) == m.Exiting {
				n.exitAsked = true
				w.apply(n, n.mach.onLeaving())
			}
			if n.stopping {
				n.running, n.stopping = false, false
				w.apply(n, n.mach.onStopped())
			}
			w.apply(n, n.mach.onTick())
		}
		msgs := w.inflight
		w.inflight = nil
		for _, msg := range msgs {
			if dst := w.nodes[msg.to.Host]; dst.alive {
				w.apply(dst, dst.mach.onReceive(msg.from, msg.sig))
			}
		}
	}
}

// TestMachineNeverOverlaps: whatever the order of views, messages (lost
// or late), ticks, stops, leaves and crashes, no two live nodes run the
// instance at once; and once things settle, the placement runs it and
// nobody else does.
func TestMachineNeverOverlaps(t *testing.T) {
	rounds := 10 // 1000 histories; -rapid.checks multiplies
	if testing.Short() {
		rounds = 1
	}
	for range rounds {
		checkNeverOverlaps(t)
	}
}

func checkNeverOverlaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, rapid.IntRange(2, 4).Draw(t, "nodes"))
		for range rapid.IntRange(0, 120).Draw(t, "steps") {
			w.step()
		}
		w.settle()
		p, ok := Placement(w.view(m.UniqueAddress{}), "admin")
		for _, name := range w.names {
			n := w.nodes[name]
			want := ok && p.Address == n.u && n.alive
			if n.alive && n.running != want {
				t.Fatalf("settled: %s running=%v, placement %v (ok %v), phase %v\n%s",
					name, n.running, p.Address, ok, n.mach.phase, strings.Join(w.log[max(0, len(w.log)-80):], "\n"))
			}
		}
	})
}
