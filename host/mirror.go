package host

import (
	"log/slog"
	"maps"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/metric"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/forward/meshtransport"
	"github.com/otopcua/otopcua/opcua/mirror"
	"github.com/otopcua/otopcua/opcua/mirror/meshmirror"
)

// mirroring is session mirroring on a node under OpcUa:RedundancySupport
// HotAndMirrored: the mirror.Member that opcua.New attaches to the
// subscription engine, its transport over the pub/sub mediator and the
// peer list kept from membership. It is made in two steps because the
// OPC UA server (which needs the Member) is built before the node joins
// the cluster (which the transport and the peer list need):
//
//  1. newMirroring, before the OPC UA server: the Member (named by this
//     node's incarnation, known before the daemon starts), its metrics;
//     the transport drops every batch until step 2;
//  2. bind, once the redundancy runtime's mediator runs: the transport
//     carries batches, and every membership event sets the Member's peers
//     (peersOf). The peers' batches wait in the transport (at most
//     OpcUa:Mirror:MaxLagBytes, what a peer may send unacknowledged);
//  3. open, once the data plane applied its first deployment: the
//     batches reach the Member. Its replica items sample this node's
//     tags, which exist only from then on; a copy of the peers' sessions
//     taken before would hold items on nodes not yet there, and the node
//     would count as a hot standby that cannot serve the values.
//
// Stops run in reverse: unbind (membership subscription, transport) before
// the mediator stops, close after the OPC UA server closed.
type mirroring struct {
	member      *mirror.Member
	tr          *meshmirror.Transport
	peers       *peerTracker
	unsubscribe func()
}

// newMirroring builds the Member from OpcUa:Mirror. self is this node's
// incarnation; meter gets the otopcua_mirror_* instruments.
func newMirroring(cfg *config.Config, self membership.UniqueAddress, meter metric.Meter, logger *slog.Logger) (*mirroring, error) {
	mc := cfg.OpcUa.Mirror
	tr := meshmirror.New()
	tr.Hold(mc.MaxLagBytes)
	mm, err := newMirrorMetrics(meter)
	if err != nil {
		return nil, err
	}
	member := mirror.New(mirror.Options{
		Self: meshtransport.Name(self), Transport: tr,
		Sync: mc.Sync, AckTimeout: mc.AckTimeout, MaxLagBytes: mc.MaxLagBytes, QueueSize: mc.QueueSize, MatchWindow: mc.MatchWindow,
		Logger: logger, ObserveLag: mm.observeLag,
	})
	if err := mm.collect(member.Stats); err != nil {
		member.Close()
		return nil, err
	}
	return &mirroring{member: member, tr: tr,
		peers: &peerTracker{clusterID: cfg.Node.ClusterId, self: self, set: member, log: logger.With("component", "mirror")}}, nil
}

// mirrorMembership is what bind reads of the membership (*daemon.Daemon).
type mirrorMembership interface {
	Snapshot() membership.State
	Subscribe(fn func(membership.Event)) (membership.State, func())
}

// bind starts carrying batches over med and keeping the peers current.
func (m *mirroring) bind(med meshmirror.Mesh, members mirrorMembership) {
	m.tr.Bind(med, m.member.Receive)
	st, cancel := members.Subscribe(func(membership.Event) { m.peers.update(members.Snapshot()) })
	m.unsubscribe = cancel
	m.peers.update(st)
}

// open hands the peers' batches to the Member from now on.
func (m *mirroring) open() { m.tr.Open() }

// unbind stops the peer updates and the transport.
func (m *mirroring) unbind() {
	if m.unsubscribe != nil {
		m.unsubscribe()
	}
	m.tr.Stop()
}

// close stops the Member, after the OPC UA server closed.
func (m *mirroring) close() { m.member.Close() }

// peerSetter is the part of *mirror.Member a peerTracker drives.
type peerSetter interface{ SetPeers(names []string) }

// peerTracker hands the Member its peers whenever they change. update is
// called from the daemon's event goroutine and once from bind; mu orders
// the two.
type peerTracker struct {
	clusterID string
	self      membership.UniqueAddress
	set       peerSetter
	log       *slog.Logger

	mu   sync.Mutex
	last []string // the peers last set; mu must be held.
	once bool     // set once; mu must be held.
}

func (p *peerTracker) update(st membership.State) {
	peers := peersOf(st, p.clusterID, p.self)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.once && slices.Equal(peers, p.last) {
		return
	}
	p.once, p.last = true, peers
	p.set.SetPeers(slices.Clone(peers))
	p.log.Info("mirror: peers", "peers", peers)
}

// peersOf names the members this node mirrors its sessions to: the Up
// members of clusterID with the driver role that this node does not hold
// unreachable, self excluded, by incarnation (host:port#uid), sorted. An
// unreachable peer leaves the list and, once reachable again, comes back
// as new: the Member then sends it a fresh snapshot of every session
// rather than what it missed, and the sessions it served start their
// session timeout here meanwhile.
func peersOf(st membership.State, clusterID string, self membership.UniqueAddress) []string {
	var out []string
	for _, m := range st.Gossip.Members {
		if m.Address == self || m.Status != membership.Up || m.ClusterID != clusterID || !m.HasRole(config.RoleDriver) {
			continue
		}
		if !st.Gossip.IsReachable(self, m.Address) {
			continue
		}
		out = append(out, meshtransport.Name(m.Address))
	}
	slices.Sort(out)
	return out
}

// mirrorNodeID is the host:port of an incarnation name host:port#uid: the
// label of the mirror metrics and the NodeId of the admin page, stable
// across a peer's restarts.
func mirrorNodeID(name string) string {
	if a, err := meshtransport.Parse(name); err == nil {
		return a.Address().String()
	}
	return name
}

// panelOf is the admin page's mirrored sessions table for the panel of a
// ClusterId: this node's, nil for any other ClusterId. node is this
// node's NodeId.
func (m *mirroring) panelOf(clusterID, node string) func(id string) *admin.MirrorPanel {
	return func(id string) *admin.MirrorPanel {
		if id != clusterID {
			return nil
		}
		return mirrorPanel(m.member.Stats(), node)
	}
}

// mirrorPanel lays a Member's Stats out per other member (by NodeId,
// sorted): what this node holds of its sessions, and whether it stands by
// for this node's.
func mirrorPanel(s mirror.Stats, node string) *admin.MirrorPanel {
	byID := map[string]*admin.MirrorMember{}
	row := func(name string) *admin.MirrorMember {
		id := mirrorNodeID(name)
		if r, ok := byID[id]; ok {
			return r
		}
		r := &admin.MirrorMember{NodeID: id}
		byID[id] = r
		return r
	}
	for name, o := range s.Origins {
		r := row(name) // two incarnations of one NodeId: ready when both are
		r.HeldReady = o.Ready && (r.HeldReady || !r.Holds)
		r.Holds, r.Held = true, r.Held+o.Sessions
	}
	for name, p := range s.Peers {
		r := row(name)
		r.StandbyReady = p.Ready && (r.StandbyReady || !r.Standby)
		r.Standby, r.LagBytes = true, r.LagBytes+p.LagBytes
	}
	p := &admin.MirrorPanel{Node: node, Served: s.Served, Members: []admin.MirrorMember{},
		Dropped: maps.Clone(s.Dropped), Takeovers: maps.Clone(s.Takeovers)}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		p.Members = append(p.Members, *byID[id])
	}
	if p.Dropped == nil {
		p.Dropped = map[string]uint64{}
	}
	if p.Takeovers == nil {
		p.Takeovers = map[string]uint64{}
	}
	return p
}
