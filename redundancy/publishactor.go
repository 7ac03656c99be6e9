package redundancy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/redundancy/servicelevel"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// PublishActorOptions configure an OpcUaPublishActor.
type PublishActorOptions struct {
	// Membership is this node's membership daemon. Required.
	Membership Membership
	// PubSub carries snapshots, probe results and NodeStatus on
	// wire.Topic. Required.
	PubSub PubSub
	// DbProbe is the Config DB probe actor (health's db-health-probe):
	// every compute Asks it with a *DbHealthQuery and waits at most
	// DbAskTimeout for its *DbHealthReply; no answer in time counts as the
	// Config DB known and unreachable. It wins over DbHealth.
	DbProbe *actor.PID
	// DbHealth is the Config DB probe as a function call, for tests and
	// callers without the probe actor. Nil (and no DbProbe): never known
	// (the legacy role-only mapping applies).
	DbHealth DbHealth
	// Publisher receives the level of every compute, repeats included: it
	// is the one place that suppresses them (the host's publisher in front
	// of the OPC UA server). Required.
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
	// Parent is where the actor is spawned (the node's actors.Tree, which
	// supervises it). Nil: Start creates a private local actor system
	// (actors.NewLocal, actors.Plain on Clock) and Stop shuts it down.
	Parent actors.Parent
	// Licence, if set, is the elected Primary's lease-majority licence
	// (gate.LicenceOf), servicelevel.Inputs.Licence. It is asked only
	// while the last snapshot names this node Primary. Called on the
	// actor; must be quick. Call NotifyDbChanged when it changes.
	Licence func() gate.Licence
	// Woken, if set, is the woken-process fence (package cluster/woken),
	// servicelevel.Inputs.Woken. Called on the actor; must be quick. Call
	// NotifyDbChanged when it changes.
	Woken func() bool
	// Pin, if set, is the drain and test-hook pin, servicelevel.Inputs.Pin;
	// nil pins nothing. The caller holds it, so it survives a restart of
	// the actor. Called on the actor; must be quick. Call NotifyPinChanged
	// when it changes.
	Pin func() servicelevel.Pin
	// Devices, if set, counts this node's field devices: reached are
	// connected (not degraded), total are the deployment's. It is
	// advertised in NodeStatus whatever the mode. Nil: 0 and 0. Called on
	// the actor; must be quick.
	Devices func() (reached, total int)
	// DeviceLevel: Redundancy:DeviceHealth is level or failover, so
	// servicelevel's device rule applies (servicelevel.DeviceHealth.Rated).
	DeviceLevel bool
	// DeviceFailover, if set (Redundancy:DeviceHealth failover), decides
	// on every compute whether this Primary hands its role over; HandOver
	// is then called with the reason. The caller holds it, so its timers
	// survive a restart of the actor.
	DeviceFailover *DeviceFailover
	// HandOver starts a device hand-over (the manual failover path). Called
	// on the actor goroutine; must not block.
	HandOver func(reason string)
	// Clock drives HealthTick and timestamps. Default: Parent's clock, or
	// the wall clock without a Parent.
	Clock clockwork.Clock
	// Logger. Default: discard.
	Logger *slog.Logger
}

// Names of the OpcUaPublishActor in the actor tree.
const (
	PublishActorName = "opcua-publish"
	PublishActorKind = "OpcUaPublishActor"
)

