package redundancy

import (
	"maps"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// Membership is what the runtime reads of the membership daemon
// (*daemon.Daemon satisfies it).
type Membership interface {
	// Self is this process's unique address.
	Self() membership.UniqueAddress
	// Snapshot is the current membership view; it never blocks.
	Snapshot() membership.State
	// Subscribe calls fn for every later membership event, on one event
	// goroutine, one at a time; fn must not block. It returns the state
	// at subscription and a cancel function.
	Subscribe(fn func(membership.Event)) (membership.State, func())
}

// PubSub is the distributed pub/sub mediator as the runtime uses it
// (*pubsub.Mediator satisfies it).
type PubSub interface {
	// Publish sends msg to every subscriber of topic in the cluster, this
	// node's included. Nothing is buffered for late subscribers. An error
	// means msg could not be encoded; it never blocks on the network.
	Publish(topic string, msg proto.Message) error
	// Subscribe calls fn for every message published on topic from now
	// on. fn runs on the mediator's delivery goroutine and must not block.
	Subscribe(topic string, fn pubsub.Handler) (cancel func())
}

var _ PubSub = (*pubsub.Mediator)(nil)

// DbStatus is the last Config DB probe verdict.
type DbStatus struct {
	// Reachable: the probe query answered in time.
	Reachable bool
	// AsOf is when the verdict was taken.
	AsOf time.Time
	// Err says why the Config DB is unreachable; "" when Reachable.
	Err string
}

// DbHealth gives the last Config DB probe verdict; ok is false until the
// first probe finished. It must return at once (no I/O): a node with a
// slow DB probe keeps computing its ServiceLevel.
type DbHealth interface {
	DbStatus() (st DbStatus, ok bool)
}

// DbHealthQuery asks the DB probe actor (health's db-health-probe) for
// its last verdict; it answers with a *DbHealthReply at once, from memory.
type DbHealthQuery struct{}

// DbHealthReply answers DbHealthQuery: Known is false until the first
// probe finished.
type DbHealthReply struct {
	Status DbStatus
	Known  bool
}

// DbAskTimeout bounds the publish actor's Ask of the DB probe: no answer
// within it (the probe actor is restarting, stopped or stuck) counts as
// the Config DB unreachable, as the reference's Ask timeout does.
const DbAskTimeout = time.Second

// DbHealthFunc adapts a function to DbHealth.
type DbHealthFunc func() (DbStatus, bool)

// DbStatus calls f.
func (f DbHealthFunc) DbStatus() (DbStatus, bool) { return f() }

// LevelPublisher receives every ServiceLevel the node computes
// (opcua.ServiceLevelPublisher satisfies it). Publish may be called from
// any goroutine and must not block on I/O.
type LevelPublisher interface {
	Publish(level byte)
}

// Tracker remembers what the topic said over the whole life of the
// process, for the admin singleton instance that may start here later:
// the highest ownership epoch of each ClusterId and each node's latest
// NodeStatus. A new instance (after a hand-over or a take-over) seeds its
// epochs from it, so they continue above the previous instance's; see
// NextEpoch for the clock floor that covers a process that saw nothing.
//
// Subscribe Handle to the topic when the process starts, on every node that
// may host the singleton (role admin). It is safe for concurrent use.
type Tracker struct {
	mu       sync.Mutex
	epochs   EpochBook           // mu must be held.
	infos    map[string]NodeInfo // by NodeId; mu must be held.
	watchers map[int]func()      // mu must be held.
	nextID   int                 // mu must be held.
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{epochs: EpochBook{}, infos: map[string]NodeInfo{}, watchers: map[int]func(){}}
}

// Handle takes one message from the topic; invalid messages are ignored.
// It has the signature of a pub/sub subscriber and never blocks.
func (t *Tracker) Handle(_ membership.UniqueAddress, msg proto.Message) {
	switch m := msg.(type) {
	case *wire.RedundancyStateChanged:
		if s, err := SnapshotFromWire(m); err == nil {
			t.ObserveEpochs(s.Epochs)
		}
	case *wire.NodeStatus:
		if i, err := NodeInfoFromWire(m); err == nil {
			t.ObserveNodeInfo(i)
		}
	}
}

// ObserveEpochs folds epochs into the book (per ClusterId the higher wins).
func (t *Tracker) ObserveEpochs(epochs EpochBook) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.epochs = MergeEpochs(t.epochs, epochs)
}

// ObserveNodeInfo records a node's NodeStatus. When its incarnation,
// ApplicationURI or endpoint changed, the watchers are called (after the
// lock is released, on the caller's goroutine).
func (t *Tracker) ObserveNodeInfo(i NodeInfo) {
	t.mu.Lock()
	old, had := t.infos[i.NodeID]
	t.infos[i.NodeID] = i
	var fns []func()
	if !had || old.UID != i.UID || old.ApplicationURI != i.ApplicationURI || old.OpcUaEndpoint != i.OpcUaEndpoint {
		for _, fn := range t.watchers {
			fns = append(fns, fn)
		}
	}
	t.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Epochs returns a copy of the epoch book.
func (t *Tracker) Epochs() EpochBook {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.epochs)
}

// NodeInfos returns a copy of the latest NodeStatus of every node.
func (t *Tracker) NodeInfos() map[string]NodeInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.infos)
}

// Watch calls fn whenever a node's incarnation, ApplicationURI or endpoint
// changes, until cancel. fn runs on the goroutine that delivered the
// NodeStatus and must not block.
func (t *Tracker) Watch(fn func()) (cancel func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.nextID
	t.nextID++
	t.watchers[id] = fn
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.watchers, id)
	}
}
