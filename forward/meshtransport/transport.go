// Package meshtransport carries forwarded requests (package forward)
// between the nodes of the cluster on the distributed pub/sub mediator:
// a request goes point to point (SendTo) on the topic "forward-request"
// to the Primary's incarnation, its answer back on "forward-response".
//
// Nodes are named by their incarnation (host:port#uid, Name), so a
// request never reaches a restarted process at the Primary's address:
// the mediator drops a message addressed to another incarnation. A
// request to a node this one does not see reachable is not sent
// (forward.ErrNotDelivered); a request sent and not answered before the
// context ends leaves the outcome unknown. The mediator delivers one
// sender's messages in order.
//
// Concurrency: Send is safe for concurrent use; requests received are
// served each on a goroutine of its own (the mediator's handlers must not
// block), bounded by the forward.Handler's per-sender limit, which
// refuses at once.
package meshtransport

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/forward"
	"github.com/otopcua/otopcua/forward/wire"
	"github.com/otopcua/otopcua/gate"
)

// Topics of forwarded requests and their answers.
const (
	TopicRequest  = "forward-request"
	TopicResponse = "forward-response"
)

// Mesh is the pub/sub mediator (*pubsub.Mediator).
type Mesh interface {
	SendTo(to membership.UniqueAddress, topic string, msg proto.Message) error
	Subscribe(topic string, fn pubsub.Handler) (cancel func())
}

// Options configure a Transport. Mesh is required.
type Options struct {
	Mesh Mesh
	// Reachable reports whether to is a member this node does not hold
	// unreachable. Called from any goroutine; must not block. Nil: every
	// node is.
	Reachable func(to membership.UniqueAddress) bool
	// Handler serves the requests sent to this node; nil refuses them
	// (not Primary, nothing executed).
	Handler *forward.Handler
	Logger  *slog.Logger
}

// Transport is a forward.Transport over the mesh.
type Transport struct {
	o      Options
	nextID atomic.Uint64
	mu     sync.Mutex
	wait   map[uint64]chan *wire.ForwardResponse // mu must be held.
	stop   []func()
}

var _ forward.Transport = (*Transport)(nil)

// Start subscribes to both topics.
func Start(o Options) *Transport {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Transport{o: o, wait: make(map[uint64]chan *wire.ForwardResponse)}
	t.stop = append(t.stop, o.Mesh.Subscribe(TopicRequest, t.onRequest), o.Mesh.Subscribe(TopicResponse, t.onResponse))
	return t
}

// Stop cancels the subscriptions.
func (t *Transport) Stop() {
	for _, s := range t.stop {
		s()
	}
}

// Name is how a node is named to forward: host:port#uid.
func Name(u membership.UniqueAddress) string { return fmt.Sprintf("%s:%d#%d", u.Host, u.Port, u.UID) }

// Parse is Name's inverse.
func Parse(s string) (membership.UniqueAddress, error) {
	hp, uid, ok := strings.Cut(s, "#")
	i := strings.LastIndexByte(hp, ':')
	if !ok || i < 0 {
		return membership.UniqueAddress{}, fmt.Errorf("meshtransport: %q is not host:port#uid", s)
	}
	port, err1 := strconv.Atoi(hp[i+1:])
	id, err2 := strconv.ParseUint(uid, 10, 64)
	if err1 != nil || err2 != nil {
		return membership.UniqueAddress{}, fmt.Errorf("meshtransport: %q is not host:port#uid", s)
	}
	return membership.UniqueAddress{Host: hp[:i], Port: port, UID: id}, nil
}

// Send implements forward.Transport.
func (t *Transport) Send(ctx context.Context, to string, req forward.Request) (forward.Response, error) {
	addr, err := Parse(to)
	if err != nil {
		return forward.Response{}, fmt.Errorf("%w: %v", forward.ErrNotDelivered, err)
	}
	if t.o.Reachable != nil && !t.o.Reachable(addr) {
		return forward.Response{}, fmt.Errorf("%w: %s is not reachable", forward.ErrNotDelivered, to)
	}
	id := t.nextID.Add(1)
	ch := make(chan *wire.ForwardResponse, 1)
	t.mu.Lock()
	t.wait[id] = ch
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.wait, id)
		t.mu.Unlock()
	}()
	if err := t.o.Mesh.SendTo(addr, TopicRequest, toWire(id, req)); err != nil {
		return forward.Response{}, fmt.Errorf("%w: %v", forward.ErrNotDelivered, err)
	}
	select {
	case r := <-ch:
		return fromWire(r), nil
	case <-ctx.Done():
		return forward.Response{}, fmt.Errorf("meshtransport: no answer from %s: %w", to, context.Cause(ctx))
	}
}

func (t *Transport) onResponse(_ membership.UniqueAddress, msg proto.Message) {
	r, ok := msg.(*wire.ForwardResponse)
	if !ok {
		return
	}
	t.mu.Lock()
	ch := t.wait[r.GetId()]
	t.mu.Unlock()
	if ch != nil {
		select {
		case ch <- r:
		default:
		}
	}
}

func (t *Transport) onRequest(from membership.UniqueAddress, msg proto.Message) {
	m, ok := msg.(*wire.ForwardRequest)
	if !ok {
		return
	}
	req := requestOf(m)
	req.From = Name(from) // the mesh's word for the sender, not the message's
	go func() {
		res := forward.Response{Outcome: forward.Retry, Status: forward.StatusNotPrimary}
		if t.o.Handler != nil {
			ctx, cancel := context.WithTimeout(context.Background(), max(req.Budget, 0))
			res = t.o.Handler.Serve(ctx, req)
			cancel()
		}
		if err := t.o.Mesh.SendTo(from, TopicResponse, &wire.ForwardResponse{Id: m.GetId(), Outcome: int32(res.Outcome),
			Status: uint32(res.Status), Body: res.Body, Primary: res.Primary, Epoch: res.Epoch}); err != nil {
			t.o.Logger.Warn("forward: answer not sent", "to", Name(from), "err", err)
		}
	}()
}

func toWire(id uint64, r forward.Request) *wire.ForwardRequest {
	return &wire.ForwardRequest{Id: id, KeyNode: r.Key.Node, KeySession: r.Key.Session, KeyHandle: r.Key.Handle,
		KeyNonce: r.Key.Nonce, KeyOp: r.Key.Op, Site: int32(r.Site), Right: string(r.Right), User: r.User, Role: r.Role,
		From: r.From, Epoch: r.Epoch, BudgetMs: r.Budget.Milliseconds(), Op: r.Op, Body: r.Body}
}

func requestOf(m *wire.ForwardRequest) forward.Request {
	return forward.Request{
		Key:  forward.Key{Node: m.GetKeyNode(), Session: m.GetKeySession(), Handle: m.GetKeyHandle(), Nonce: m.GetKeyNonce(), Op: m.GetKeyOp()},
		Site: gate.Site(m.GetSite()), Right: forward.Right(m.GetRight()), User: m.GetUser(), Role: m.GetRole(),
		Epoch: m.GetEpoch(), Budget: time.Duration(m.GetBudgetMs()) * time.Millisecond, Op: m.GetOp(), Body: m.GetBody(),
	}
}

func fromWire(r *wire.ForwardResponse) forward.Response {
	return forward.Response{Outcome: forward.Outcome(r.GetOutcome()), Status: ua.StatusCode(r.GetStatus()), Body: r.GetBody(),
		Primary: r.GetPrimary(), Epoch: r.GetEpoch()}
}
