package pubsub

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/membership"
)

// Topics used by otopcua.
const (
	// TopicRedundancyState carries RedundancyStateChanged snapshots (every
	// topology change and every 10 s) and OpcUaProbeResult.
	TopicRedundancyState = "redundancy-state"
	// TopicAlerts carries alarm transitions emitted by the Primary.
	TopicAlerts = "alerts"
)

// DefaultGossipInterval is how often a mediator sends its registry digest
// to every peer.
const DefaultGossipInterval = time.Second

// Membership is the node's cluster membership, as *daemon.Daemon provides
// it.
type Membership interface {
	// Self is this node's incarnation.
	Self() membership.UniqueAddress
	// Snapshot is the current view; it must not block for long.
	Snapshot() membership.State
	// Subscribe calls fn for every later membership event, from one
	// goroutine, in order; it returns the view before those events and a
	// cancel function.
	Subscribe(fn func(membership.Event)) (membership.State, func())
}

// Handler receives one message of a subscribed topic. from is the
// publishing node (this node's own address for a local Publish).
//
// Concurrency: all handlers of one Mediator are called from its actor
// goroutine, one message at a time, never concurrently with each other;
// messages from one publisher arrive in publish order. A handler must not
// block — every later message to every subscriber of this node waits for
// it — and must not modify msg, which is shared between the subscribers of
// the topic on this node. It may call Subscribe, Publish, SendTo and a
// cancel function. A handler that panics is recovered and logged.
type Handler func(from membership.UniqueAddress, msg proto.Message)

// Options configure a Mediator.
type Options struct {
	// System hosts the mediator actor, named Name. Required.
	System *actors.System
	// Membership is this node's membership (the cluster daemon). Required.
	Membership Membership
	// Transport carries messages to peers' mediators. Default:
	// NewRemoteTransport over System with the dial gate.
	Transport Transport
	// Clock drives the registry gossip. Default: wall clock.
	Clock actors.Clock
	// Logger receives the mediator's log lines. Default: discard.
	Logger *slog.Logger
	// GossipInterval is how often the registry digest goes to every peer.
	// Default 1 s.
	GossipInterval time.Duration
}