// PublishActor is the OpcUaPublishActor of a driver node, a protoactor
// actor (PublishActorName) under Options.Parent. On every HealthTick,
// every snapshot, every DB probe change (NotifyDbChanged), every probe
// result about this node and every membership event it gathers its inputs
// (Observed.Inputs, the licence, the pin), computes servicelevel.Of and
// hands the level to the Publisher, which suppresses repeats; the first
// level goes out at Start, even 0. It logs each level change, and
// publishes this node's NodeStatus at Start, on every level change and on
// every HealthTick.
//
// The PublishActor value is the façade: it subscribes to the topic and to
// membership once (the callbacks send messages to the actor's PID, which a
// restart keeps) and holds what must survive a restart of the actor (see
// the package documentation). Each incarnation of the actor recomputes at
// once when it starts, logs and advertises its level even when it equals
// the previous one.
type PublishActor struct {
	o PublishActorOptions

	stopOwn   func() // shuts down the private system without a Parent (actors.OwnParent)
	parent    actors.Parent
	pid       atomic.Pointer[actor.PID]
	ready     chan struct{} // closed after the first compute
	readyOnce sync.Once
	stopCh    chan struct{} // closed by Stop
	once      sync.Once
	unsub     []func()

	level        atomic.Int32 // last computed level, -1 before the first
	incarnations atomic.Uint32

	// mem is what this node learned about itself, kept across restarts of
	// the actor: its latest snapshot entry and the peers' probe results.
	mu  sync.Mutex
	mem struct {
		entry   Entry
		entryAt time.Time
		probes  map[string]ProbeSeen
	}
}

