package pubsub

import (
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/wire"
)

// Local messages of the mediator actor (never sent over the network).
type (
	tickMsg      struct{}
	memberEvent  struct{ ev membership.Event }
	subscribeCmd struct{ s *subscriber }
	// unsubscribeCmd removes s.
	unsubscribeCmd struct{ s *subscriber }
	// publishCmd fans a message out (to zero) or sends it to one node.
	publishCmd struct {
		to      membership.UniqueAddress
		topic   string
		payload *anypb.Any
		local   proto.Message // a private copy for local subscribers
	}
)

type subscriber struct {
	id        uint64
	topic     string
	fn        Handler
	cancelled atomic.Bool
}

// quarantineSize bounds the set of removed incarnations remembered.
const quarantineSize = 256

// mediatorActor owns the registry and the subscriber table. Every field
// is touched only on the actor's goroutine.
type mediatorActor struct {
	m    *Mediator
	log  *slog.Logger
	reg  Registry
	subs map[string]map[uint64]*subscriber

	quarantine map[membership.UniqueAddress]bool
	qOrder     []membership.UniqueAddress
}

func newMediatorActor(m *Mediator) *mediatorActor {
	return &mediatorActor{
		m:          m,
		log:        m.opts.Logger,
		subs:       map[string]map[uint64]*subscriber{},
		quarantine: map[membership.UniqueAddress]bool{},
	}
}

func (a *mediatorActor) self() membership.UniqueAddress { return a.m.self }
func (a *mediatorActor) view() membership.State         { return a.m.opts.Membership.Snapshot() }

// Receive is the actor loop: one message at a time.
func (a *mediatorActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case tickMsg:
		a.onTick()
	case memberEvent:
		a.onMemberEvent(msg.ev)
	case subscribeCmd:
		a.onSubscribe(msg.s)
	case unsubscribeCmd:
		a.onUnsubscribe(msg.s)
	case publishCmd:
		a.onPublish(msg)
	case *wire.PubSubStatus, *wire.PubSubDelta, *wire.PubSubMessage:
		a.onInbound(msg.(proto.Message))
	case proto.Message:
		a.m.stats.received.Add(1)
		a.m.stats.invalid.Add(1)
	}
}

func (a *mediatorActor) send(to membership.UniqueAddress, msg proto.Message) {
	a.m.stats.sent.Add(1)
	a.m.opts.Transport.Send(to.Address(), msg)
}

// setRegistry installs r and makes it visible to readers.
func (a *mediatorActor) setRegistry(r Registry) {
	a.reg = r
	a.m.reg.Store(&r)
}

func (a *mediatorActor) onSubscribe(s *subscriber) {
	if s.cancelled.Load() {
		return
	}
	t := a.subs[s.topic]
	if t == nil {
		t = map[uint64]*subscriber{}
		a.subs[s.topic] = t
	}
	t[s.id] = s
	a.topicsChanged()
}

func (a *mediatorActor) onUnsubscribe(s *subscriber) {
	t := a.subs[s.topic]
	if t[s.id] == nil {
		return
	}
	delete(t, s.id)
	if len(t) == 0 {
		delete(a.subs, s.topic)
	}
	a.topicsChanged()
}

// topicsChanged updates this node's bucket and, when it changed, pushes it
// to every peer at once (the periodic digest would carry it within a
// gossip interval anyway).
func (a *mediatorActor) topicsChanged() {
	r, changed := a.reg.WithTopics(a.self(), slices.Collect(maps.Keys(a.subs)))
	if !changed {
		return
	}
	a.setRegistry(r)
	own, _ := r.Bucket(a.self())
	for _, p := range Peers(a.view()) {
		a.send(p, deltaToWire(a.self(), p, []Bucket{own}))
	}
}

// onTick prunes the buckets of nodes that are no longer members and sends
// the registry digest to every peer.
func (a *mediatorActor) onTick() {
	st := a.view()
	a.prune(st)
	vs := a.reg.Versions()
	for _, p := range Peers(st) {
		a.send(p, statusToWire(a.self(), p, vs, false))
	}
}

// prune drops the buckets of owners that are not members of st (and
// never this node's own). A node not yet in this view is also dropped; it
// comes back with the next gossip once the view has it.
func (a *mediatorActor) prune(st membership.State) {
	if st.Gossip.IsEmpty() {
		return // not a member yet, or already out: nothing to judge by
	}
	r, changed := a.reg.Prune(func(u membership.UniqueAddress) bool {
		return u == a.self() || (st.Gossip.HasMember(u) && !a.quarantine[u])
	})
	if changed {
		a.setRegistry(r)
	}
}

func (a *mediatorActor) onMemberEvent(ev membership.Event) {
	u := ev.Member.Address
	switch ev.Kind {
	case membership.MemberRemoved:
		if u == a.self() {
			return
		}
		a.quarantineAdd(u)
		if r, changed := a.reg.Prune(func(o membership.UniqueAddress) bool { return o != u }); changed {
			a.setRegistry(r)
			a.log.Info("pubsub: subscriptions of a removed node dropped", "member", u.NodeID(), "uid", u.UID)
		}
	case membership.MemberUp, membership.MemberWeaklyUp:
		// a newcomer learns the whole registry now rather than after
		// its first digest exchange
		if u != a.self() && Receives(a.view(), u) {
			if bs := a.reg.Delta(nil); len(bs) > 0 {
				a.send(u, deltaToWire(a.self(), u, bs))
			}
		}
	}
}

