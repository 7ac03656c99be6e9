package redundancy

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/redundancy/servicelevel"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// levels records what the actor publishes.
type levels struct {
	mu  sync.Mutex
	got []byte
}

func (l *levels) Publish(level byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, level)
}

func (l *levels) all() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// changes is levels without consecutive repeats: what a publisher that
// suppresses repeats passes on.
func changes(levels []byte) []byte { return slices.Compact(slices.Clone(levels)) }

func (l *levels) last() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.got) == 0 {
		return -1
	}
	return int(l.got[len(l.got)-1])
}

type fakeDb struct {
	mu    sync.Mutex
	st    DbStatus
	known bool
}

func (d *fakeDb) DbStatus() (DbStatus, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st, d.known
}

func (d *fakeDb) set(reachable bool, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st, d.known = DbStatus{Reachable: reachable, AsOf: at}, true
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type pubRig struct {
	clock   *clockwork.FakeClock
	members *fakeMembers
	bus     *fakeBus
	db      *fakeDb
	levels  *levels
	view    *RoleView
	log     *syncBuf
	peers   *levels // peer levels reported through PeerStatus (alive only)
	goneMu  sync.Mutex
	gone    []string
	actor   *PublishActor
	afterMu sync.Mutex
	after   []time.Duration // AfterMembershipChange calls
	self    m.Member
	peer    m.Member
	pinMu   sync.Mutex
	pin     servicelevel.Pin // Options.Pin; pinMu must be held.
}

// drain pins the level as a manual failover does: Options.Pin says Drain,
// and the actor is told.
func (r *pubRig) drain() {
	r.pinMu.Lock()
	r.pin.Drain = true
	r.pinMu.Unlock()
	r.actor.NotifyPinChanged()
}

const selfNode, peerNode = "127.0.0.1:4002", "127.0.0.1:4001"

func newPubRig(t *testing.T) *pubRig {
	t.Helper()
	r := &pubRig{clock: clockwork.NewFakeClockAt(tEpoch), bus: newFakeBus(), db: &fakeDb{}, levels: &levels{}, log: &syncBuf{}, peers: &levels{}}
	r.peer = member("127.0.0.1", 4001, 1, m.Up, 1, "pair", "admin", "driver")
	r.self = member("127.0.0.1", 4002, 2, m.Up, 2, "pair", "admin", "driver")
	r.members = newFakeMembers(r.self.Address)
	r.view = NewRoleView(r.members, "pair")
	r.actor = NewPublishActor(PublishActorOptions{
		Membership: r.members, PubSub: r.bus, DbHealth: r.db, Publisher: r.levels, RoleView: r.view,
		PeerStatus: func(uri string, level byte, alive bool) {
			if alive {
				r.peers.Publish(level)
			} else {
				r.goneMu.Lock()
				r.gone = append(r.gone, uri)
				r.goneMu.Unlock()
			}
		},
		Pin: func() servicelevel.Pin {
			r.pinMu.Lock()
			defer r.pinMu.Unlock()
			return r.pin
		},
		PeerApplicationURIs: []string{"urn:a"},
		ConfiguredRoles:     []string{"admin", "driver"}, ClusterID: "pair",
		ApplicationURI: "urn:b", OpcUaEndpoint: "opc.tcp://127.0.0.1:4842",
		Clock: r.clock, Logger: slog.New(slog.NewTextHandler(r.log, nil)),
		AfterMembershipChange: func(_ byte, since time.Duration) {
			r.afterMu.Lock()
			r.after = append(r.after, since)
			r.afterMu.Unlock()
		},
	})
	return r
}

func (r *pubRig) afters() []time.Duration {
	r.afterMu.Lock()
	defer r.afterMu.Unlock()
	return slices.Clone(r.after)
}

func (r *pubRig) start(t *testing.T) {
	t.Helper()
	r.actor.Start(context.Background())
	t.Cleanup(r.actor.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.clock.BlockUntilContext(ctx, 1); err != nil { // the HealthTick ticker
		t.Fatal(err)
	}
}

// snapshot publishes a snapshot naming self with role and uid.
func (r *pubRig) snapshot(selfRole Role, selfUID uint64) {
	s := Snapshot{Entries: map[string]Entry{
		peerNode: {NodeID: peerNode, UID: 1, Role: RoleSecondary, ClusterID: "pair", Status: m.Up},
	}, Epochs: EpochBook{}, AsOf: r.clock.Now(), Publisher: peerNode}
	if selfRole != RoleUnknown {
		s.Entries[selfNode] = Entry{NodeID: selfNode, UID: selfUID, Role: selfRole, ClusterID: "pair", IsDriverPrimary: selfRole == RolePrimary, Status: m.Up}
	}
	if selfRole == RolePrimary {
		s.Epochs["pair"] = EpochState{Epoch: 1, Primary: selfNode, PrimaryUID: selfUID}
	} else if selfRole == RoleSecondary {
		s.Entries[peerNode] = Entry{NodeID: peerNode, UID: 1, Role: RolePrimary, IsDriverPrimary: true, ClusterID: "pair", Status: m.Up}
	}
	r.bus.Publish(wire.Topic, s.ToWire())
}

func (r *pubRig) probe(target string, ok bool) {
	r.bus.Publish(wire.Topic, &wire.OpcUaProbeResult{Target: target, Ok: ok, Prober: peerNode, AtUnixMs: wire.UnixMs(r.clock.Now())})
}

func (r *pubRig) wantLevel(t *testing.T, want byte) {
	t.Helper()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True(fmt.Sprintf("level %d", want), func() bool { return r.levels.last() == int(want) }))
}

// settle is a round trip through the actor: when it returns, the actor has
// handled every message sent to it before.
func (r *pubRig) settle(t *testing.T) {
	t.Helper()
	roundTrip(t, r.actor.parent.Root(), r.actor.PID())
}

// tick moves the clock by HealthTick and waits until the actor has handled
// a tick at the new time: every tick advertises a NodeStatus stamped with
// the time it was handled at. (A tick the ticker dropped because the one
// before was not read yet is covered: that one is handled at the new time.)
func (r *pubRig) tick(t *testing.T) {
	t.Helper()
	r.clock.Advance(HealthTick)
	at := wire.UnixMs(r.clock.Now())
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a tick at "+r.clock.Now().Format(time.StampMilli), func() bool {
		return slices.ContainsFunc(all[*wire.NodeStatus](r.bus), func(s *wire.NodeStatus) bool { return s.GetAtUnixMs() == at })
	}))
}

