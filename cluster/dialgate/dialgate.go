// Package dialgate sends protobuf messages to a well-known actor on peer
// nodes through protoactor-go's remote, behind a dial gate.
//
// A message for a peer that has never been reached, or whose endpoint
// protoactor reported terminated, is held until a plain TCP connect to the
// peer's cluster port succeeds, and only then handed to protoactor.
// protoactor would otherwise open an endpoint that retries on a blocking
// 2 s × 5 schedule (reaching a restarted peer 1–2 s late) and deliver the
// dead process's queued messages to its successor at the same address.
// The gate closes again when protoactor reports the endpoint terminated.
//
// The membership daemon and the pub/sub mediator each send through their
// own Sender (their actors have different names).
package dialgate

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

const (
	// DialTimeout bounds the TCP probe made before sending to a peer that
	// is dead or has never been reached.
	DialTimeout = time.Second
	// Pending is how many messages wait for a peer's probe; older ones are
	// dropped first.
	Pending = 64
)

type state uint8

const (
	closed  state = iota // dead, or never reached: probe before sending
	probing              // a probe is under way; messages wait
	open                 // hand messages to protoactor
)

type peer struct {
	state   state
	failed  bool // the last probe failed or the connection broke
	pending []proto.Message
}

// Sender delivers to the actor named name on every peer. It is safe for
// concurrent use; mu guards peers, lost, sub and done.
type Sender struct {
	sys  *actors.System
	name string
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu    sync.Mutex
	peers map[membership.Address]*peer
	lost  func(membership.Address)
	sub   *eventstream.Subscription
	done  bool

	sent, dropped atomic.Uint64
}

// New returns a Sender to the actor name on each peer of sys's remote.
// dial is the gate's TCP probe; nil means net.Dialer.DialContext.
func New(sys *actors.System, name string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Sender {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return &Sender{sys: sys, name: name, dial: dial, peers: map[membership.Address]*peer{}}
}

// Start subscribes to protoactor's endpoint events: a terminated endpoint
// closes that peer's gate and is reported to lost (nil: not reported). lost
// runs on the protoactor goroutine that published the event (≈ 2 ms after
// a peer process dies) and must not block.
func (s *Sender) Start(lost func(membership.Address)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost = lost
	// Not SubscribeWithPredicate: protoactor sets the predicate after the
	// subscription is listed and reads it in Publish without the lock, a
	// data race with an endpoint event published meanwhile (seen under
	// -race when a peer connects during start-up). onEndpointEvent filters.
	s.sub = s.sys.Actor.EventStream.Subscribe(s.onEndpointEvent)
}

func (s *Sender) onEndpointEvent(ev any) {
	e, ok := ev.(*remote.EndpointTerminatedEvent)
	if !ok {
		return
	}
	addr, err := membership.ParseAddress(e.Address)
	if err != nil {
		return
	}
	s.mu.Lock()
	if p := s.peers[addr]; p != nil && p.state == open {
		p.state, p.failed = closed, true
	}
	lost := s.lost
	s.mu.Unlock()
	if lost != nil {
		lost(addr)
	}
}

func (s *Sender) peer(a membership.Address) *peer {
	p := s.peers[a]
	if p == nil {
		p = &peer{}
		s.peers[a] = p
	}
	return p
}

// deliver hands msg to protoactor; s.mu must be held (keeps the order of a
// flushed backlog and later sends).
func (s *Sender) deliver(to membership.Address, msg proto.Message) {
	s.sent.Add(1)
	s.sys.Root().Send(actors.PID(to.String(), s.name), msg)
}

// Send delivers msg to the actor at to, best effort; it never blocks on
// the network.
func (s *Sender) Send(to membership.Address, msg proto.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		s.dropped.Add(1)
		return
	}
	p := s.peer(to)
	switch p.state {
	case open:
		s.deliver(to, msg)
		return
	case closed:
		p.state = probing
		go s.probe(to)
	}
	if len(p.pending) >= Pending {
		p.pending = p.pending[1:]
		s.dropped.Add(1)
	}
	p.pending = append(p.pending, msg)
}

// probe dials the peer; on success the gate opens and the backlog is
// handed to protoactor, otherwise the backlog is dropped.
func (s *Sender) probe(to membership.Address) {
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	c, err := s.dial(ctx, "tcp", to.String())
	cancel()
	if err == nil {
		_ = c.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peer(to)
	backlog := p.pending
	p.pending = nil
	if err != nil || s.done {
		p.state, p.failed = closed, err != nil
		s.dropped.Add(uint64(len(backlog)))
		return
	}
	p.state, p.failed = open, false
	for _, msg := range backlog {
		s.deliver(to, msg)
	}
}

// DeadPeers lists the addresses whose last connection broke or whose last
// probe failed.
func (s *Sender) DeadPeers() []membership.Address {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []membership.Address
	for a, p := range s.peers {
		if p.failed && p.state != open {
			out = append(out, a)
		}
	}
	return out
}

// Counts returns how many messages were handed to protoactor and how many
// the gate dropped.
func (s *Sender) Counts() (sent, dropped uint64) { return s.sent.Load(), s.dropped.Load() }

// Close stops the Sender; later Sends are dropped.
func (s *Sender) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	if s.sub != nil {
		s.sys.Actor.EventStream.Unsubscribe(s.sub)
	}
}