func (a *mediatorActor) quarantineAdd(u membership.UniqueAddress) {
	if a.quarantine[u] {
		return
	}
	a.quarantine[u] = true
	a.qOrder = append(a.qOrder, u)
	if len(a.qOrder) > quarantineSize {
		delete(a.quarantine, a.qOrder[0])
		a.qOrder = a.qOrder[1:]
	}
}

func (a *mediatorActor) onPublish(p publishCmd) {
	switch {
	case p.to.IsZero():
		st := a.view()
		for _, u := range Targets(st, a.reg, p.topic) {
			a.send(u, messageToWire(a.self(), u, p.topic, p.payload, false))
		}
		a.deliver(a.self(), p.topic, p.local)
	case p.to == a.self():
		a.deliver(a.self(), p.topic, p.local)
	default:
		st := a.view()
		if st.Gossip.HasMember(p.to) && st.Gossip.Reachability.IsReachableFrom(a.self(), p.to) {
			a.send(p.to, messageToWire(a.self(), p.to, p.topic, p.payload, true))
		}
	}
}

// deliver calls every live subscriber of topic with msg.
func (a *mediatorActor) deliver(from membership.UniqueAddress, topic string, msg proto.Message) bool {
	t := a.subs[topic]
	if len(t) == 0 {
		return false
	}
	ids := slices.Sorted(maps.Keys(t))
	for _, id := range ids {
		s := t[id]
		if s.cancelled.Load() {
			continue
		}
		a.call(s, from, msg)
	}
	return true
}

func (a *mediatorActor) call(s *subscriber, from membership.UniqueAddress, msg proto.Message) {
	defer func() {
		if p := recover(); p != nil {
			a.m.stats.handlerPanics.Add(1)
			a.log.Error("pubsub: subscriber panicked", "topic", s.topic, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	a.m.stats.delivered.Add(1)
	s.fn(from, msg)
}

// onInbound validates a message from a peer and handles it.
func (a *mediatorActor) onInbound(pm proto.Message) {
	c := &a.m.stats
	c.received.Add(1)
	in, err := decode(pm)
	if err != nil {
		c.invalid.Add(1)
		a.log.Debug("pubsub: message dropped: invalid", "type", fmt.Sprintf("%T", pm), "err", err)
		return
	}
	r := in.routing()
	self := a.self()
	switch {
	case r.to.Address() != self.Address():
		c.misaddressed.Add(1)
		return
	case r.to.UID != self.UID:
		c.wrongIncarnation.Add(1)
		a.log.Debug("pubsub: message dropped: for another incarnation", "from", r.from.String(), "to", r.to.String())
		return
	case a.quarantine[r.from]:
		c.quarantined.Add(1)
		return
	}
	switch x := in.(type) {
	case statusIn:
		a.onStatus(x)
	case deltaIn:
		a.onDelta(x)
	case messageIn:
		a.onMessage(x)
	}
}

// accept admits a bucket owner: a member of the current view, not this
// node (its own bucket is authoritative here) and not a removed
// incarnation.
func (a *mediatorActor) accept(st membership.State) func(membership.UniqueAddress) bool {
	return func(u membership.UniqueAddress) bool {
		return u != a.self() && !a.quarantine[u] && st.Gossip.HasMember(u)
	}
}

func (a *mediatorActor) onStatus(s statusIn) {
	st := a.view()
	if !Receives(st, s.from) {
		// A digest that waited in the mailbox while its sender became
		// unreachable (or left): no reply, as no publish goes there; the
		// periodic digest resumes once the view admits it again.
		return
	}
	if d := a.reg.Delta(s.versions); len(d) > 0 {
		a.send(s.from, deltaToWire(a.self(), s.from, d))
	}
	if !s.reply && a.reg.Behind(s.versions, a.accept(st)) {
		a.send(s.from, statusToWire(a.self(), s.from, a.reg.Versions(), true))
	}
}

func (a *mediatorActor) onDelta(d deltaIn) {
	r, changed := a.reg.Merge(d.buckets, a.accept(a.view()))
	if changed {
		a.setRegistry(r)
	}
}

func (a *mediatorActor) onMessage(x messageIn) {
	if len(a.subs[x.topic]) == 0 {
		a.m.stats.noSubscriber.Add(1)
		return
	}
	msg, err := x.payload.UnmarshalNew()
	if err != nil {
		a.m.stats.unknownType.Add(1)
		a.log.Warn("pubsub: message dropped: payload type unknown to this binary", "topic", x.topic,
			"type", x.payload.GetTypeUrl(), "from", x.from.NodeID(), "err", err)
		return
	}
	a.deliver(x.from, x.topic, msg)
}