func TestPublishActorFirstLevelAtOnce(t *testing.T) {
	r := newPubRig(t)
	r.actor.Start(context.Background())
	defer r.actor.Stop()
	// Not a member yet: 0, published synchronously by Start, before any
	// tick.
	if got := r.levels.all(); !slices.Equal(got, []byte{0}) {
		t.Fatalf("levels after Start = %v, want [0]", got)
	}
	if l, ok := r.actor.Level(); !ok || l != 0 {
		t.Fatalf("Level() = %d, %v", l, ok)
	}
	// Its NodeStatus went out with it.
	st := all[*wire.NodeStatus](r.bus)
	if len(st) != 1 || st[0].GetNodeId() != selfNode || st[0].GetUid() != 2 || st[0].GetOpcuaEndpoint() != "opc.tcp://127.0.0.1:4842" || st[0].GetServiceLevel() != 0 {
		t.Fatalf("NodeStatus at start: %v", st)
	}
}

func TestPublishActorFollowsItsInputs(t *testing.T) {
	r := newPubRig(t)
	r.start(t)
	r.wantLevel(t, 0)

	// Joins and comes Up; the DB answers; no snapshot names it yet: stale,
	// 200.
	r.members.set(r.peer, r.self)
	r.db.set(true, r.clock.Now())
	r.actor.NotifyDbChanged()
	r.wantLevel(t, 200) // DB reachable, no snapshot: stale
	if in := r.view.Input(); in.Role != RoleUnknown || in.Drivers != 2 {
		t.Fatalf("role view before a snapshot: %v, %d", in.Role, in.Drivers)
	}

	// The snapshot names this node Secondary: 240; then Primary: 250.
	r.snapshot(RoleSecondary, 2)
	r.wantLevel(t, 240)
	if r.view.Role() != RoleSecondary {
		t.Fatalf("role view %v", r.view.Role())
	}
	r.snapshot(RolePrimary, 2)
	r.wantLevel(t, 250)
	if r.view.Role() != RolePrimary || r.view.Epoch() != 1 {
		t.Fatalf("role view %v epoch %d, want Primary with the snapshot's epoch 1", r.view.Role(), r.view.Epoch())
	}

	// A failed probe of another node changes nothing; of this node: 200.
	r.probe(peerNode, false)
	r.settle(t)
	if r.levels.last() != 250 {
		t.Fatalf("a probe about a peer moved the level to %d", r.levels.last())
	}
	r.probe(selfNode, false)
	r.wantLevel(t, 200)
	r.probe(selfNode, true)
	r.wantLevel(t, 250)

	// The same snapshot and a tick hand the same level to the Publisher
	// again (it is the one place that suppresses repeats) and change
	// nothing else: no level change is logged. (The actor logs a change
	// after it hands the level over: settle first, so that the count
	// includes the 250 above.)
	r.settle(t)
	n, logged := len(r.levels.all()), strings.Count(r.log.String(), "ServiceLevel computed")
	r.snapshot(RolePrimary, 2)
	r.clock.Advance(HealthTick)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the two computes published", func() bool { return len(r.levels.all()) >= n+2 }))
	r.settle(t)
	if again := r.levels.all()[n:]; slices.ContainsFunc(again, func(l byte) bool { return l != 250 }) {
		t.Fatalf("a repeated snapshot and a tick published %v, want only 250", again)
	}
	if got := strings.Count(r.log.String(), "ServiceLevel computed"); got != logged {
		t.Fatalf("%d level changes logged for a repeat", got-logged)
	}

	// A snapshot for another incarnation at this address is not ours: the
	// role becomes unknown, the entry we had stays until it is stale.
	r.snapshot(RolePrimary, 99)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the role view forgets the role", func() bool { return r.view.Role() == RoleUnknown }))

	// The DB becomes unreachable: the HealthTick picks it up (100).
	r.db.set(false, r.clock.Now())
	r.clock.Advance(HealthTick)
	r.wantLevel(t, 100)
	r.db.set(true, r.clock.Now())
	r.actor.NotifyDbChanged()
	r.wantLevel(t, 250)

	// No snapshot for more than 30 s (the admin singleton is gone): 200.
	for range 6 {
		r.db.set(true, r.clock.Now())
		r.clock.Advance(HealthTick)
	}
	r.wantLevel(t, 200)

	// Leaving: 0.
	r.self.Status = m.Leaving
	r.members.set(r.peer, r.self)
	r.wantLevel(t, 0)

	got := changes(r.levels.all())
	want := []byte{0, 200, 240, 250, 200, 250, 100, 250, 200, 0}
	if !slices.Equal(got, want) {
		t.Fatalf("published changes %v, want %v", got, want)
	}
}

