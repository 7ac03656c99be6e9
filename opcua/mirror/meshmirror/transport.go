// Package meshmirror carries the batches of session mirroring (package
// opcua/mirror) between the driver members of a ClusterId on the cluster's
// distributed pub/sub mediator: each batch goes point to point (SendTo)
// on the topic "opcua-mirror" to the peer's incarnation, as a
// google.protobuf.BytesValue (a type every otopcua binary links, so no
// message of its own is needed).
//
// Members are named by their incarnation (host:port#uid, the names of
// forward/meshtransport), so a batch never reaches a restarted process at
// a peer's address: the mediator drops a message addressed to another
// incarnation, and one to a node it does not hold as a reachable member.
// A batch that is not delivered is lost without a word, as
// mirror.Transport allows: the Member notices the missing
// acknowledgement. The mediator delivers one sender's messages in order.
//
// The Transport exists before the mediator does (the OPC UA server, and
// its Member, are built before the node joins the cluster): Send drops
// every batch until Bind, and Stop ends the subscription. A node that is
// not ready to hold its peers' sessions yet (its deployment, whose tags
// the mirrored items sample, is not applied) calls Hold before Bind: the
// batches received are then queued, up to a bound, and handed over in
// order by Open. A batch beyond the bound is dropped; its sender sees the
// gap and starts its stream again.
//
// Concurrency: every method is safe for concurrent use. The receive
// function given to Bind is called on the mediator's goroutine (the
// batches queued by Hold on Open's), one batch at a time, never
// concurrently, in order per sender; it must not block (Member.Receive
// only queues) and must not modify the batch.
package meshmirror

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/forward/meshtransport"
	"github.com/otopcua/otopcua/opcua/mirror"
)

// Topic carries the mirroring batches.
const Topic = "opcua-mirror"

// ErrNotBound is Send's answer before Bind and after Stop: the batch is
// dropped.
var ErrNotBound = errors.New("meshmirror: not bound to the cluster's pub/sub mediator")

// Mesh is the pub/sub mediator (*pubsub.Mediator).
type Mesh interface {
	SendTo(to membership.UniqueAddress, topic string, msg proto.Message) error
	Subscribe(topic string, fn pubsub.Handler) (cancel func())
}

// Transport is a mirror.Transport over the mesh.
type Transport struct {
	mu     sync.Mutex
	mesh   Mesh   // nil until Bind and after Stop; mu must be held.
	cancel func() // the subscription; mu must be held.
	// receive is Bind's receive function. mu must be held.
	receive func(from string, batch []byte)

	// held: batches are queued, not handed over (Hold until Open); at
	// most holdMax bytes of them. mu must be held for all four.
	held      bool
	holdMax   int
	queue     []received
	queuedLen int

	// dropped counts batches received while held beyond the bound.
	dropped atomic.Uint64

	// Ignored counts received messages that were not a BytesValue.
	ignored atomic.Uint64
}

var _ mirror.Transport = (*Transport)(nil)

// received is one batch queued while held.
type received struct {
	from  string
	batch []byte
}

// New returns a Transport that drops every batch until Bind.
func New() *Transport { return &Transport{} }

// Hold makes the batches received from now on wait for Open, at most
// maxBytes of them (the excess is dropped and counted). Call it before
// Bind.
func (t *Transport) Hold(maxBytes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held, t.holdMax = true, maxBytes
}

// Open hands the batches queued since Hold to the receive function, in
// the order they arrived, and every later one as it arrives. It is a
// no-op without Hold and when called again.
func (t *Transport) Open() {
	for {
		t.mu.Lock()
		receive := t.receive
		q := t.queue
		t.queue, t.queuedLen = nil, 0
		if len(q) == 0 || receive == nil {
			// Nothing (more) to hand over: later batches go straight
			// through. Without Bind the queue is empty.
			t.held = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		// Still held while these are handed over: a batch arriving now
		// queues behind them and is handed over by the next round.
		for _, r := range q {
			receive(r.from, r.batch)
		}
	}
}

// onBatch is the mediator's handler of Topic.
func (t *Transport) onBatch(from membership.UniqueAddress, msg proto.Message) {
	b, ok := msg.(*wrapperspb.BytesValue)
	if !ok {
		t.ignored.Add(1)
		return
	}
	name := meshtransport.Name(from)
	t.mu.Lock()
	if t.held {
		if t.queuedLen+len(b.GetValue()) > t.holdMax {
			t.dropped.Add(1)
		} else {
			t.queue = append(t.queue, received{name, b.GetValue()})
			t.queuedLen += len(b.GetValue())
		}
		t.mu.Unlock()
		return
	}
	receive := t.receive
	t.mu.Unlock()
	receive(name, b.GetValue())
}

// Bind starts carrying: batches go out over mesh, and every batch another
// member sends to this one is handed to receive with the sender's name
// (Member.Receive). It panics when called twice.
func (t *Transport) Bind(mesh Mesh, receive func(from string, batch []byte)) {
	if mesh == nil || receive == nil {
		panic("meshmirror: Bind needs a mesh and a receive function")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mesh != nil || t.cancel != nil {
		panic("meshmirror: Bind called twice")
	}
	t.mesh, t.receive = mesh, receive
	t.cancel = mesh.Subscribe(Topic, t.onBatch)
}

// Send implements mirror.Transport: it hands batch to the mediator for the
// member named to (host:port#uid) and returns at once. The batch must not
// be modified afterwards.
func (t *Transport) Send(to string, batch []byte) error {
	addr, err := meshtransport.Parse(to)
	if err != nil {
		return fmt.Errorf("meshmirror: %w", err)
	}
	t.mu.Lock()
	mesh := t.mesh
	t.mu.Unlock()
	if mesh == nil {
		return ErrNotBound
	}
	return mesh.SendTo(addr, Topic, wrapperspb.Bytes(batch))
}

// Stop ends the subscription; later batches are dropped both ways.
func (t *Transport) Stop() {
	t.mu.Lock()
	cancel := t.cancel
	t.mesh = nil
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Dropped is the number of batches received while held beyond Hold's
// bound.
func (t *Transport) Dropped() uint64 { return t.dropped.Load() }

// Queued is the number of batches waiting for Open.
func (t *Transport) Queued() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.queue)
}

// Ignored is the number of messages on Topic that were not a BytesValue
// (a foreign or broken sender).
func (t *Transport) Ignored() uint64 { return t.ignored.Load() }
