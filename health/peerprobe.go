package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gopcua/opcua/uacp"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// The supervisor actor's name under its Parent, its kind, and its
// children's kind; a child is named PeerProbeName(NodeId).
const (
	PeerProbeSupervisorName = "peer-probe-supervisor"
	PeerProbeSupervisorKind = "PeerProbeSupervisor"
	PeerProbeKind           = "PeerOpcUaProbeActor"
)

// PeerProbeName is the name of the probe actor of peer nodeID under the
// supervisor: "peer-" + nodeID, e.g. peer-127.0.0.1:4053.
func PeerProbeName(nodeID string) string { return "peer-" + nodeID }

// Peer probe timings.
const (
	// ProbeInterval is how often each peer's OPC UA endpoint is probed. A
	// failure therefore demotes the peer (to ServiceLevel 200) within
	// about ProbeInterval + ProbeTimeout, and a recovery restores it as
	// fast; a result stays current for redundancy.FreshFor.
	ProbeInterval = 3 * time.Second
	// ProbeTimeout bounds one probe: TCP connect plus Hello/Acknowledge.
	ProbeTimeout = 2 * time.Second
)

// HelloProbe checks that an OPC UA server answers at endpoint
// ("opc.tcp://host:port"): it connects, sends Hello and waits for
// Acknowledge (the UACP handshake of OPC UA Part 6 §7.1.2), then ends the
// connection with an Error message (no secure channel or session is
// opened, so the server spends nothing on it). ctx bounds the whole probe.
// A refused or silent port, an ERR answer or anything other than a valid
// Acknowledge is an error.
func HelloProbe(ctx context.Context, endpoint string) error {
	c, err := (&uacp.Dialer{}).Dial(ctx, endpoint)
	if err != nil {
		return fmt.Errorf("hello %s: %w", endpoint, err)
	}
	_ = c.SetDeadline(time.Now().Add(100 * time.Millisecond))
	_ = c.Send("ERRF", &uacp.Error{ErrorCode: 0, Reason: "otopcua peer probe done"})
	return c.Close()
}

// ProbeFunc probes one endpoint; nil means it answered. It must honour ctx.
type ProbeFunc func(ctx context.Context, endpoint string) error

// PeerProbeOptions configure a PeerProbeSupervisor.
type PeerProbeOptions struct {
	// Membership is this node's membership daemon. Required: its Self is
	// the prober, and a peer that is no longer a member is not probed.
	Membership redundancy.Membership
	// PubSub carries snapshots in and probe results out on wire.Topic.
	// Required.
	PubSub redundancy.PubSub
	// Probe probes one endpoint. Default HelloProbe.
	Probe ProbeFunc
	// Interval between two probes of one peer. Default ProbeInterval.
	Interval time.Duration
	// Timeout of one probe. Default ProbeTimeout.
	Timeout time.Duration
	// Clock drives the probe period and stamps results. Default: Parent's
	// clock, or the wall clock without a Parent. (The probe's own timeout
	// is a network deadline on the wall clock.)
	Clock clockwork.Clock
	// Parent is where Start spawns the supervisor actor
	// (PeerProbeSupervisorName, kind PeerProbeSupervisorKind): the node's
	// *actors.Tree. Nil: a private local actor system (actors.Plain on
	// Clock), shut down by Stop — for unit tests and tools.
	Parent actors.Parent
	// Logger receives probe state changes. Default: discard.
	Logger *slog.Logger
}