func TestPublishActorProbeFreshness(t *testing.T) {
	r := newPubRig(t)
	r.start(t)
	r.members.set(r.peer, r.self)
	r.db.set(true, r.clock.Now())
	r.snapshot(RoleSecondary, 2)
	r.wantLevel(t, 240)
	r.probe(selfNode, false)
	r.wantLevel(t, 200)
	// 30 s later the failure is old: benefit of the doubt (the snapshot
	// and DB verdict are kept fresh meanwhile).
	for range 6 {
		r.clock.Advance(HealthTick)
		r.db.set(true, r.clock.Now())
		r.snapshot(RoleSecondary, 2)
	}
	// The last snapshot's compute, at +30 s, is done (and a tick still on
	// its way computes at +30 s too).
	r.settle(t)
	if r.levels.last() != 200 {
		t.Fatalf("level %d: the failure stopped counting within 30 s", r.levels.last())
	}
	r.clock.Advance(HealthTick)
	r.db.set(true, r.clock.Now())
	r.snapshot(RoleSecondary, 2)
	r.wantLevel(t, 240)
}

func TestPublishActorWarnsOnceWhenSnapshotsOmitIt(t *testing.T) {
	r := newPubRig(t)
	r.start(t)
	r.members.set(r.peer, r.self)
	for range 3 {
		r.snapshot(RoleUnknown, 0)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the warning", func() bool { return strings.Contains(r.log.String(), "do not name this node") }))
	for range 3 {
		r.snapshot(RoleUnknown, 0)
	}
	r.settle(t)
	if n := strings.Count(r.log.String(), "do not name this node"); n > 1 {
		t.Fatalf("%d warnings, want one", n)
	}
	if !strings.Contains(r.log.String(), "nodeId="+selfNode) {
		t.Fatalf("the warning does not name the NodeId:\n%s", r.log.String())
	}
}

func TestPublishActorNoWarningWithoutDriverPeer(t *testing.T) {
	r := newPubRig(t)
	r.start(t)
	r.peer.Roles = []string{"admin"}
	r.members.set(r.peer, r.self)
	for range 4 {
		r.snapshot(RoleUnknown, 0)
	}
	r.settle(t)
	if strings.Contains(r.log.String(), "do not name this node") {
		t.Fatalf("a warning without a driver peer:\n%s", r.log.String())
	}
}

func TestPublishActorAdvertisesAndReportsPeers(t *testing.T) {
	r := newPubRig(t)
	r.start(t)
	r.clock.Advance(HealthTick)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the NodeStatus of the tick", func() bool { return len(all[*wire.NodeStatus](r.bus)) == 2 }))

	// A configured peer's status is shown; an unknown URI is not.
	r.bus.Publish(wire.Topic, NodeInfo{NodeID: peerNode, UID: 1, ApplicationURI: "urn:a", ServiceLevel: 250, At: r.clock.Now()}.ToWire())
	r.bus.Publish(wire.Topic, NodeInfo{NodeID: "127.0.0.1:4009", UID: 9, ApplicationURI: "urn:stranger", ServiceLevel: 240, At: r.clock.Now()}.ToWire())
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the peer's level", func() bool { return r.peers.last() == 250 }))
	r.settle(t)
	if got := r.peers.all(); len(got) != 1 {
		t.Fatalf("peer levels %v: a stranger's level was reported", got)
	}
	// No news for 30 s: reported gone on a tick.
	for range 7 {
		r.clock.Advance(HealthTick)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the peer reported gone", func() bool {
		r.goneMu.Lock()
		defer r.goneMu.Unlock()
		return slices.Equal(r.gone, []string{"urn:a"})
	}))
	r.tick(t)
	r.goneMu.Lock()
	gone := slices.Clone(r.gone)
	r.goneMu.Unlock()
	if len(gone) > 1 {
		t.Fatalf("the peer reported gone twice: %v", gone)
	}
}

