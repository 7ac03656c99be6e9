package host

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/cluster/lease"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/servicelevel"
)

// keeperMembers is the membership the keeper reads, set by the test.
type keeperMembers struct {
	mu     sync.Mutex
	st     membership.State
	heard  map[membership.UniqueAddress]time.Time
	proven map[membership.UniqueAddress]bool
	subs   []func(membership.Event)
	downs  []membership.Address
}

func (f *keeperMembers) Self() membership.UniqueAddress { return f.st.Self }
func (f *keeperMembers) Snapshot() membership.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}
func (f *keeperMembers) Subscribe(fn func(membership.Event)) (membership.State, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, fn)
	return f.st, func() {}
}
func (f *keeperMembers) LastHeard(u membership.UniqueAddress) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.heard[u]
	return t, ok
}
func (f *keeperMembers) ProvenDead(u membership.UniqueAddress) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.proven[u]
}
func (f *keeperMembers) Down(addr membership.Address) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.downs = append(f.downs, addr)
}
func (f *keeperMembers) downed() []membership.Address {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.downs)
}
func (f *keeperMembers) hear(u membership.UniqueAddress, at time.Time) {
	f.mu.Lock()
	f.heard[u] = at
	f.mu.Unlock()
}
func (f *keeperMembers) emit(ev membership.Event) {
	f.mu.Lock()
	subs := append([]func(membership.Event){}, f.subs...)
	f.mu.Unlock()
	for _, fn := range subs {
		fn(ev)
	}
}

type keeperRig struct {
	clock *clockwork.FakeClock
	store lease.Lease
	ms    *keeperMembers
	view  *redundancy.RoleView
	k     *leaseKeeper
	peer  membership.UniqueAddress
}

// newKeeperRig is node A (self) of a pair with peer B, both Up drivers of
// ClusterId site, A Primary; the lease is a memory lease on the rig's clock.
// peerURIs replaces OpcUa:PeerApplicationUris (the size of the set).
func newKeeperRig(t *testing.T, peerURIs ...string) *keeperRig {
	t.Helper()
	clock := clockwork.NewFakeClockAt(tNow)
	a, b := nodeA, nodeB
	ms := &keeperMembers{st: stateOf(a, mem(a, membership.Up, 1, "site", "driver"), mem(b, membership.Up, 2, "site", "driver")),
		heard: map[membership.UniqueAddress]time.Time{b: clock.Now()}, proven: map[membership.UniqueAddress]bool{}}
	cfg := config.Default()
	cfg.Node.ClusterId = "site"
	cfg.OpcUa.PeerApplicationUris = []string{"urn:b"}
	if len(peerURIs) > 0 {
		cfg.OpcUa.PeerApplicationUris = peerURIs
	}
	cfg.Cluster.FailureDetector.AcceptableHeartbeatPause = 3 * time.Second
	cfg.Redundancy.PromotionHold = 2 * time.Second
	store := lease.NewMemory("site", 6*time.Second, clock)
	k := newLeaseKeeper(store, cfg, clock, slog.New(slog.DiscardHandler))
	k.bind(ms)
	view := redundancy.NewRoleView(ms, "site")
	view.SetRole(redundancy.RolePrimary, 7)
	k.follow(view)
	view.SetLicence(k.licence) // as startRedundancy does
	return &keeperRig{clock: clock, store: store, ms: ms, view: view, k: k, peer: b}
}

// settle runs one tick and waits for its store call.
func (r *keeperRig) settle(t *testing.T) {
	t.Helper()
	r.k.tick()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the keeper's store call ended", func() bool { return !r.k.busy() }))
}