func (o *Options) defaults() error {
	if o.System == nil {
		return errors.New("pubsub: Options.System is required")
	}
	if o.Membership == nil {
		return errors.New("pubsub: Options.Membership is required")
	}
	if o.Transport == nil {
		o.Transport = NewRemoteTransport(o.System, nil)
	}
	if o.Clock == nil {
		o.Clock = actors.RealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.GossipInterval <= 0 {
		o.GossipInterval = DefaultGossipInterval
	}
	return nil
}

// Stats counts a mediator's traffic.
type Stats struct {
	// Published: Publish and SendTo calls accepted.
	Published uint64
	// Sent: messages handed to the transport (registry gossip included).
	Sent uint64
	// Received: messages from peers, refused ones included.
	Received uint64
	// Delivered: handler calls.
	Delivered uint64
	// Invalid: not a valid pub/sub message.
	Invalid uint64
	// WrongIncarnation: addressed to another uid at this address — a
	// message queued for an earlier process here, delivered late.
	WrongIncarnation uint64
	// Misaddressed: addressed to another host:port.
	Misaddressed uint64
	// Quarantined: sent by an incarnation removed from the cluster.
	Quarantined uint64
	// UnknownType: a payload whose message type this binary does not know.
	UnknownType uint64
	// NoSubscriber: a message for a topic without local subscribers
	// (an unsubscribe not yet known to the publisher).
	NoSubscriber uint64
	// HandlerPanics: handlers that panicked.
	HandlerPanics uint64
}

type counters struct {
	published, sent, received, delivered, invalid, wrongIncarnation, misaddressed,
	quarantined, unknownType, noSubscriber, handlerPanics atomic.Uint64
}

// Mediator is one node's distributed pub/sub mediator: a protoactor actor
// named Name that keeps the local subscribers, gossips the topic registry
// with the other nodes' mediators and fans published messages out. Its
// methods are safe for concurrent use and never block on the network.
type Mediator struct {
	opts  Options
	self  membership.UniqueAddress
	root  *actor.RootContext
	pid   *actor.PID
	stats counters

	reg    atomic.Pointer[Registry] // latest registry, for readers
	nextID atomic.Uint64

	unsubscribe func() // membership subscription
	stopTick    chan struct{}
	stopOnce    sync.Once
}

// Start spawns the mediator actor and starts the registry gossip.
func Start(o Options) (*Mediator, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	m := &Mediator{opts: o, self: o.Membership.Self(), root: o.System.Root(), stopTick: make(chan struct{})}
	m.reg.Store(&Registry{})
	m.pid = o.System.Actor.NewLocalPID(Name)
	o.Transport.Bind(m.self.Address(), func(msg proto.Message) { m.root.Send(m.pid, msg) })
	a := newMediatorActor(m)
	props := actor.PropsFromProducer(func() actor.Actor { return a }, actor.WithGuardian(actors.StopOnFailure()),
		actor.WithMailbox(actors.RemoteMailbox())) // peers send to it while it spawns
	// m.pid stays the NewLocalPID above (the same PID SpawnNamed returns):
	// the transport's inbox may already be reading it.
	if _, err := m.root.SpawnNamed(props, Name); err != nil {
		o.Transport.Close()
		return nil, fmt.Errorf("pubsub: spawn %s: %w", Name, err)
	}
	_, m.unsubscribe = o.Membership.Subscribe(func(ev membership.Event) { m.root.Send(m.pid, memberEvent{ev}) })
	go m.tickLoop(o.Clock.NewTicker(o.GossipInterval))
	return m, nil
}

func (m *Mediator) tickLoop(t clockwork.Ticker) {
	defer t.Stop()
	for {
		select {
		case <-t.Chan():
			m.root.Send(m.pid, tickMsg{})
		case <-m.stopTick:
			return
		}
	}
}

// Self is this node's incarnation.
func (m *Mediator) Self() membership.UniqueAddress { return m.self }

// Subscribe registers fn for the messages published on topic from now on
// by any node, this one included, and returns the function that cancels
// the subscription. No message published before is replayed. After cancel
// returns, fn is not called again, except for a call already under way on
// the mediator's goroutine. The topic appears in the registry of the other
// nodes after the next gossip; until then their publishes miss this node.
// Subscribe panics on an empty topic, one longer than MaxTopicLen, or a nil
// fn.
func (m *Mediator) Subscribe(topic string, fn Handler) (cancel func()) {
	if err := checkTopic(topic); err != nil || fn == nil {
		panic(fmt.Sprintf("pubsub: Subscribe needs a topic of 1..%d bytes and a handler (topic %q)", MaxTopicLen, topic))
	}
	s := &subscriber{id: m.nextID.Add(1), topic: topic, fn: fn}
	m.root.Send(m.pid, subscribeCmd{s})
	var once sync.Once
	return func() {
		once.Do(func() {
			s.cancelled.Store(true)
			m.root.Send(m.pid, unsubscribeCmd{s})
		})
	}
}

// Publish sends msg to every subscriber of topic on every node that is Up
// (or WeaklyUp, Leaving, Exiting) and reachable from this one, and to the
// local subscribers, at most once each. Nothing is buffered: a node that
// subscribes later, or is unreachable now, never gets it. msg travels as a
// protobuf Any, so any generated message works; receivers need its type
// linked into their binary. msg is copied before Publish returns.
func (m *Mediator) Publish(topic string, msg proto.Message) error {
	return m.publish(membership.UniqueAddress{}, topic, msg)
}

// SendTo sends msg to the subscribers of topic on one node only — to, or
// this node itself — if to is a member this node does not hold
// unreachable; otherwise it is dropped. It is the point-to-point message
// the singleton managers' hand-over uses.
func (m *Mediator) SendTo(to membership.UniqueAddress, topic string, msg proto.Message) error {
	if to.IsZero() {
		return errors.New("pubsub: SendTo needs a node")
	}
	return m.publish(to, topic, msg)
}

func (m *Mediator) publish(to membership.UniqueAddress, topic string, msg proto.Message) error {
	if err := checkTopic(topic); err != nil {
		return err
	}
	if msg == nil {
		return errors.New("pubsub: nil message")
	}
	payload, err := anypb.New(msg)
	if err != nil {
		return fmt.Errorf("pubsub: encode %T: %w", msg, err)
	}
	m.stats.published.Add(1)
	m.root.Send(m.pid, publishCmd{to: to, topic: topic, payload: payload, local: proto.Clone(msg)})
	return nil
}

// Registry returns the latest topic registry this mediator holds.
func (m *Mediator) Registry() Registry { return *m.reg.Load() }

// Stats returns the traffic counters.
func (m *Mediator) Stats() Stats {
	c := &m.stats
	return Stats{
		Published: c.published.Load(), Sent: c.sent.Load(), Received: c.received.Load(),
		Delivered: c.delivered.Load(), Invalid: c.invalid.Load(), WrongIncarnation: c.wrongIncarnation.Load(),
		Misaddressed: c.misaddressed.Load(), Quarantined: c.quarantined.Load(), UnknownType: c.unknownType.Load(),
		NoSubscriber: c.noSubscriber.Load(), HandlerPanics: c.handlerPanics.Load(),
	}
}

// Stop stops the gossip, the actor and the transport. Handlers are not
// called after Stop returns; later Publish calls are dropped.
func (m *Mediator) Stop() {
	m.stopOnce.Do(func() {
		m.unsubscribe()
		close(m.stopTick)
		_ = m.root.StopFuture(m.pid).Wait()
		m.opts.Transport.Close()
	})
}
