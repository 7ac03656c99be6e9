package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gopcua/opcua/uacp"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
)

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
	// Clock drives the probe period and stamps results. Default: the wall
	// clock. (The probe's own timeout is a network deadline on the wall
	// clock.)
	Clock clockwork.Clock
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
type PeerProbeSupervisor struct {
	o      PeerProbeOptions
	self   membership.UniqueAddress
	inbox  chan redundancy.Snapshot
	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu     sync.Mutex
	probes map[string]*PeerOpcUaProbeActor // by NodeId; mu must be held.
}

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
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &PeerProbeSupervisor{
		o: o, self: o.Membership.Self(), inbox: make(chan redundancy.Snapshot, 16), kick: make(chan struct{}, 1),
		done: make(chan struct{}), probes: map[string]*PeerOpcUaProbeActor{},
	}
}

// Start subscribes to the topic and to membership and runs until Stop or
// ctx ends.
func (s *PeerProbeSupervisor) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	unsubTopic := s.o.PubSub.Subscribe(wire.Topic, s.handle)
	_, unsubMembers := s.o.Membership.Subscribe(func(membership.Event) {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	})
	go func() {
		defer close(s.done)
		defer unsubTopic()
		defer unsubMembers()
		s.run(ctx)
	}()
}

// Stop stops every probe and the supervisor, and waits for them.
func (s *PeerProbeSupervisor) Stop() {
	s.once.Do(func() {
		if s.cancel == nil {
			close(s.done)
			return
		}
		s.cancel()
		<-s.done
	})
}

// Probing returns the peers being probed: NodeId → endpoint.
func (s *PeerProbeSupervisor) Probing() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.probes))
	for id, p := range s.probes {
		out[id] = p.peer.Endpoint
	}
	return out
}

func (s *PeerProbeSupervisor) handle(_ membership.UniqueAddress, msg proto.Message) {
	m, ok := msg.(*wire.RedundancyStateChanged)
	if !ok {
		return
	}
	snap, err := redundancy.SnapshotFromWire(m)
	if err != nil {
		return
	}
	select {
	case s.inbox <- snap:
	default: // the next snapshot (at most RepublishEvery away) will do
	}
}

func (s *PeerProbeSupervisor) run(ctx context.Context) {
	var last redundancy.Snapshot
	defer s.reconcile(ctx, nil)
	for {
		select {
		case <-ctx.Done():
			return
		case last = <-s.inbox:
		case <-s.kick:
		}
		s.reconcile(ctx, DesiredPeers(last, s.self, s.o.Membership.Snapshot()))
	}
}

// reconcile stops the probes not in want (or whose peer changed) and
// starts the missing ones.
func (s *PeerProbeSupervisor) reconcile(ctx context.Context, want map[string]Peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, p := range s.probes {
		if w, ok := want[id]; !ok || w != p.peer {
			p.stop()
			delete(s.probes, id)
			s.o.Logger.Info("peer probe stopped", "peer", id, "endpoint", p.peer.Endpoint)
		}
	}
	for id, w := range want {
		if _, ok := s.probes[id]; ok {
			continue
		}
		p := newProbeActor(s.o, s.self.NodeID(), w)
		p.start(ctx)
		s.probes[id] = p
		s.o.Logger.Info("peer probe started", "peer", id, "endpoint", w.Endpoint, "interval", s.o.Interval.String())
	}
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
// (the first probe at once) and publishes each result.
type PeerOpcUaProbeActor struct {
	o      PeerProbeOptions
	prober string
	peer   Peer
	cancel context.CancelFunc
	done   chan struct{}
}

func newProbeActor(o PeerProbeOptions, prober string, peer Peer) *PeerOpcUaProbeActor {
	return &PeerOpcUaProbeActor{o: o, prober: prober, peer: peer, done: make(chan struct{})}
}

func (p *PeerOpcUaProbeActor) start(ctx context.Context) {
	ctx, p.cancel = context.WithCancel(ctx)
	go func() {
		defer close(p.done)
		p.run(ctx)
	}()
}

func (p *PeerOpcUaProbeActor) stop() {
	p.cancel()
	<-p.done
}

func (p *PeerOpcUaProbeActor) run(ctx context.Context) {
	tick := p.o.Clock.NewTicker(p.o.Interval)
	defer tick.Stop()
	wasOk := true
	for {
		wasOk = p.probeOnce(ctx, wasOk)
		select {
		case <-ctx.Done():
			return
		case <-tick.Chan():
		}
	}
}

// probeOnce probes, publishes the result and logs a change of verdict.
func (p *PeerOpcUaProbeActor) probeOnce(ctx context.Context, wasOk bool) bool {
	pctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	err := p.o.Probe(pctx, p.peer.Endpoint)
	cancel()
	if ctx.Err() != nil {
		return wasOk // stopped mid-probe: no verdict
	}
	res := &wire.OpcUaProbeResult{
		Target: p.peer.NodeID, Ok: err == nil, AtUnixMs: wire.UnixMs(p.o.Clock.Now()),
		Prober: p.prober, Endpoint: p.peer.Endpoint,
	}
	if err != nil {
		res.Error = err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			res.Error = fmt.Sprintf("no Acknowledge within %v: %v", p.o.Timeout, err)
		}
	}
	if err := p.o.PubSub.Publish(wire.Topic, res); err != nil {
		p.o.Logger.Error("peer probe result not published", "peer", p.peer.NodeID, "err", err)
	}
	switch {
	case wasOk && err != nil:
		p.o.Logger.Warn("peer OPC UA probe failed", "peer", p.peer.NodeID, "endpoint", p.peer.Endpoint, "err", res.Error)
	case !wasOk && err == nil:
		p.o.Logger.Info("peer OPC UA probe answers again", "peer", p.peer.NodeID, "endpoint", p.peer.Endpoint)
	}
	return err == nil
}