// publishIncarnation is one incarnation of the actor; its state starts
// over at a restart, except what it reads back from the façade.
type publishIncarnation struct {
	a        *PublishActor
	ctx      actor.Context // of the message being handled
	stopTick func()

	obs      Observed
	last     int  // the level this incarnation last logged and advertised, -1 before its first
	missed   int  // consecutive snapshots without this node while Up
	warned   bool // the one-time missing-entry warning was logged
	peers    map[string]peerSeen
	memberAt time.Time // latest membership event not yet followed by a level change
	devices  deviceView
	// epochs is the highest redundancy epoch seen per ClusterId: a
	// snapshot with an older one is stale (the last one of a process that
	// was frozen and resumed) and is ignored.
	epochs map[string]uint64
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

// Messages of the OpcUaPublishActor.
type (
	snapshotIn struct{ s Snapshot }
	probeIn    struct {
		prober string
		ok     bool
	}
	statusIn    struct{ i NodeInfo }
	recompute   struct{ why string }
	memberEvent struct{ at time.Time }
	healthTick  struct{}
)

// NewPublishActor returns a stopped actor.
func NewPublishActor(o PublishActorOptions) *PublishActor {
	if o.Membership == nil || o.PubSub == nil || o.Publisher == nil {
		panic("redundancy: PublishActorOptions needs Membership, PubSub and Publisher")
	}
	if o.Clock == nil {
		if o.Parent != nil {
			o.Clock = o.Parent.Clock()
		} else {
			o.Clock = clockwork.NewRealClock()
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &PublishActor{o: o, ready: make(chan struct{}), stopCh: make(chan struct{})}
	a.level.Store(-1)
	a.mem.probes = map[string]ProbeSeen{}
	return a
}

// Start spawns the actor, subscribes to the topic and to membership, and
// returns once the first level has been handed to the Publisher. The actor
// runs until Stop or ctx ends. A failed spawn (the name is taken) is
// logged at Error and leaves the actor stopped.
func (a *PublishActor) Start(ctx context.Context) {
	a.parent, a.stopOwn = actors.OwnParent(a.o.Parent, a.o.Clock)
	pid, err := a.parent.SpawnNamed(a.parent.Props(PublishActorKind, func() actor.Actor { return a.incarnation() }), PublishActorName)
	if err != nil {
		a.o.Logger.Error("OpcUaPublishActor not started", "err", err)
		a.stopOwn()
		return
	}
	a.pid.Store(pid)
	a.unsub = append(a.unsub, a.o.PubSub.Subscribe(wire.Topic, a.handle))
	_, unsubMembers := a.o.Membership.Subscribe(func(membership.Event) { a.send(memberEvent{at: a.o.Clock.Now()}) })
	a.unsub = append(a.unsub, unsubMembers)
	select {
	case <-a.ready:
	case <-a.stopCh:
	}
	go func() {
		select {
		case <-ctx.Done():
			a.Stop()
		case <-a.stopCh:
		}
	}()
}

// Stop ends the actor and waits for it.
func (a *PublishActor) Stop() {
	a.once.Do(func() {
		close(a.stopCh)
		for _, fn := range a.unsub {
			fn()
		}
		if pid := a.pid.Load(); pid != nil {
			_ = a.parent.Root().StopFuture(pid).Wait()
		}
		if a.stopOwn != nil {
			a.stopOwn()
		}
	})
}

// PID is the actor's (nil before Start): the same across its restarts.
func (a *PublishActor) PID() *actor.PID { return a.pid.Load() }

// NotifyDbChanged asks for a recomputation after the DB probe's verdict
// (or the licence) changed. It never blocks.
func (a *PublishActor) NotifyDbChanged() { a.send(recompute{why: "event"}) }

// NotifyPinChanged asks for a recomputation after Options.Pin changed: a
// node draining for a manual failover then shows 0 to its peers and the
// admin panel as well as on its Server object. It never blocks.
func (a *PublishActor) NotifyPinChanged() { a.send(recompute{why: "pinned"}) }

// Level returns the last level handed to the Publisher; ok is false before
// the first.
func (a *PublishActor) Level() (level byte, ok bool) {
	l := a.level.Load()
	return byte(l), l >= 0
}

// Dropped counts messages lost on the way to the actor. It is always 0
// now: the actor's mailbox is unbounded and a send never blocks nor drops
// (a message sent while the actor restarts waits in its mailbox).
func (a *PublishActor) Dropped() uint64 { return 0 }

// send posts m to the actor without blocking; before Start and after Stop
// it goes nowhere.
func (a *PublishActor) send(m any) {
	if pid := a.pid.Load(); pid != nil {
		a.parent.Root().Send(pid, m)
	}
}

// handle is the topic subscriber: it decodes and filters on the mediator's
// goroutine and never blocks.
func (a *PublishActor) handle(_ membership.UniqueAddress, msg proto.Message) {
	self := a.o.Membership.Self().NodeID()
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

// incarnation makes a fresh actor, seeded from what the façade kept.
func (a *PublishActor) incarnation() *publishIncarnation {
	c := &publishIncarnation{a: a, last: -1, peers: map[string]peerSeen{}, devices: newDeviceView()}
	c.obs = Observed{Self: a.o.Membership.Self(), ConfiguredRoles: slices.Clone(a.o.ConfiguredRoles)}
	a.mu.Lock()
	c.obs.Entry, c.obs.EntryAt, c.obs.Probes = a.mem.entry, a.mem.entryAt, maps.Clone(a.mem.probes)
	a.mu.Unlock()
	return c
}

// Receive handles one message.
func (c *publishIncarnation) Receive(ctx actor.Context) {
	c.ctx = ctx
	defer func() { c.ctx = nil }()
	a := c.a
	now := a.o.Clock.Now()
	switch m := ctx.Message().(type) {
	case *actor.Started:
		n := a.incarnations.Add(1)
		why := "start"
		if n > 1 {
			why = "restart"
		}
		c.compute(why) // last is -1: published and advertised whatever the level
		c.stopTick = actors.Every(ctx.ActorSystem().Root, a.o.Clock, ctx.Self(), HealthTick, healthTick{})
		a.readyOnce.Do(func() { close(a.ready) })
	case *actor.Stopping, *actor.Restarting:
		if c.stopTick != nil {
			c.stopTick()
		}
	case healthTick:
		c.refreshPeers()
		c.compute("tick")
		c.advertise()
	case snapshotIn:
		c.onSnapshot(m.s, now)
		c.compute("snapshot")
	case probeIn:
		p := ProbeSeen{Ok: m.ok, At: now}
		c.obs.Probes[m.prober] = p
		a.mu.Lock()
		a.mem.probes[m.prober] = p
		a.mu.Unlock()
		c.compute("probe")
	case statusIn:
		c.onPeerDevices(m.i, now)
		c.onPeerStatus(m.i, now)
	case recompute:
		c.compute(m.why)
	case memberEvent:
		c.memberAt = m.at
		c.compute("membership")
	}
}

// onSnapshot keeps this incarnation's entry, updates the role view and
// warns once when snapshots keep omitting this node while a driver peer
// exists.
func (c *publishIncarnation) onSnapshot(s Snapshot, now time.Time) {
	a := c.a
	if c.epochs == nil {
		c.epochs = make(map[string]uint64)
	}
	for cid, st := range s.Epochs {
		if st.Epoch < c.epochs[cid] {
			// A Primary older than one already seen: a singleton that
			// was frozen publishes what it held before the freeze. Taking
			// it would make the Primary that replaced it a Secondary.
			a.o.Logger.Info("redundancy snapshot ignored: its epoch is older than one already seen",
				"publisher", s.Publisher, "clusterId", cid, "epoch", st.Epoch, "seen", c.epochs[cid])
			return
		}
	}
	for cid, st := range s.Epochs {
		c.epochs[cid] = max(c.epochs[cid], st.Epoch)
	}
	if a.o.RoleView != nil {
		a.o.RoleView.SetPrimaryFrom(s)
	}
	e, ok := s.Entries[c.obs.Self.NodeID()]
	if ok && e.UID == c.obs.Self.UID {
		c.obs.Entry, c.obs.EntryAt = e, now
		a.mu.Lock()
		a.mem.entry, a.mem.entryAt = e, now
		a.mu.Unlock()
		c.missed = 0
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
	c.missed++
	if c.missed >= 2 && !c.warned {
		c.warned = true
		a.o.Logger.Warn("redundancy snapshots do not name this node while a driver peer exists: its ServiceLevel stays stale and the gate denies; check that Cluster:PublicHostname and Cluster:Port give the same NodeId on every node",
			"nodeId", c.obs.Self.NodeID(), "uid", c.obs.Self.UID, "publisher", s.Publisher, "entries", keysOf(s.Entries))
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

// dbStatus is the Config DB verdict of one compute: the probe actor's
// answer (an Ask, at most DbAskTimeout), else DbHealth's.
func (c *publishIncarnation) dbStatus(now time.Time) (DbStatus, bool) {
	a := c.a
	if a.o.DbProbe != nil && c.ctx != nil {
		res, err := c.ctx.RequestFuture(a.o.DbProbe, &DbHealthQuery{}, DbAskTimeout).Result()
		if err == nil {
			switch r := res.(type) {
			case *DbHealthReply:
				return r.Status, r.Known
			case DbHealthReply:
				return r.Status, r.Known
			}
			err = fmt.Errorf("answered %T", res)
		}
		why := fmt.Sprintf("the Config DB probe failed: %v", err)
		if errors.Is(err, actor.ErrTimeout) {
			why = fmt.Sprintf("the Config DB probe did not answer within %v", DbAskTimeout)
		}
		return DbStatus{Reachable: false, AsOf: now, Err: why}, true
	}
	if a.o.DbHealth != nil {
		return a.o.DbHealth.DbStatus()
	}
	return DbStatus{}, false
}

// gather is every input of servicelevel.Of at now.
func (c *publishIncarnation) gather(now time.Time) servicelevel.Inputs {
	a := c.a
	c.obs.Members = a.o.Membership.Snapshot()
	c.obs.Db, c.obs.DbKnown = c.dbStatus(now)
	in := c.obs.Inputs(now)
	// Only the elected Primary's licence counts (servicelevel.Of), and the
	// lease keeper starts a promotion hold when first asked as Primary: it
	// is asked then and only then, as before.
	if a.o.Licence != nil && in.IsDriverPrimary {
		in.Licence = a.o.Licence()
	}
	if a.o.Woken != nil {
		in.Woken = a.o.Woken()
	}
	if a.o.Pin != nil {
		in.Pin = a.o.Pin()
	}
	in.Devices = c.deviceHealth(now)
	return in
}

// compute gathers the inputs, computes the level and publishes it; a
// change (or the first level of an incarnation) is also logged, timed and
// advertised.
func (c *publishIncarnation) compute(why string) {
	a := c.a
	now := a.o.Clock.Now()
	in := c.gather(now)
	level := servicelevel.Of(in)
	before := a.level.Swap(int32(level))
	a.o.Publisher.Publish(level)
	c.decideHandOver(in)
	if int(level) == c.last {
		if c.devices.changed() && why != "tick" {
			c.advertise()
		}
		return
	}
	previous := c.last
	if previous < 0 {
		previous = int(before) // the level before a restart, -1 at the start
	}
	a.o.Logger.Info("ServiceLevel computed", "level", level, "previous", previous, "why", why,
		"status", in.Status, "driver", in.HasDriverRole, "dbKnown", in.DbHealthKnown, "dbReachable", in.DbReachable,
		"stale", in.DbHealthKnown && servicelevel.IsStale(in), "primary", in.IsDriverPrimary, "probeOk", in.OpcUaProbeOk, "licence", in.Licence.String(),
		"woken", in.Woken, "devicesReached", in.Devices.Reached, "devicesTotal", in.Devices.Total, "peerDevicesReached", in.Devices.PeerReached)
	first := c.last < 0
	c.last = int(level)
	if !c.memberAt.IsZero() {
		since := now.Sub(c.memberAt)
		if a.o.AfterMembershipChange != nil && !first && since <= MembershipCauseWindow {
			a.o.AfterMembershipChange(level, since)
		}
		c.memberAt = time.Time{}
	}
	if why != "tick" {
		c.advertise()
	}
}

// advertise publishes this node's NodeStatus, with the Config DB health
// of the latest compute.
func (c *publishIncarnation) advertise() {
	a := c.a
	if c.last < 0 {
		return
	}
	db, dbErr := ConfigDbStateOf(c.obs.Db, c.obs.DbKnown)
	err := a.o.PubSub.Publish(wire.Topic, NodeInfo{
		NodeID: c.obs.Self.NodeID(), UID: c.obs.Self.UID, ClusterID: a.o.ClusterID,
		ApplicationURI: a.o.ApplicationURI, OpcUaEndpoint: a.o.OpcUaEndpoint,
		ServiceLevel: byte(c.last), At: a.o.Clock.Now(), ConfigDb: db, ConfigDbError: dbErr,
		DevicesReached: c.devices.reached, DevicesTotal: c.devices.total,
	}.ToWire())
	c.devices.advertised()
	if err != nil {
		a.o.Logger.Error("NodeStatus not published", "err", err)
	}
}

// onPeerStatus records a peer's NodeStatus and reports it to PeerStatus.
func (c *publishIncarnation) onPeerStatus(i NodeInfo, now time.Time) {
	a := c.a
	if a.o.PeerStatus == nil || !slices.Contains(a.o.PeerApplicationURIs, i.ApplicationURI) {
		return
	}
	old, had := c.peers[i.ApplicationURI]
	c.peers[i.ApplicationURI] = peerSeen{info: i, at: now}
	if !had || old.gone || old.info.ServiceLevel != i.ServiceLevel {
		a.o.PeerStatus(i.ApplicationURI, i.ServiceLevel, true)
	}
}

// refreshPeers reports peers without fresh news as not alive, once.
func (c *publishIncarnation) refreshPeers() {
	now := c.a.o.Clock.Now()
	for uri, p := range c.peers {
		if !p.gone && !servicelevel.Fresh(p.at, now) {
			p.gone = true
			c.peers[uri] = p
			c.a.o.PeerStatus(uri, 0, false)
		}
	}
}
