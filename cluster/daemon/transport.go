package daemon

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/dialgate"
	"github.com/otopcua/otopcua/cluster/fastpath"
	"github.com/otopcua/otopcua/cluster/membership"
)

// Name is the well-known actor name of the cluster daemon in every
// process: a peer's daemon is the PID host:port/Name.
const Name = "otopcua-cluster"

// Transport carries wire messages between the daemons of different nodes.
// Loss is tolerated: the membership protocol retries and heartbeats decide
// liveness.
type Transport interface {
	// Bind is called once, before the first Send: inbox hands a message to
	// the local daemon (transports that deliver to the daemon's PID
	// themselves may ignore it), lost reports that the connection to a
	// peer's address broke. Both are safe to call from any goroutine and
	// do not block.
	Bind(self membership.Address, inbox func(msg any), lost func(peer membership.Address))
	// Send delivers msg to the daemon at to, best effort. It is called from
	// the daemon's actor goroutine and must not block for long.
	Send(to membership.Address, msg proto.Message)
	// DeadPeers lists the addresses whose last connection broke or whose
	// last probe failed.
	DeadPeers() []membership.Address
	// Stats reports what the transport sent and dropped.
	Stats() TransportStats
	// Close releases the transport; later Sends are dropped.
	Close()
}

// TransportStats counts messages handed to a Transport.
type TransportStats struct {
	// Sent to a peer's send queue.
	Sent uint64
	// GateDropped: dropped because the peer did not accept a TCP
	// connection (or its pending buffer was full).
	GateDropped uint64
}

// Gate settings of RemoteTransport.
const (
	// GateDialTimeout bounds the TCP probe made before sending to a peer
	// that is dead or has never been reached.
	GateDialTimeout = dialgate.DialTimeout
	// GatePending is how many messages wait for a peer's probe; older ones
	// are dropped first.
	GatePending = dialgate.Pending
)

// RemoteTransport sends through protoactor-go's remote behind a dial gate
// (package dialgate): a message for a peer that is dead or has never been
// reached is held until a plain TCP connect to its cluster port succeeds.
type RemoteTransport struct {
	g *dialgate.Sender
}

var _ Transport = (*RemoteTransport)(nil)

// NewRemoteTransport returns a transport over sys's remote. dial is the
// gate's TCP probe; nil means net.Dialer.DialContext.
func NewRemoteTransport(sys *actors.System, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *RemoteTransport {
	return &RemoteTransport{g: dialgate.New(sys, Name, dial)}
}

// Bind implements Transport: protoactor's endpoint events feed the gate
// and, for terminated endpoints, lost.
func (t *RemoteTransport) Bind(_ membership.Address, _ func(any), lost func(membership.Address)) {
	t.g.Start(lost)
}

// Send implements Transport.
func (t *RemoteTransport) Send(to membership.Address, msg proto.Message) { t.g.Send(to, msg) }

// DeadPeers implements Transport.
func (t *RemoteTransport) DeadPeers() []membership.Address { return t.g.DeadPeers() }

// Stats implements Transport.
func (t *RemoteTransport) Stats() TransportStats {
	sent, dropped := t.g.Counts()
	return TransportStats{Sent: sent, GateDropped: dropped}
}

// Close implements Transport.
func (t *RemoteTransport) Close() { t.g.Close() }

// MemNetwork is an in-memory network of daemons in one process, for tests:
// each daemon's MemTransport delivers straight to the other daemons'
// actors, and its Prober answers as TCP would. Kill makes an address
// silent (probes refused) and tells every other node its connection broke;
// Partition drops messages between two addresses silently (probes time
// out). It is safe for concurrent use; mu guards the maps.
type MemNetwork struct {
	mu    sync.Mutex
	nodes map[membership.Address]*MemTransport
	cut   map[[2]membership.Address]bool
	dying map[membership.Address]int // probes still accepted after a kill
}

// NewMemNetwork returns an empty network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{nodes: map[membership.Address]*MemTransport{}, cut: map[[2]membership.Address]bool{},
		dying: map[membership.Address]int{}}
}

// KillDying is Kill for a process whose listening socket outlives its
// connections for a moment: the next accepts probes of addr still answer
// Accepted.
func (n *MemNetwork) KillDying(addr membership.Address, accepts int) {
	n.mu.Lock()
	n.dying[addr] = accepts
	n.mu.Unlock()
	n.Kill(addr)
}

