package pubsub

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/dialgate"
	"github.com/otopcua/otopcua/cluster/membership"
)

// Name is the well-known actor name of the mediator in every process: a
// peer's mediator is the PID host:port/Name.
const Name = "otopcua-pubsub"

// Transport carries wire messages between the mediators of different
// nodes, best effort: pub/sub neither buffers nor retries.
type Transport interface {
	// Bind is called once, before the first Send: inbox hands a received
	// message to the local mediator (transports that deliver to the
	// mediator's PID themselves may ignore it). inbox is safe to call from
	// any goroutine and does not block.
	Bind(self membership.Address, inbox func(proto.Message))
	// Send delivers msg to the mediator at to, best effort. It must not
	// block for long: it is called from the mediator's actor.
	Send(to membership.Address, msg proto.Message)
	// Close releases the transport; later Sends are dropped.
	Close()
}

// Gate settings of RemoteTransport.
const (
	// GateDialTimeout bounds the TCP probe made before sending to a peer
	// that has never been reached or whose connection broke.
	GateDialTimeout = dialgate.DialTimeout
	// GatePending is how many messages wait for a peer's probe; older ones
	// are dropped first.
	GatePending = dialgate.Pending
)

// RemoteTransport sends through protoactor-go's remote to the PID
// host:port/Name, behind the same dial gate as the cluster daemon's
// (package dialgate).
type RemoteTransport struct {
	g *dialgate.Sender
}

var _ Transport = (*RemoteTransport)(nil)

// NewRemoteTransport returns a transport over sys's remote. dial is the
// gate's TCP probe; nil means net.Dialer.DialContext.
func NewRemoteTransport(sys *actors.System, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *RemoteTransport {
	return &RemoteTransport{g: dialgate.New(sys, Name, dial)}
}

// Bind implements Transport: protoactor delivers to the mediator's PID,
// and its endpoint events close the gate.
func (t *RemoteTransport) Bind(membership.Address, func(proto.Message)) { t.g.Start(nil) }

// Send implements Transport.
func (t *RemoteTransport) Send(to membership.Address, msg proto.Message) { t.g.Send(to, msg) }

// Counts returns how many messages were handed to protoactor and how many
// the gate dropped.
func (t *RemoteTransport) Counts() (sent, dropped uint64) { return t.g.Counts() }

// Close implements Transport.
func (t *RemoteTransport) Close() { t.g.Close() }

// MemNetwork is an in-memory network of mediators in one process, for
// tests: each MemTransport delivers straight to the other mediators'
// inboxes, copying every message as a real transport would serialise it.
// It is safe for concurrent use; mu guards the maps.
type MemNetwork struct {
	mu    sync.Mutex
	nodes map[membership.Address]*MemTransport
	cut   map[[2]membership.Address]bool
	links Links // nil: only this network's own cuts
}

// Links is the network the mediators share with their daemons
// (*daemon.MemNetwork): a message from → to is delivered only when it
// passes there too.
type Links interface {
	Passes(from, to membership.Address) bool
}

// NewMemNetwork returns an empty network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{nodes: map[membership.Address]*MemTransport{}, cut: map[[2]membership.Address]bool{}}
}

// NewMemNetworkOn returns an empty network routed over links: killing,
// partitioning or healing there applies to the mediators' traffic as it
// does to the daemons'.
func NewMemNetworkOn(links Links) *MemNetwork {
	n := NewMemNetwork()
	n.links = links
	return n
}

// Transport returns a new transport attached to the network.
func (n *MemNetwork) Transport() *MemTransport { return &MemTransport{net: n} }

// Kill detaches addr: messages to it are dropped.
func (n *MemNetwork) Kill(addr membership.Address) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.nodes, addr)
}

// Partition drops every message between a and b, both ways.
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

// Inject hands msg to the mediator attached at to as if a peer had sent
// it; false when nothing is attached there.
func (n *MemNetwork) Inject(to membership.Address, msg proto.Message) bool {
	n.mu.Lock()
	dst := n.nodes[to]
	n.mu.Unlock()
	if dst == nil {
		return false
	}
	dst.inbox(proto.Clone(msg))
	return true
}

// MemTransport is one mediator's attachment to a MemNetwork.
type MemTransport struct {
	net   *MemNetwork
	self  membership.Address
	inbox func(proto.Message)

	sent, dropped atomic.Uint64
}

var _ Transport = (*MemTransport)(nil)

// Bind implements Transport; a later Bind at the same address (a restarted
// node) replaces the earlier one.
func (t *MemTransport) Bind(self membership.Address, inbox func(proto.Message)) {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	t.self, t.inbox = self, inbox
	t.net.nodes[self] = t
}

// Send implements Transport.
func (t *MemTransport) Send(to membership.Address, msg proto.Message) {
	t.net.mu.Lock()
	dst, cut, links := t.net.nodes[to], t.net.cut[[2]membership.Address{t.self, to}], t.net.links
	t.net.mu.Unlock()
	if dst == nil || cut || (links != nil && !links.Passes(t.self, to)) {
		t.dropped.Add(1)
		return
	}
	t.sent.Add(1)
	dst.inbox(proto.Clone(msg))
}

// Counts returns how many messages were delivered and dropped.
func (t *MemTransport) Counts() (sent, dropped uint64) { return t.sent.Load(), t.dropped.Load() }

// Close implements Transport: the mediator leaves the network.
func (t *MemTransport) Close() {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if t.net.nodes[t.self] == t {
		delete(t.net.nodes, t.self)
	}
}
