package redundancy

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// PublishActorOptions configure an OpcUaPublishActor.
type PublishActorOptions struct {
	// Membership is this node's membership daemon. Required.
	Membership Membership
	// PubSub carries snapshots, probe results and NodeStatus on
	// wire.Topic. Required.
	PubSub PubSub
	// DbHealth is the Config DB probe. Nil: never known (the legacy
	// role-only mapping applies).
	DbHealth DbHealth
	// Publisher receives each new level (repeats are suppressed here).
	// Required.
	Publisher LevelPublisher
	// RoleView, if set, gets this node's role from every snapshot.
	RoleView *RoleView
	// PeerStatus, if set, is told each configured peer's ServiceLevel
	// (from its NodeStatus) and whether that news is fresh; stale or no
	// news reports level 0, not alive. Called on the actor goroutine; must
	// not block.
	PeerStatus func(applicationURI string, level byte, alive bool)
	// PeerApplicationURIs are the peers PeerStatus accepts
	// (OpcUa:PeerApplicationUris).
	PeerApplicationURIs []string
	// ConfiguredRoles are Cluster:Roles (used before this node is a
	// member).
	ConfiguredRoles []string
	// ClusterID is Node:ClusterId.
	ClusterID string
	// ApplicationURI and OpcUaEndpoint are advertised in NodeStatus: peers
	// probe OpcUaEndpoint.
	ApplicationURI string
	OpcUaEndpoint  string
	// AfterMembershipChange, if set, is told each published level change
	// that follows a membership event within MembershipCauseWindow, with
	// the time since the latest such event (the ServiceLevel's reaction
	// time to a join, crash, downing or leave). Called on the actor
	// goroutine; must not block.
	AfterMembershipChange func(level byte, since time.Duration)
	// Clock drives HealthTick and timestamps. Default: the wall clock.
	Clock clockwork.Clock
	// Logger. Default: discard.
	Logger *slog.Logger
}

// PublishActor is the OpcUaPublishActor of a driver node. On every
// HealthTick, every snapshot, every DB probe change (NotifyDbChanged),
// every probe result about this node and every membership event it
// gathers its inputs (Observed.Inputs), computes ComputeServiceLevel and
// hands a changed level to the Publisher; the first level goes out at
// Start, even 0. It also publishes this node's NodeStatus at Start, on
// every level change and on every HealthTick.
type PublishActor struct {
	o      PublishActorOptions
	inbox  chan any
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	level   atomic.Int32 // last published level, -1 before the first
	dropped atomic.Uint64

	// Owned by the run goroutine.
	obs       Observed
	last      int
	missed    int  // consecutive snapshots without this node while Up
	warned    bool // the one-time missing-entry warning was logged
	peers     map[string]peerSeen
	snapshots uint64
	memberAt  time.Time // latest membership event not yet followed by a level change
	pinned    int       // -1, or the level Pin fixed until the actor stops
}

// MembershipCauseWindow is how long after a membership event a level
// change still counts as its consequence for AfterMembershipChange: the
// Stale window, beyond which the level moves for other reasons.
const MembershipCauseWindow = FreshFor

type peerSeen struct {
	info NodeInfo
	at   time.Time // arrival
	gone bool      // reported not alive
}

type (
	snapshotIn struct{ s Snapshot }
	probeIn    struct {
		prober string
		ok     bool
	}
	statusIn    struct{ i NodeInfo }
	recompute   struct{}
	memberEvent struct{ at time.Time }
	pinIn       struct{ level byte }
)

// inboxSize bounds the messages waiting for the actor; a full inbox drops
// (counted): a lost snapshot is repeated within RepublishEvery, a lost
// probe result within the probe period.
const inboxSize = 1024