func TestPublishActorTimesMembershipToServiceLevel(t *testing.T) {
	r := newPubRig(t)
	r.start(t)
	r.wantLevel(t, 0)

	// A membership event that changes the level at once: observed as 0 s
	// after it (the fake clock did not move).
	r.db.set(true, r.clock.Now())
	r.members.set(r.peer, r.self)
	r.wantLevel(t, 200) // Up, DB reachable, no snapshot yet: stale
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("first observation", func() bool { return len(r.afters()) == 1 }))
	if got := r.afters()[0]; got != 0 {
		t.Fatalf("since = %v, want 0", got)
	}

	// A change without a membership event since the last one: not observed.
	r.snapshot(RoleSecondary, 2)
	r.wantLevel(t, 240)

	// A membership event that does not change the level; 1.5 s later a
	// snapshot makes this node Primary: the change counts from the event.
	r.members.set(r.peer, r.self)
	r.clock.Advance(1500 * time.Millisecond)
	r.db.set(true, r.clock.Now())
	r.snapshot(RolePrimary, 2)
	r.wantLevel(t, 250)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("second observation", func() bool { return len(r.afters()) == 2 }))
	if got := r.afters()[1]; got != 1500*time.Millisecond {
		t.Fatalf("since = %v, want 1.5s", got)
	}

	// A level change longer than FreshFor after the last membership event
	// is not its consequence. The DB and the snapshot are kept fresh while
	// the clock moves, so only the DB outage at the end changes the level.
	r.members.set(r.peer, r.self)
	// The actor must take the event before the clock moves: taken 30 s
	// late, it would find the last snapshot 30 s old and change the level
	// inside the window. A peer status sent after it is a barrier (one
	// mailbox, in order).
	r.bus.Publish(wire.Topic, NodeInfo{NodeID: peerNode, UID: 1, ApplicationURI: "urn:a", ServiceLevel: 200, At: r.clock.Now()}.ToWire())
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the peer status sent after the membership event", func() bool { return r.peers.last() == 200 }))
	for range int(FreshFor/HealthTick) + 1 {
		r.clock.Advance(HealthTick)
		r.db.set(true, r.clock.Now())
		r.snapshot(RolePrimary, 2)
	}
	r.clock.Advance(time.Second)
	r.db.set(false, r.clock.Now())
	r.actor.NotifyDbChanged()
	r.wantLevel(t, 100)
	// AfterMembershipChange would run after Publish, in the same compute:
	// a peer status sent now is handled only once that compute returned.
	r.bus.Publish(wire.Topic, NodeInfo{NodeID: peerNode, UID: 1, ApplicationURI: "urn:a", ServiceLevel: 240, At: r.clock.Now()}.ToWire())
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the peer status sent after the level", func() bool { return r.peers.last() == 240 }))
	if got := r.afters(); len(got) != 2 {
		t.Fatalf("observations %v, want only the two earlier ones", got)
	}
}