// PeerProbeSupervisor keeps one PeerOpcUaProbeActor per OTHER driver peer:
// every member that the last redundancy snapshot names Primary or
// Secondary, whose OPC UA endpoint it carries (each node advertises its
// own in NodeStatus, and the admin singleton copies it into the
// snapshot), and that membership still lists. It spawns a probe when a
// peer appears, stops it when the peer departs, and replaces it when the
// peer's incarnation or endpoint changes. Each probe publishes an
// OpcUaProbeResult about its peer on wire.Topic; the peer's
// OpcUaPublishActor takes the results about itself.
//
// It is an actor (PeerProbeSupervisorName, kind PeerProbeSupervisorKind)
// with one child per peer (PeerProbeName(NodeId), kind PeerProbeKind),
// spawned with the Parent's props so that a failing child is restarted
// alone, after the tree's back-off, while its siblings and the supervisor
// keep their incarnations. Snapshots and membership events reach the
// supervisor as messages; the supervisor reconciles its children on each.
//
// What survives a restart: the façade keeps the latest snapshot (and the
// map Probing returns). A restarted child probes its peer at once. A
// restarted supervisor — protoactor stops its children first — rebuilds
// every child from that kept snapshot and the current membership at once,
// without waiting for the next snapshot; Probing keeps listing the peers
// meanwhile.
type PeerProbeSupervisor struct {
	o    PeerProbeOptions
	self membership.UniqueAddress
	once sync.Once
	gen  atomic.Uint64 // incarnations of the probe actors so far

	mu      sync.Mutex
	parent  actors.Parent // mu must be held.
	stopOwn func()        // shuts down the private actor system without a Parent (actors.OwnParent); mu must be held.
	pid     *actor.PID    // mu must be held.
	unsubs  []func()      // mu must be held.
	quit    chan struct{} // closed by Stop; mu must be held.
	last    redundancy.Snapshot
	probing map[string]string // NodeId → endpoint; mu must be held.
}

// Messages of the supervisor actor.
type (
	peerSnapshotArrived struct{} // a new snapshot is in the façade
	peerMembersChanged  struct{}
)

// NewPeerProbeSupervisor returns a stopped supervisor.
func NewPeerProbeSupervisor(o PeerProbeOptions) *PeerProbeSupervisor {
	if o.Membership == nil || o.PubSub == nil {
		panic("health: PeerProbeOptions needs Membership and PubSub")
	}
	if o.Probe == nil {
		o.Probe = HelloProbe
	}
	if o.Interval <= 0 {
		o.Interval = ProbeInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = ProbeTimeout
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
	return &PeerProbeSupervisor{o: o, self: o.Membership.Self(), probing: map[string]string{}}
}

// Start spawns the supervisor actor under Parent (or on a private actor
// system), subscribes to the topic and to membership, and runs until Stop
// or ctx ends. A failed spawn (the name is taken) is logged as an Error.
func (s *PeerProbeSupervisor) Start(ctx context.Context) {
	s.mu.Lock()
	if s.quit != nil {
		s.mu.Unlock()
		return // started already
	}
	s.quit = make(chan struct{})
	s.parent, s.stopOwn = actors.OwnParent(s.o.Parent, s.o.Clock)
	parent, quit := s.parent, s.quit
	s.mu.Unlock()

	pid, err := parent.SpawnNamed(parent.Props(PeerProbeSupervisorKind, func() actor.Actor { return &peerSupervisorActor{s: s} }),
		PeerProbeSupervisorName)
	if err != nil {
		s.o.Logger.Error("peer probe supervisor not started", "err", err)
		return
	}
	root := parent.Root()
	unsubTopic := s.o.PubSub.Subscribe(wire.Topic, func(_ membership.UniqueAddress, msg proto.Message) {
		if s.handle(msg) {
			root.Send(pid, peerSnapshotArrived{})
		}
	})
	_, unsubMembers := s.o.Membership.Subscribe(func(membership.Event) { root.Send(pid, peerMembersChanged{}) })
	s.mu.Lock()
	s.pid = pid
	s.unsubs = []func(){unsubTopic, unsubMembers}
	s.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			s.Stop()
		case <-quit:
		}
	}()
}

// PID is the supervisor actor's (nil before Start).
func (s *PeerProbeSupervisor) PID() *actor.PID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// Stop stops every probe and the supervisor, and waits for them.
func (s *PeerProbeSupervisor) Stop() {
	s.once.Do(func() {
		s.mu.Lock()
		parent, pid, stopOwn, unsubs, quit := s.parent, s.pid, s.stopOwn, s.unsubs, s.quit
		s.mu.Unlock()
		for _, u := range unsubs {
			u()
		}
		if quit != nil {
			close(quit)
		}
		if pid != nil {
			_ = parent.Root().StopFuture(pid).Wait() // and its children
		}
		if stopOwn != nil {
			stopOwn()
		}
		s.mu.Lock()
		s.probing = map[string]string{}
		s.mu.Unlock()
	})
}