func (r *keeperRig) holder(t *testing.T) string {
	t.Helper()
	g, err := r.store.Holder(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return g.Holder
}

// TestLeaseKeeperLicence: a whole set needs no lease; a peer silent for a
// third of the pause makes the keeper take the lease, which licenses the
// Primary once the set stops being whole; held elsewhere (or the store
// gone) the Primary is fenced; whole again, the keeper frees what it took.
func TestLeaseKeeperLicence(t *testing.T) {
	r := newKeeperRig(t)
	r.settle(t)
	if l := r.k.licence(); l != gate.Licensed || r.holder(t) != "" {
		t.Fatalf("whole set: licence %v, holder %q; want licensed without the lease", l, r.holder(t))
	}
	if in := r.view.Input(); in.Role != gate.RolePrimary || in.Licence != gate.Licensed {
		t.Fatalf("whole set: role %v, licence %v", in.Role, in.Licence)
	}

	r.clock.Advance(1800 * time.Millisecond) // the peer silent for > a heartbeat + pause/4
	r.settle(t)
	if h := r.holder(t); h != nodeA.String() {
		t.Fatalf("after a heartbeat and a quarter of the pause the holder is %q, want this node", h)
	}
	// Still whole (silent less than the pause): the keeper keeps what it
	// took instead of freeing it and taking it again on every tick.
	for range 6 {
		r.clock.Advance(250 * time.Millisecond)
		r.settle(t)
		if h := r.holder(t); h != nodeA.String() {
			t.Fatalf("%v of silence: the holder is %q, want this node throughout", r.clock.Since(tNow), h)
		}
	}
	r.clock.Advance(2 * time.Second) // silent past the pause: not whole
	r.settle(t)
	if l := r.k.licence(); l != gate.Licensed {
		t.Fatalf("split with the lease: licence %v, want licensed", l)
	}
	// Renewals keep it for as long as the split lasts.
	for range 10 {
		r.clock.Advance(time.Second)
		r.settle(t)
	}
	if l := r.k.licence(); l != gate.Licensed || r.holder(t) != nodeA.String() {
		t.Fatalf("after 10 s split: licence %v, holder %q", l, r.holder(t))
	}

	// The peer is heard again: whole; the keeper frees the lease it took.
	r.ms.hear(r.peer, r.clock.Now())
	r.settle(t)
	if h := r.holder(t); h != "" {
		t.Fatalf("whole again: the lease is still held by %q", h)
	}
	if l := r.k.licence(); l != gate.Licensed {
		t.Fatalf("whole again: licence %v", l)
	}

	// Another node holds the lease: a split fences this Primary (100, gate
	// denies with "fenced").
	if _, err := r.store.Acquire(t.Context(), "other#9"); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(4 * time.Second)
	r.settle(t)
	if l := r.k.licence(); l != gate.Unlicensed {
		t.Fatalf("split, lease held elsewhere: licence %v, want unlicensed", l)
	}
	if d := gate.Decide(r.view.Input()); d.Reason != gate.DeniedFenced {
		t.Fatalf("the gate decides %+v, want fenced", d)
	}
	if lvl := primaryLevel(r.k.licence()); lvl != servicelevel.Critical {
		t.Fatalf("level %d, want 100", lvl)
	}
}

// TestLeaseKeeperPromotionHold: becoming Primary after the downing of a
// peer that may be alive holds 240 and the gate for PromotionHold; after a
// peer the fast path proved dead there is no hold.
func TestLeaseKeeperPromotionHold(t *testing.T) {
	for _, proven := range []bool{false, true} {
		t.Run(fmt.Sprintf("proven=%v", proven), func(t *testing.T) {
			r := newKeeperRig(t)
			r.view.SetRole(redundancy.RoleSecondary, 7)
			_ = r.k.licence() // a Secondary: no hold
			r.ms.mu.Lock()
			r.ms.proven[r.peer] = proven
			r.ms.mu.Unlock()
			r.ms.emit(membership.Event{Kind: membership.MemberDowned, Member: mem(r.peer, membership.Down, 2, "site", "driver")})
			if _, err := r.store.Acquire(t.Context(), nodeA.String()); err != nil {
				t.Fatal(err)
			}
			r.k.Acquire(nodeA.String()) // the core's decision took the lease
			r.view.SetRole(redundancy.RolePrimary, 8)
			want := gate.Holding
			if proven {
				want = gate.Licensed
			}
			r.clock.Advance(4 * time.Second) // the peer is silent: not whole
			if l := r.k.licence(); l != want {
				t.Fatalf("just promoted: licence %v, want %v", l, want)
			}
			if lvl := primaryLevel(r.k.licence()); !proven && lvl != servicelevel.Follower {
				t.Fatalf("level in the hold %d, want 240", lvl)
			}
			r.clock.Advance(1 * time.Second)
			r.settle(t) // renews the lease meanwhile
			r.clock.Advance(1100 * time.Millisecond)
			r.settle(t)
			if l := r.k.licence(); l != gate.Licensed {
				t.Fatalf("after the hold: licence %v, want licensed", l)
			}
		})
	}
}

// TestLeaseKeeperFencesAWokenProcess: a process frozen past the pause
// that wakes to messages queued through its freeze (its peer looks heard
// just now) is not licensed by that: without the lease it is fenced from
// its first instant awake, before its keeper has even ticked.
func TestLeaseKeeperFencesAWokenProcess(t *testing.T) {
	r := newKeeperRig(t)
	r.settle(t)
	if l := r.k.licence(); l != gate.Licensed {
		t.Fatalf("before the freeze: %v", l)
	}
	// Frozen 10 s; meanwhile the peer downed it and took the lease.
	r.clock.Advance(10 * time.Second)
	if _, err := r.store.Acquire(t.Context(), nodeB.String()); err != nil {
		t.Fatal(err)
	}
	r.ms.hear(r.peer, r.clock.Now()) // a heartbeat that waited in the socket
	if l := r.k.licence(); l != gate.Unlicensed {
		t.Fatalf("woken, peer just 'heard', lease elsewhere: %v, want unlicensed", l)
	}
	if d := gate.Decide(r.view.Input()); d.Reason != gate.DeniedFenced {
		t.Fatalf("woken: the gate decides %+v, want fenced", d)
	}
	r.settle(t) // the first tick awake: still fenced for a pause
	r.ms.hear(r.peer, r.clock.Now())
	if l := r.k.licence(); l != gate.Unlicensed {
		t.Fatalf("first tick awake: %v, want unlicensed", l)
	}
	// A live pair after a long stall of this process: the pause passes
	// awake, the peer keeps talking, the set is whole again and the peer
	// frees the lease it took (as its keeper does). The store named the
	// peer as holder on the first tick awake: that hold counts for a TTL
	// (6 s here) after the answer, whatever the set looks like.
	if err := r.store.Release(t.Context(), nodeB.String()); err != nil {
		t.Fatal(err)
	}
	for range 13 { // ticks every 250 ms, the peer heartbeating
		r.clock.Advance(250 * time.Millisecond)
		r.ms.hear(r.peer, r.clock.Now())
		r.settle(t)
	}
	if l := r.k.licence(); l != gate.Unlicensed {
		t.Fatalf("a pause awake, less than a TTL after the store named the peer: %v, want unlicensed", l)
	}
	for range 12 {
		r.clock.Advance(250 * time.Millisecond)
		r.ms.hear(r.peer, r.clock.Now())
		r.settle(t)
	}
	if l := r.k.licence(); l != gate.Licensed {
		t.Fatalf("a pause awake with the peer heard: %v, want licensed", l)
	}
}

// TestLeaseKeeperLeavesAMinorityToTheDecision: in a set of three, a
// Primary cut off alone does not take the lease ahead of the decision (the
// majority's resolver takes it); it is fenced meanwhile.
func TestLeaseKeeperLeavesAMinorityToTheDecision(t *testing.T) {
	r := newKeeperRig(t, "urn:b", "urn:c") // a set of three
	c := uaddr("10.0.0.3", 4053, 3)
	r.ms.mu.Lock()
	r.ms.st = stateOf(nodeA, mem(nodeA, membership.Up, 1, "site", "driver"), mem(nodeB, membership.Up, 2, "site", "driver"),
		mem(c, membership.Up, 3, "site", "driver"))
	r.ms.heard[c] = r.clock.Now()
	r.ms.mu.Unlock()
	r.settle(t)
	if l := r.k.licence(); l != gate.Licensed {
		t.Fatalf("whole set of three: %v", l)
	}
	for range 18 { // both peers silent for 4.5 s, past the pause plus a heartbeat interval
		r.clock.Advance(250 * time.Millisecond)
		r.settle(t)
	}
	if h := r.holder(t); h != "" {
		t.Fatalf("a lone Primary of three took the lease (%q)", h)
	}
	if l := r.k.licence(); l != gate.Unlicensed {
		t.Fatalf("alone among three: %v, want unlicensed", l)
	}
	// One peer still heard: half or more of three is this side, so the
	// keeper takes the lease ahead of the decision.
	for range 4 {
		r.clock.Advance(250 * time.Millisecond)
		r.ms.hear(c, r.clock.Now())
		r.settle(t)
	}
	if h := r.holder(t); h != nodeA.String() {
		t.Fatalf("a Primary with one of two peers: holder %q, want this node", h)
	}
}

// TestLeaseKeeperFastPathWaitsOutTheHolder: the crash fast path never takes
// the lease from the member whose port refuses (a firewall's TCP reset in
// front of a live holder looks the same as a dead process): it asks again
// a TTL later and gets the lease only if the holder stopped renewing.
func TestLeaseKeeperFastPathWaitsOutTheHolder(t *testing.T) {
	for _, renews := range []bool{true, false} {
		t.Run(fmt.Sprintf("holder renews=%v", renews), func(t *testing.T) {
			r := newKeeperRig(t)
			if _, err := r.store.Acquire(t.Context(), r.peer.String()); err != nil {
				t.Fatal(err)
			}
			got := make(chan bool, 1)
			go func() { got <- r.k.fastPath(r.peer) }()
			// The first ask was refused: the fast path waits a TTL.
			if err := r.clock.BlockUntilContext(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			if h := r.holder(t); h != r.peer.String() {
				t.Fatalf("while the fast path waits the holder is %q, want the peer still", h)
			}
			if renews {
				r.clock.Advance(3 * time.Second)
				if _, err := r.store.Acquire(t.Context(), r.peer.String()); err != nil {
					t.Fatal(err)
				}
				r.clock.Advance(3 * time.Second)
			} else {
				r.clock.Advance(6 * time.Second)
			}
			var ok bool
			select {
			case ok = <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("the fast path did not answer after the TTL")
			}
			if want := !renews; ok != want {
				t.Fatalf("fast path acquired %v, want %v (holder %q)", ok, want, r.holder(t))
			}
			want := nodeA.String()
			if renews {
				want = r.peer.String()
			}
			if h := r.holder(t); h != want {
				t.Fatalf("holder %q, want %q", h, want)
			}
		})
	}
}

// TestLeaseKeeperDownsItselfWhenItLosesTheLeaseWhileSplit: a Primary that
// held the lease through a split and finds it taken by the other side
// (its store silent for longer than the TTL meanwhile) downs itself, once,
// so that it restarts and rejoins, instead of staying fenced for good. A
// Primary whose set is whole is licensed by the set: it stays.
func TestLeaseKeeperDownsItselfWhenItLosesTheLeaseWhileSplit(t *testing.T) {
	r := newKeeperRig(t)
	r.settle(t)
	r.clock.Advance(4 * time.Second) // the peer silent past the pause: split
	r.settle(t)
	if l := r.k.licence(); l != gate.Licensed || r.holder(t) != nodeA.String() {
		t.Fatalf("split: licence %v, holder %q; want licensed with the lease", l, r.holder(t))
	}
	r.clock.Advance(7 * time.Second) // no tick ran: the lease ran out
	if _, err := r.store.Acquire(t.Context(), r.peer.String()); err != nil {
		t.Fatal(err)
	}
	r.settle(t)
	r.clock.Advance(time.Second)
	r.settle(t)
	if d := r.ms.downed(); len(d) != 1 || d[0] != nodeA.Address() {
		t.Fatalf("downs asked: %v, want this node once", d)
	}
	if l := r.k.licence(); l != gate.Unlicensed {
		t.Fatalf("after losing the lease: licence %v, want unlicensed", l)
	}

	// Whole: losing a lease it held is no reason to leave.
	w := newKeeperRig(t)
	w.settle(t)
	if !w.k.Acquire(nodeA.String()) { // the core's decision took the lease
		t.Fatal("the core's acquire was refused")
	}
	// The lease passes to the peer behind this node's back (as if it had
	// run out), then the renewal is due.
	if err := w.store.Release(t.Context(), nodeA.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.Acquire(t.Context(), w.peer.String()); err != nil {
		t.Fatal(err)
	}
	for range 12 { // past the renewal, due a third of the TTL after the take
		w.clock.Advance(250 * time.Millisecond)
		w.ms.hear(w.peer, w.clock.Now())
		w.settle(t)
	}
	if h := w.k.Holder(); h != w.peer.String() {
		t.Fatalf("the keeper saw holder %q, want the peer (its renewal refused)", h)
	}
	if d := w.ms.downed(); len(d) != 0 {
		t.Fatalf("whole set: downs asked %v, want none", d)
	}
}
