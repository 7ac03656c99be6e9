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
// every batch until Bind, and Stop ends the subscription.
//
// Concurrency: every method is safe for concurrent use. The receive
// function given to Bind is called on the mediator's goroutine, one batch
// at a time, in order per sender; it must not block (Member.Receive only
// queues) and must not modify the batch.
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

	// Ignored counts received messages that were not a BytesValue.
	ignored atomic.Uint64
}

var _ mirror.Transport = (*Transport)(nil)

// New returns a Transport that drops every batch until Bind.
func New() *Transport { return &Transport{} }

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
	t.mesh = mesh
	t.cancel = mesh.Subscribe(Topic, func(from membership.UniqueAddress, msg proto.Message) {
		b, ok := msg.(*wrapperspb.BytesValue)
		if !ok {
			t.ignored.Add(1)
			return
		}
		receive(meshtransport.Name(from), b.GetValue())
	})
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

// Ignored is the number of messages on Topic that were not a BytesValue
// (a foreign or broken sender).
func (t *Transport) Ignored() uint64 { return t.ignored.Load() }