// Probing returns the peers being probed: NodeId → endpoint.
func (s *PeerProbeSupervisor) Probing() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.probing)
}

// handle keeps a snapshot from the topic; true when msg was one.
func (s *PeerProbeSupervisor) handle(msg proto.Message) bool {
	m, ok := msg.(*wire.RedundancyStateChanged)
	if !ok {
		return false
	}
	snap, err := redundancy.SnapshotFromWire(m)
	if err != nil {
		return false
	}
	s.mu.Lock()
	s.last = snap
	s.mu.Unlock()
	return true
}

func (s *PeerProbeSupervisor) latest() redundancy.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// peerSupervisorActor is one incarnation of the supervisor actor.
type peerSupervisorActor struct {
	s       *PeerProbeSupervisor
	kids    map[string]*peerKid // by NodeId: running or stopping
	closing bool                // restarting or stopping: its children's ends must not respawn them
}

// peerKid is one child of the supervisor.
type peerKid struct {
	peer     Peer
	pid      *actor.PID
	stopping bool // stopped; its name is free once it has terminated
}

func (a *peerSupervisorActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.kids = map[string]*peerKid{}
		a.reconcile(c)
	case peerSnapshotArrived, peerMembersChanged:
		a.reconcile(c)
	case *actor.Terminated:
		if a.closing {
			return
		}
		for id, k := range a.kids {
			if k.pid.Equal(m.Who) {
				delete(a.kids, id)
				if k.stopping { // a replaced peer: its name is free now
					a.reconcile(c)
				}
				break
			}
		}
	case *actor.Restarting, *actor.Stopping:
		a.closing = true // protoactor stops the children
	}
}

// reconcile stops the children not wanted (or whose peer changed) and
// spawns the missing ones; a replacement waits until the child it
// replaces has terminated.
func (a *peerSupervisorActor) reconcile(c actor.Context) {
	if a.closing {
		return
	}
	s := a.s
	want := DesiredPeers(s.latest(), s.self, s.o.Membership.Snapshot())
	for id, k := range a.kids {
		if w, ok := want[id]; !k.stopping && (!ok || w != k.peer) {
			c.Stop(k.pid)
			k.stopping = true
			s.o.Logger.Info("peer probe stopped", "peer", id, "endpoint", k.peer.Endpoint)
		}
	}
	for id, w := range want {
		if _, ok := a.kids[id]; ok {
			continue
		}
		props := s.parent.Props(PeerProbeKind, func() actor.Actor { return &PeerOpcUaProbeActor{s: s, peer: w} })
		pid, err := c.SpawnNamed(props, PeerProbeName(id))
		if err != nil {
			s.o.Logger.Error("peer probe not started", "peer", id, "err", err)
			continue
		}
		a.kids[id] = &peerKid{peer: w, pid: pid}
		s.o.Logger.Info("peer probe started", "peer", id, "endpoint", w.Endpoint, "interval", s.o.Interval.String())
	}
	probing := map[string]string{}
	for id, k := range a.kids {
		if !k.stopping {
			probing[id] = k.peer.Endpoint
		}
	}
	s.mu.Lock()
	s.probing = probing
	s.mu.Unlock()
}

// Peer is a driver peer to probe.
type Peer struct {
	NodeID   string
	UID      uint64
	Endpoint string
}

