package meshtransport

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/forward"
	"github.com/otopcua/otopcua/gate"
)

// net is an in-memory mesh: SendTo delivers to the subscribers of the
// node at to, with the sender's address, in order per sender.
type net struct {
	mu    sync.Mutex
	nodes map[membership.UniqueAddress]*mesh
}

type mesh struct {
	n    *net
	self membership.UniqueAddress
	mu   sync.Mutex
	subs map[string]pubsub.Handler
}

func (n *net) node(self membership.UniqueAddress) *mesh {
	m := &mesh{n: n, self: self, subs: map[string]pubsub.Handler{}}
	n.mu.Lock()
	n.nodes[self] = m
	n.mu.Unlock()
	return m
}

func (m *mesh) Subscribe(topic string, fn pubsub.Handler) func() {
	m.mu.Lock()
	m.subs[topic] = fn
	m.mu.Unlock()
	return func() {}
}

func (m *mesh) SendTo(to membership.UniqueAddress, topic string, msg proto.Message) error {
	m.n.mu.Lock()
	dst := m.n.nodes[to]
	m.n.mu.Unlock()
	if dst == nil {
		return nil // dropped, as the mediator drops a message to another incarnation
	}
	dst.mu.Lock()
	fn := dst.subs[topic]
	dst.mu.Unlock()
	if fn != nil {
		fn(m.self, proto.Clone(msg))
	}
	return nil
}

type allow struct{}

func (allow) Check(gate.Site) gate.Decision { return gate.Decision{Allow: true, Epoch: 3} }

type exec struct {
	mu   sync.Mutex
	reqs []forward.Request
}

func (e *exec) Execute(_ context.Context, r forward.Request, _ uint64) (ua.StatusCode, []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs = append(e.reqs, r)
	return ua.StatusOK, []byte("out")
}

func TestRequestAndAnswerOverTheMesh(t *testing.T) {
	n := &net{nodes: map[membership.UniqueAddress]*mesh{}}
	a := membership.UniqueAddress{Host: "127.0.0.1", Port: 4001, UID: 11}
	b := membership.UniqueAddress{Host: "127.0.0.1", Port: 4002, UID: 22}
	ex := &exec{}
	h := forward.NewHandler(forward.HandlerOptions{Node: "urn:b", Gate: allow{}, Exec: ex,
		Authorize: func(string, forward.Right) bool { return true }})
	ta := Start(Options{Mesh: n.node(a), Reachable: func(u membership.UniqueAddress) bool {
		return u != (membership.UniqueAddress{Host: "127.0.0.1", Port: 4003, UID: 33})
	}})
	Start(Options{Mesh: n.node(b), Handler: h})
	req := forward.Request{Key: forward.Key{Node: "urn:a", Session: "ns=1;i=5", Handle: 9, Nonce: 1, Op: 2}, Site: gate.SiteWrite,
		Right: forward.RightWrite, User: "op", Role: "Operator", From: "spoofed", Epoch: 3, Budget: time.Second, Op: "ns=2;s=T", Body: []byte{1, 2}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := ta.Send(ctx, Name(b), req)
	if err != nil || r.Outcome != forward.Done || r.Status != ua.StatusOK || r.Primary != "urn:b" || r.Epoch != 3 || string(r.Body) != "out" {
		t.Fatalf("Send: %+v %v, want Done Good from urn:b at epoch 3", r, err)
	}
	got := ex.reqs[0]
	if got.Key != req.Key || got.User != "op" || got.Role != "Operator" || got.Op != req.Op || string(got.Body) != string(req.Body) || got.Epoch != 3 {
		t.Fatalf("the Primary got %+v, want the request as sent", got)
	}
	if got.From != Name(a) {
		t.Fatalf("From %q, want the mesh's sender %q, never the message's claim", got.From, Name(a))
	}
	// Unreachable: not delivered, so the Sender may try another Primary.
	_, err = ta.Send(ctx, Name(membership.UniqueAddress{Host: "127.0.0.1", Port: 4003, UID: 33}), req)
	if !errors.Is(err, forward.ErrNotDelivered) {
		t.Fatalf("to an unreachable node: %v, want ErrNotDelivered", err)
	}
	// Another incarnation at b's address: dropped, no answer, outcome unknown.
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, err = ta.Send(short, Name(membership.UniqueAddress{Host: "127.0.0.1", Port: 4002, UID: 99}), req)
	if err == nil || errors.Is(err, forward.ErrNotDelivered) {
		t.Fatalf("to a dropped incarnation: %v, want an unknown-outcome error", err)
	}
}

func TestNameParse(t *testing.T) {
	for _, u := range []membership.UniqueAddress{{Host: "10.0.0.1", Port: 4053, UID: 7}, {Host: "::1", Port: 1, UID: 1 << 63}} {
		got, err := Parse(Name(u))
		if err != nil || got != u {
			t.Fatalf("Parse(Name(%v)) = %v %v", u, got, err)
		}
	}
	for _, bad := range []string{"", "host", "host:1", "host:x#1", "host:1#x"} {
		if _, err := Parse(bad); err == nil {
			t.Fatalf("Parse(%q) accepted", bad)
		}
	}
}