// TestPublishActorAdvertisesConfigDbHealth: NodeStatus carries the Config
// DB verdict of the latest compute — unknown before the first probe, then
// unreachable with the probe's error, then ok without one.
func TestPublishActorAdvertisesConfigDbHealth(t *testing.T) {
	r := newPubRig(t)
	r.start(t)
	latest := func() *wire.NodeStatus {
		st := all[*wire.NodeStatus](r.bus)
		return st[len(st)-1]
	}
	if s := latest(); s.GetConfigdbState() != wire.ConfigDbState_CONFIG_DB_STATE_UNKNOWN || s.GetConfigdbError() != "" {
		t.Fatalf("NodeStatus before any probe: %v", s)
	}
	r.db.mu.Lock()
	r.db.st, r.db.known = DbStatus{Reachable: false, AsOf: r.clock.Now(), Err: "dial tcp 10.0.0.9:1433: connection refused"}, true
	r.db.mu.Unlock()
	r.clock.Advance(HealthTick)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("an unreachable NodeStatus", func() bool {
		s := latest()
		return s.GetConfigdbState() == wire.ConfigDbState_CONFIG_DB_STATE_UNREACHABLE &&
			s.GetConfigdbError() == "dial tcp 10.0.0.9:1433: connection refused"
	}))
	r.db.set(true, r.clock.Now())
	r.clock.Advance(HealthTick)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("an ok NodeStatus", func() bool {
		s := latest()
		return s.GetConfigdbState() == wire.ConfigDbState_CONFIG_DB_STATE_OK && s.GetConfigdbError() == ""
	}))
}

// A node draining for a manual failover pins 0: published and advertised
// at once, and held whatever its inputs do next.
func TestPublishActorPinHoldsTheLevel(t *testing.T) {
	r := newPubRig(t)
	r.start(t)
	r.members.set(r.peer, r.self)
	r.db.set(true, r.clock.Now())
	r.actor.NotifyDbChanged()
	r.snapshot(RolePrimary, 2)
	r.wantLevel(t, 250)

	r.drain()
	r.wantLevel(t, 0)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a NodeStatus with level 0", func() bool {
		st := all[*wire.NodeStatus](r.bus)
		return st[len(st)-1].GetServiceLevel() == 0
	}))
	r.snapshot(RoleSecondary, 2)
	r.actor.NotifyDbChanged()
	r.tick(t)
	r.snapshot(RolePrimary, 2)
	r.settle(t)
	if l, _ := r.actor.Level(); r.levels.last() != 0 || l != 0 {
		t.Fatalf("the pinned level moved: published %d, Level %d", r.levels.last(), l)
	}
	got := r.levels.all()
	for _, l := range got[slices.Index(got, 250)+1:] {
		if l != 0 {
			t.Fatalf("levels %v: after the pin only 0 may be published", got)
		}
	}
}

// TestPublishActorIgnoresAnOlderEpoch: a snapshot whose epoch is older
// than one already seen (a frozen Primary, resumed, publishes what it held
// before the freeze) changes nothing: the Primary that replaced it stays
// Primary at 250.
func TestPublishActorIgnoresAnOlderEpoch(t *testing.T) {
	r := newPubRig(t)
	r.start(t)
	r.members.set(r.peer, r.self)
	r.db.set(true, r.clock.Now())
	r.actor.NotifyDbChanged()
	publish := func(selfRole, peerRole Role, epoch uint64, primary string) {
		s := Snapshot{Entries: map[string]Entry{
			selfNode: {NodeID: selfNode, UID: 2, Role: selfRole, ClusterID: "pair", IsDriverPrimary: selfRole == RolePrimary, Status: m.Up},
			peerNode: {NodeID: peerNode, UID: 1, Role: peerRole, ClusterID: "pair", IsDriverPrimary: peerRole == RolePrimary, Status: m.Up},
		}, Epochs: EpochBook{"pair": {Epoch: epoch, Primary: primary}}, AsOf: r.clock.Now(), Publisher: peerNode}
		r.bus.Publish(wire.Topic, s.ToWire())
	}
	publish(RoleSecondary, RolePrimary, 4, peerNode)
	r.wantLevel(t, 240)
	publish(RolePrimary, RoleSecondary, 5, selfNode)
	r.wantLevel(t, 250)
	publish(RoleSecondary, RolePrimary, 4, peerNode) // the frozen Primary's last snapshot
	r.settle(t)
	if r.levels.last() != 250 || r.view.Role() != RolePrimary || r.view.Epoch() != 5 {
		t.Fatalf("after a stale snapshot: level %d, role %v epoch %d; want 250, Primary, 5", r.levels.last(), r.view.Role(), r.view.Epoch())
	}
	if !strings.Contains(r.log.String(), "redundancy snapshot ignored") {
		t.Fatal("the stale snapshot was not logged")
	}
}