// NewPublishActor returns a stopped actor.
func NewPublishActor(o PublishActorOptions) *PublishActor {
	if o.Membership == nil || o.PubSub == nil || o.Publisher == nil {
		panic("redundancy: PublishActorOptions needs Membership, PubSub and Publisher")
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &PublishActor{o: o, inbox: make(chan any, inboxSize), done: make(chan struct{}), last: -1, pinned: -1, peers: map[string]peerSeen{}}
	a.level.Store(-1)
	a.obs = Observed{Self: o.Membership.Self(), ConfiguredRoles: slices.Clone(o.ConfiguredRoles), Probes: map[string]ProbeSeen{}}
	return a
}

// Start subscribes to the topic and to membership, publishes the first
// level at once and runs until Stop or ctx ends.
func (a *PublishActor) Start(ctx context.Context) {
	ctx, a.cancel = context.WithCancel(ctx)
	unsubTopic := a.o.PubSub.Subscribe(wire.Topic, a.handle)
	_, unsubMembers := a.o.Membership.Subscribe(func(membership.Event) { a.send(memberEvent{at: a.o.Clock.Now()}) })
	a.compute("start")
	go func() {
		defer close(a.done)
		defer unsubTopic()
		defer unsubMembers()
		a.run(ctx)
	}()
}

// Stop ends the actor and waits for it.
func (a *PublishActor) Stop() {
	a.once.Do(func() {
		if a.cancel == nil {
			close(a.done)
			return
		}
		a.cancel()
		<-a.done
	})
}

// NotifyDbChanged asks for a recomputation after the DB probe's verdict
// changed. It never blocks.
func (a *PublishActor) NotifyDbChanged() { a.send(recompute{}) }

// Level returns the last level handed to the Publisher; ok is false before
// the first.
func (a *PublishActor) Level() (level byte, ok bool) {
	l := a.level.Load()
	return byte(l), l >= 0
}

// Pin fixes the level this node computes, publishes and advertises in its
// NodeStatus to level until the actor stops, whatever its inputs say: a
// node draining for a manual failover shows 0 to its peers and the admin
// panel as well as on its Server object. It does not block.
func (a *PublishActor) Pin(level byte) { a.send(pinIn{level: level}) }

// Dropped counts messages lost to a full inbox.
func (a *PublishActor) Dropped() uint64 { return a.dropped.Load() }

func (a *PublishActor) send(m any) {
	select {
	case a.inbox <- m:
	default:
		a.dropped.Add(1)
	}
}

// handle is the topic subscriber: it decodes and filters on the mediator's
// goroutine and never blocks.
func (a *PublishActor) handle(_ membership.UniqueAddress, msg proto.Message) {
	self := a.obs.Self.NodeID()
	switch m := msg.(type) {
	case *wire.RedundancyStateChanged:
		s, err := SnapshotFromWire(m)
		if err != nil {
			a.o.Logger.Warn("redundancy snapshot refused", "err", err)
			return
		}
		a.send(snapshotIn{s})
	case *wire.OpcUaProbeResult:
		if m.GetTarget() == self && m.GetProber() != "" {
			a.send(probeIn{prober: m.GetProber(), ok: m.GetOk()})
		}
	case *wire.NodeStatus:
		if i, err := NodeInfoFromWire(m); err == nil && i.NodeID != self {
			a.send(statusIn{i})
		}
	}
}

func (a *PublishActor) run(ctx context.Context) {
	tick := a.o.Clock.NewTicker(HealthTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.Chan():
			a.refreshPeers()
			a.compute("tick")
			a.advertise()
		case m := <-a.inbox:
			a.receive(m)
		}
	}
}

func (a *PublishActor) receive(m any) {
	now := a.o.Clock.Now()
	switch m := m.(type) {
	case snapshotIn:
		a.onSnapshot(m.s, now)
		a.compute("snapshot")
	case probeIn:
		a.obs.Probes[m.prober] = ProbeSeen{Ok: m.ok, At: now}
		a.compute("probe")
	case statusIn:
		a.onPeerStatus(m.i, now)
	case recompute:
		a.compute("event")
	case memberEvent:
		a.memberAt = m.at
		a.compute("membership")
	case pinIn:
		a.pinned = int(m.level)
		a.compute("pinned")
	}
}