// Transport returns a new transport attached to the network.
func (n *MemNetwork) Transport() *MemTransport { return &MemTransport{net: n} }

// Kill detaches addr: messages to it are dropped, probes are refused, and
// every other node is told its connection to addr broke.
func (n *MemNetwork) Kill(addr membership.Address) {
	n.mu.Lock()
	delete(n.nodes, addr)
	var notify []func(membership.Address)
	for _, t := range n.nodes {
		notify = append(notify, t.lost)
	}
	n.mu.Unlock()
	for _, f := range notify {
		f(addr)
	}
}

// Partition drops every message between a and b, both ways, silently.
func (n *MemNetwork) Partition(a, b membership.Address) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]membership.Address{a, b}], n.cut[[2]membership.Address{b, a}] = true, true
}

// Heal undoes Partition.
func (n *MemNetwork) Heal(a, b membership.Address) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.cut, [2]membership.Address{a, b})
	delete(n.cut, [2]membership.Address{b, a})
}

// Passes reports whether a message from → to gets through: to is attached
// (not killed) and the link is not cut. Other in-memory transports over
// the same nodes (pub/sub's, pubsub.NewMemNetworkOn) route by it, so that
// one Kill, Partition or Heal applies to all the cluster's traffic.
func (n *MemNetwork) Passes(from, to membership.Address) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, alive := n.nodes[to]
	return alive && !n.cut[[2]membership.Address{from, to}]
}

// route returns the transport at to as seen from from, nil when dead or
// cut off.
func (n *MemNetwork) route(from, to membership.Address) (*MemTransport, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nodes[to], n.cut[[2]membership.Address{from, to}]
}

// MemTransport is one daemon's attachment to a MemNetwork.
type MemTransport struct {
	net     *MemNetwork
	self    membership.Address
	inbox   func(any)
	lost    func(membership.Address)
	sent    atomic.Uint64
	dropped atomic.Uint64
}

var _ Transport = (*MemTransport)(nil)

// Bind implements Transport.
func (t *MemTransport) Bind(self membership.Address, inbox func(any), lost func(membership.Address)) {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	t.self, t.inbox, t.lost = self, inbox, lost
	t.net.nodes[self] = t
}

// Send implements Transport. The message is copied, as a real transport
// would serialise it.
func (t *MemTransport) Send(to membership.Address, msg proto.Message) {
	dst, cut := t.net.route(t.self, to)
	if dst == nil || cut {
		t.dropped.Add(1)
		return
	}
	t.sent.Add(1)
	dst.inbox(proto.Clone(msg))
}

// DeadPeers implements Transport.
func (t *MemTransport) DeadPeers() []membership.Address { return nil }

// Stats implements Transport.
func (t *MemTransport) Stats() TransportStats {
	return TransportStats{Sent: t.sent.Load(), GateDropped: t.dropped.Load()}
}

// Close implements Transport: the daemon leaves the network silently.
func (t *MemTransport) Close() {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if t.net.nodes[t.self] == t {
		delete(t.net.nodes, t.self)
	}
}

// Prober answers probes from this transport's node as TCP would: an
// attached node accepts, a cut-off one times out, anything else refuses.
func (t *MemTransport) Prober() Prober { return memProber{t} }

type memProber struct{ t *MemTransport }

func (p memProber) probe(a membership.Address) fastpath.ProbeResult {
	dst, cut := p.t.net.route(p.t.self, a)
	switch {
	case cut:
		return fastpath.Timeout
	case dst == nil:
		n := p.t.net
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.dying[a] > 0 {
			n.dying[a]--
			return fastpath.Accepted
		}
		return fastpath.Refused
	}
	return fastpath.Accepted
}

func (p memProber) ProbePeer(_ context.Context, a membership.Address) []fastpath.ProbeResult {
	var out []fastpath.ProbeResult
	for range fastpath.MaxProbes {
		r := p.probe(a)
		out = append(out, r)
		if r != fastpath.Refused {
			break
		}
	}
	return out
}

func (p memProber) AnyAccepts(_ context.Context, addrs []membership.Address, _ time.Duration) bool {
	for _, a := range addrs {
		if p.probe(a) == fastpath.Accepted {
			return true
		}
	}
	return false
}

// inboxFor is the inbox of a daemon actor: a Root.Send to its PID.
func inboxFor(root *actor.RootContext, pid *actor.PID) func(any) {
	return func(msg any) { root.Send(pid, msg) }
}
