package pubsub

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
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
	GateDialTimeout = time.Second
	// GatePending is how many messages wait for a peer's probe; older ones
	// are dropped first.
	GatePending = 64
)

type gateState uint8

const (
	gateClosed gateState = iota // never reached, or the connection broke: probe first
	gateProbing
	gateOpen
)

type gate struct {
	state   gateState
	pending []proto.Message
}

// RemoteTransport sends through protoactor-go's remote to the PID
// host:port/Name, behind a dial gate like the cluster daemon's: a message
// for a peer that has never been reached, or whose endpoint protoactor
// reported terminated, waits for a plain TCP connect to the peer's
// cluster port and is only then handed to protoactor. protoactor would
// otherwise open an endpoint that retries on a blocking schedule — which
// also delays the daemon's messages to that address — and deliver the
// dead process's queued messages to its successor.
type RemoteTransport struct {
	sys  *actors.System
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex // guards peers, sub, closed
	peers  map[membership.Address]*gate
	sub    *eventstream.Subscription
	closed bool

	sent, dropped atomic.Uint64
}

var _ Transport = (*RemoteTransport)(nil)

// NewRemoteTransport returns a transport over sys's remote. dial is the
// gate's TCP probe; nil means net.Dialer.DialContext.
func NewRemoteTransport(sys *actors.System, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *RemoteTransport {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return &RemoteTransport{sys: sys, dial: dial, peers: map[membership.Address]*gate{}}
}

// Bind implements Transport: protoactor delivers to the mediator's PID,
// and its endpoint events close the gate.
func (t *RemoteTransport) Bind(membership.Address, func(proto.Message)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sub = t.sys.Actor.EventStream.SubscribeWithPredicate(t.onEndpointEvent, func(ev any) bool {
		_, ok := ev.(*remote.EndpointTerminatedEvent)
		return ok
	})
}

func (t *RemoteTransport) onEndpointEvent(ev any) {
	e, ok := ev.(*remote.EndpointTerminatedEvent)
	if !ok {
		return
	}
	addr, err := membership.ParseAddress(e.Address)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.peers[addr]; g != nil && g.state == gateOpen {
		g.state = gateClosed
	}
}

// Send implements Transport.
func (t *RemoteTransport) Send(to membership.Address, msg proto.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		t.dropped.Add(1)
		return
	}
	g := t.peers[to]
	if g == nil {
		g = &gate{}
		t.peers[to] = g
	}
	switch g.state {
	case gateOpen:
		t.deliver(to, msg)
		return
	case gateClosed:
		g.state = gateProbing
		go t.probe(to)
	}
	if len(g.pending) >= GatePending {
		g.pending = g.pending[1:]
		t.dropped.Add(1)
	}
	g.pending = append(g.pending, msg)
}

// deliver hands msg to protoactor; t.mu must be held (keeps the order of a
// flushed backlog and later sends).
func (t *RemoteTransport) deliver(to membership.Address, msg proto.Message) {
	t.sent.Add(1)
	t.sys.Root().Send(actors.PID(to.String(), Name), msg)
}

func (t *RemoteTransport) probe(to membership.Address) {
	ctx, cancel := context.WithTimeout(context.Background(), GateDialTimeout)
	c, err := t.dial(ctx, "tcp", to.String())
	cancel()
	if err == nil {
		_ = c.Close()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.peers[to]
	backlog := g.pending
	g.pending = nil
	if err != nil || t.closed {
		g.state = gateClosed
		t.dropped.Add(uint64(len(backlog)))
		return
	}
	g.state = gateOpen
	for _, msg := range backlog {
		t.deliver(to, msg)
	}
}

// Counts returns how many messages were handed to protoactor and how many
// the gate dropped.
func (t *RemoteTransport) Counts() (sent, dropped uint64) { return t.sent.Load(), t.dropped.Load() }

// Close implements Transport.
func (t *RemoteTransport) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	if t.sub != nil {
		t.sys.Actor.EventStream.Unsubscribe(t.sub)
	}
}

// MemNetwork is an in-memory network of mediators in one process, for
// tests: each MemTransport delivers straight to the other mediators'
// inboxes, copying every message as a real transport would serialise it.
// It is safe for concurrent use; mu guards the maps.
type MemNetwork struct {
	mu    sync.Mutex
	nodes map[membership.Address]*MemTransport
	cut   map[[2]membership.Address]bool
}

// NewMemNetwork returns an empty network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{nodes: map[membership.Address]*MemTransport{}, cut: map[[2]membership.Address]bool{}}
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
	dst, cut := t.net.nodes[to], t.net.cut[[2]membership.Address{t.self, to}]
	t.net.mu.Unlock()
	if dst == nil || cut {
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