// DesiredPeers is the supervisor's pure decision: the other driver members
// that snap names (Primary or Secondary) with an advertised endpoint, and
// that members still lists as the same live incarnation (not Down or
// Removed); with an empty membership view, snap alone decides.
func DesiredPeers(snap redundancy.Snapshot, self membership.UniqueAddress, members membership.State) map[string]Peer {
	live := map[string]uint64{}
	for _, m := range members.Gossip.Members {
		if m.Status != membership.Down && m.Status != membership.Removed {
			live[m.Address.NodeID()] = m.Address.UID
		}
	}
	out := map[string]Peer{}
	for id, e := range snap.Entries {
		if id == self.NodeID() || e.OpcUaEndpoint == "" || (e.Role != redundancy.RolePrimary && e.Role != redundancy.RoleSecondary) {
			continue
		}
		if uid, ok := live[id]; !members.Gossip.IsEmpty() && (!ok || uid != e.UID) {
			continue
		}
		out[id] = Peer{NodeID: id, UID: e.UID, Endpoint: e.OpcUaEndpoint}
	}
	return out
}

// PeerOpcUaProbeActor probes one peer's OPC UA endpoint every Interval
// (the first probe at once, at every incarnation) and publishes each
// result. The probe runs on a goroutine the actor owns and its result
// comes back as a message tagged with the incarnation and attempt: the
// result of a probe started by an earlier incarnation, or superseded, is
// dropped unpublished. A tick that finds a probe still running is skipped.
type PeerOpcUaProbeActor struct {
	s         *PeerProbeSupervisor
	peer      Peer
	gen       uint64 // this incarnation
	attempt   uint64 // probes started by it
	busy      bool   // a probe is running
	wasOk     bool
	stopTicks func()
	cancel    context.CancelFunc // of the probe running
}

// Messages of a probe actor.
type (
	peerTick   struct{ gen uint64 }
	peerResult struct {
		gen, attempt uint64
		err          error
	}
)

func (p *PeerOpcUaProbeActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		p.gen, p.wasOk = p.s.gen.Add(1), true
		p.stopTicks = actors.Every(p.s.parent.Root(), p.s.o.Clock, c.Self(), p.s.o.Interval, peerTick{gen: p.gen})
		p.probe(c)
	case peerTick:
		if m.gen == p.gen && !p.busy {
			p.probe(c)
		}
	case peerResult:
		if m.gen != p.gen || m.attempt != p.attempt || !p.busy {
			return // stale
		}
		p.busy = false
		p.cancel()
		p.publish(m.err)
	case *actor.Restarting, *actor.Stopping:
		if p.stopTicks != nil {
			p.stopTicks()
		}
		if p.cancel != nil {
			p.cancel()
		}
		p.busy = false
	}
}

// probe starts one probe on its goroutine.
func (p *PeerOpcUaProbeActor) probe(c actor.Context) {
	p.attempt++
	p.busy = true
	ctx, cancel := context.WithTimeout(context.Background(), p.s.o.Timeout)
	p.cancel = cancel
	root, self, gen, attempt, probe, endpoint := p.s.parent.Root(), c.Self(), p.gen, p.attempt, p.s.o.Probe, p.peer.Endpoint
	go func() {
		err := probe(ctx, endpoint)
		root.Send(self, peerResult{gen: gen, attempt: attempt, err: err})
	}()
}

// publish publishes the result and logs a change of verdict.
func (p *PeerOpcUaProbeActor) publish(err error) {
	o := p.s.o
	res := &wire.OpcUaProbeResult{
		Target: p.peer.NodeID, Ok: err == nil, AtUnixMs: wire.UnixMs(o.Clock.Now()),
		Prober: p.s.self.NodeID(), Endpoint: p.peer.Endpoint,
	}
	if err != nil {
		res.Error = err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			res.Error = fmt.Sprintf("no Acknowledge within %v: %v", o.Timeout, err)
		}
	}
	if err := o.PubSub.Publish(wire.Topic, res); err != nil {
		o.Logger.Error("peer probe result not published", "peer", p.peer.NodeID, "err", err)
	}
	switch {
	case p.wasOk && err != nil:
		o.Logger.Warn("peer OPC UA probe failed", "peer", p.peer.NodeID, "endpoint", p.peer.Endpoint, "err", res.Error)
	case !p.wasOk && err == nil:
		o.Logger.Info("peer OPC UA probe answers again", "peer", p.peer.NodeID, "endpoint", p.peer.Endpoint)
	}
	p.wasOk = err == nil
}