// onSnapshot keeps this incarnation's entry, updates the role view and
// warns once when snapshots keep omitting this node while a driver peer
// exists.
func (a *PublishActor) onSnapshot(s Snapshot, now time.Time) {
	a.snapshots++
	e, ok := s.Entries[a.obs.Self.NodeID()]
	if ok && e.UID == a.obs.Self.UID {
		a.obs.Entry, a.obs.EntryAt = e, now
		a.missed = 0
		if a.o.RoleView != nil {
			a.o.RoleView.SetRole(e.Role, s.Epochs[e.ClusterID].Epoch)
		}
		return
	}
	if a.o.RoleView != nil {
		a.o.RoleView.SetRole(RoleUnknown, 0)
	}
	st := a.o.Membership.Snapshot()
	self, member := st.SelfMember()
	if !member || self.Status != membership.Up || CountDriverMembers(st.Gossip.Members, self.ClusterID) < 2 {
		return
	}
	a.missed++
	if a.missed >= 2 && !a.warned {
		a.warned = true
		a.o.Logger.Warn("redundancy snapshots do not name this node while a driver peer exists: its ServiceLevel stays stale and the gate denies; check that Cluster:PublicHostname and Cluster:Port give the same NodeId on every node",
			"nodeId", a.obs.Self.NodeID(), "uid", a.obs.Self.UID, "publisher", s.Publisher, "entries", keysOf(s.Entries))
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// compute gathers the inputs, computes the level and publishes a change.
func (a *PublishActor) compute(why string) {
	now := a.o.Clock.Now()
	a.obs.Members = a.o.Membership.Snapshot()
	a.obs.DbKnown = false
	if a.o.DbHealth != nil {
		a.obs.Db, a.obs.DbKnown = a.o.DbHealth.DbStatus()
	}
	in := a.obs.Inputs(now)
	level := ComputeServiceLevel(in)
	if a.pinned >= 0 {
		level = byte(a.pinned)
	}
	if int(level) == a.last {
		return
	}
	a.o.Logger.Info("ServiceLevel computed", "level", level, "previous", a.last, "why", why,
		"status", in.Status, "driver", in.HasDriverRole, "dbKnown", in.DbHealthKnown, "dbReachable", in.DbReachable,
		"stale", in.DbHealthKnown && Stale(in), "primary", in.IsDriverPrimary, "probeOk", in.OpcUaProbeOk)
	first := a.last < 0
	a.last = int(level)
	a.level.Store(int32(level))
	a.o.Publisher.Publish(level)
	if !a.memberAt.IsZero() {
		since := now.Sub(a.memberAt)
		if a.o.AfterMembershipChange != nil && !first && since <= MembershipCauseWindow {
			a.o.AfterMembershipChange(level, since)
		}
		a.memberAt = time.Time{}
	}
	if why != "tick" {
		a.advertise()
	}
}

// advertise publishes this node's NodeStatus, with the Config DB health
// of the latest compute.
func (a *PublishActor) advertise() {
	if a.last < 0 {
		return
	}
	db, dbErr := ConfigDbStateOf(a.obs.Db, a.obs.DbKnown)
	err := a.o.PubSub.Publish(wire.Topic, NodeInfo{
		NodeID: a.obs.Self.NodeID(), UID: a.obs.Self.UID, ClusterID: a.o.ClusterID,
		ApplicationURI: a.o.ApplicationURI, OpcUaEndpoint: a.o.OpcUaEndpoint,
		ServiceLevel: byte(a.last), At: a.o.Clock.Now(), ConfigDb: db, ConfigDbError: dbErr,
	}.ToWire())
	if err != nil {
		a.o.Logger.Error("NodeStatus not published", "err", err)
	}
}

// onPeerStatus records a peer's NodeStatus and reports it to PeerStatus.
func (a *PublishActor) onPeerStatus(i NodeInfo, now time.Time) {
	if a.o.PeerStatus == nil || !slices.Contains(a.o.PeerApplicationURIs, i.ApplicationURI) {
		return
	}
	old, had := a.peers[i.ApplicationURI]
	a.peers[i.ApplicationURI] = peerSeen{info: i, at: now}
	if !had || old.gone || old.info.ServiceLevel != i.ServiceLevel {
		a.o.PeerStatus(i.ApplicationURI, i.ServiceLevel, true)
	}
}

// refreshPeers reports peers without fresh news as not alive, once.
func (a *PublishActor) refreshPeers() {
	now := a.o.Clock.Now()
	for uri, p := range a.peers {
		if !p.gone && !Fresh(p.at, now) {
			p.gone = true
			a.peers[uri] = p
			a.o.PeerStatus(uri, 0, false)
		}
	}
}
