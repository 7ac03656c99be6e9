package pubsub_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/cluster/pubsub/pubsubtest"
	"github.com/otopcua/otopcua/cluster/wire"
	"github.com/otopcua/otopcua/internal/poll"
)

// inbox records what one subscriber received.
type inbox struct {
	mu   sync.Mutex
	from []membership.UniqueAddress
	msgs []string
}

func (b *inbox) handler(from membership.UniqueAddress, msg proto.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.from = append(b.from, from)
	b.msgs = append(b.msgs, msg.(*wrapperspb.StringValue).GetValue())
}

func (b *inbox) got() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.msgs)
}

func (b *inbox) has(v string) func() bool {
	return func() bool { return slices.Contains(b.got(), v) }
}

func (b *inbox) sender(i int) membership.UniqueAddress {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.from[i]
}

func str(s string) proto.Message { return wrapperspb.String(s) }

// registered reports whether n's registry lists the incarnation u under
// topic.
func registered(n *pubsubtest.Node, topic string, u membership.UniqueAddress) func() bool {
	return func() bool { return slices.Contains(n.Mediator.Registry().Nodes(topic), u) }
}

// TestPublishReachesLocalAndRemoteSubscribers: one Publish reaches every
// subscriber of the topic on every node, the publisher's own included,
// once each, with the publisher's incarnation as sender; subscribers of
// another topic get nothing.
func TestPublishReachesLocalAndRemoteSubscribers(t *testing.T) {
	c := pubsubtest.New(t)
	ns := c.Form("a", "b", "c")
	a, b, cc := ns[0], ns[1], ns[2]
	var onA, onB1, onB2, alertsC inbox
	a.Mediator.Subscribe(pubsub.TopicRedundancyState, onA.handler)
	b.Mediator.Subscribe(pubsub.TopicRedundancyState, onB1.handler)
	b.Mediator.Subscribe(pubsub.TopicRedundancyState, onB2.handler)
	cc.Mediator.Subscribe(pubsub.TopicAlerts, alertsC.handler)
	c.Until(3*time.Second, "a knows b's and c's topics", func() bool {
		return registered(a, pubsub.TopicRedundancyState, b.Daemon.Self())() && registered(a, pubsub.TopicAlerts, cc.Daemon.Self())()
	})
	if registered(a, pubsub.TopicRedundancyState, cc.Daemon.Self())() {
		t.Fatal("c has no redundancy-state subscriber but is registered for it")
	}
	if err := a.Mediator.Publish(pubsub.TopicRedundancyState, str("snapshot-1")); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("every redundancy-state subscriber got snapshot-1", func() bool {
		return onA.has("snapshot-1")() && onB1.has("snapshot-1")() && onB2.has("snapshot-1")()
	}))
	if err := cc.Mediator.Publish(pubsub.TopicAlerts, str("alarm-1")); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("c's local alerts subscriber got alarm-1", alertsC.has("alarm-1")))
	for name, box := range map[string]*inbox{"a": &onA, "b1": &onB1, "b2": &onB2} {
		if got := box.got(); !slices.Equal(got, []string{"snapshot-1"}) {
			t.Errorf("%s got %q, want exactly snapshot-1", name, got)
		}
		if from := box.sender(0); from != a.Daemon.Self() {
			t.Errorf("%s: sender %v, want %v", name, from, a.Daemon.Self())
		}
	}
	if got := alertsC.got(); !slices.Equal(got, []string{"alarm-1"}) {
		t.Errorf("alerts subscriber got %q", got)
	}
	if s := b.Mediator.Stats(); s.Delivered != 2 || s.WrongIncarnation != 0 || s.Invalid != 0 {
		t.Errorf("b stats %+v", s)
	}
}

// TestUnsubscribe: a cancelled subscriber gets nothing more, its
// neighbour on the same node still does, and when the last subscriber of
// a topic on a node is gone the other nodes drop that node from the
// topic's registry.
func TestUnsubscribe(t *testing.T) {
	c := pubsubtest.New(t)
	ns := c.Form("a", "b")
	a, b := ns[0], ns[1]
	var keep, gone, onA inbox
	cancelKeep := b.Mediator.Subscribe(pubsub.TopicAlerts, keep.handler)
	cancelGone := b.Mediator.Subscribe(pubsub.TopicAlerts, gone.handler)
	// a's own subscriber is the barrier below: a delivers locally after it
	// has sent to the other nodes, in the same step.
	a.Mediator.Subscribe(pubsub.TopicAlerts, onA.handler)
	c.Until(3*time.Second, "a knows b's alerts subscription", registered(a, pubsub.TopicAlerts, b.Daemon.Self()))
	c.Until(3*time.Second, "b knows a's alerts subscription", registered(b, pubsub.TopicAlerts, a.Daemon.Self()))
	_ = a.Mediator.Publish(pubsub.TopicAlerts, str("m1"))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("both got m1", func() bool { return keep.has("m1")() && gone.has("m1")() }))

	cancelGone()
	_ = a.Mediator.Publish(pubsub.TopicAlerts, str("m2"))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("keep got m2", keep.has("m2")))
	if got := gone.got(); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("cancelled subscriber got %q", got)
	}

	cancelKeep()
	c.Until(3*time.Second, "a dropped b from alerts", func() bool { return !registered(a, pubsub.TopicAlerts, b.Daemon.Self())() })
	sent := a.Mediator.Stats().Sent
	_ = a.Mediator.Publish(pubsub.TopicAlerts, str("m3"))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a's own subscriber got m3 (a is done with the publish)", onA.has("m3")))
	if s := a.Mediator.Stats(); s.Sent != sent {
		t.Fatalf("a sent %d messages for a topic nobody else subscribes", s.Sent-sent)
	}
	if got := keep.got(); slices.Contains(got, "m3") {
		t.Fatalf("cancelled subscriber got m3: %q", got)
	}
}

// TestNoReplayToLateSubscriber: a subscriber added after a publish never
// sees it, neither on the publishing node nor on another.
func TestNoReplayToLateSubscriber(t *testing.T) {
	c := pubsubtest.New(t)
	ns := c.Form("a", "b")
	a, b := ns[0], ns[1]
	var early, lateB, lateA inbox
	b.Mediator.Subscribe(pubsub.TopicRedundancyState, early.handler)
	c.Until(3*time.Second, "a knows b's subscription", registered(a, pubsub.TopicRedundancyState, b.Daemon.Self()))
	_ = a.Mediator.Publish(pubsub.TopicRedundancyState, str("before"))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("early got before", early.has("before")))

	b.Mediator.Subscribe(pubsub.TopicRedundancyState, lateB.handler)
	a.Mediator.Subscribe(pubsub.TopicRedundancyState, lateA.handler)
	c.Advance(3 * time.Second) // several gossip rounds
	_ = a.Mediator.Publish(pubsub.TopicRedundancyState, str("after"))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("every subscriber got after", func() bool {
		return early.has("after")() && lateB.has("after")() && lateA.has("after")()
	}))
	for name, box := range map[string]*inbox{"late on b": &lateB, "late on a": &lateA} {
		if got := box.got(); !slices.Equal(got, []string{"after"}) {
			t.Errorf("%s got %q, want only the message published after it subscribed", name, got)
		}
	}
}

// TestRemovedNodeSubscriptionsVanish: when a crashed node is removed from
// the membership its registry entries vanish everywhere, a stale delta
// cannot bring them back, and its successor at the same address starts
// with none.
func TestRemovedNodeSubscriptionsVanish(t *testing.T) {
	c := pubsubtest.New(t)
	ns := c.Form("a", "b", "c")
	a, b, cc := ns[0], ns[1], ns[2]
	var onC inbox
	cc.Mediator.Subscribe(pubsub.TopicAlerts, onC.handler)
	oldC := cc.Daemon.Self()
	c.Until(3*time.Second, "a and b know c's subscription", func() bool {
		return registered(a, pubsub.TopicAlerts, oldC)() && registered(b, pubsub.TopicAlerts, oldC)()
	})
	bucket, _ := a.Mediator.Registry().Bucket(oldC)

	c.Kill("c")
	c.Until(5*time.Second, "c removed on a and b", func() bool {
		return pubsubtest.StatusAt(a, "c") == membership.Removed && pubsubtest.StatusAt(b, "c") == membership.Removed
	})
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("c's bucket gone on a and b", func() bool {
		_, onA := a.Mediator.Registry().Bucket(oldC)
		_, onB := b.Mediator.Registry().Bucket(oldC)
		return !onA && !onB
	}))

	// b replays c's old bucket to a, as a delayed delta would
	stale := &wire.PubSubDelta{
		From: &wire.UniqueAddress{Host: "b", Port: pubsubtest.Port, Uid: b.Daemon.Self().UID},
		To:   &wire.UniqueAddress{Host: "a", Port: pubsubtest.Port, Uid: a.Daemon.Self().UID},
		Buckets: []*wire.PubSubBucket{{
			Owner:   &wire.UniqueAddress{Host: oldC.Host, Port: uint32(oldC.Port), Uid: oldC.UID},
			Version: bucket.Version + 10, Topics: bucket.Topics,
		}},
	}
	received := a.Mediator.Stats().Received
	c.PubNet.Inject(pubsubtest.Addr("a"), stale)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a processed the stale delta", func() bool { return a.Mediator.Stats().Received > received }))
	if _, ok := a.Mediator.Registry().Bucket(oldC); ok {
		t.Fatal("a stale delta brought a removed node's bucket back")
	}

	c2 := c.Start("c", []string{"a", "b", "c"}, nil)
	c.Until(10*time.Second, "c rejoined", pubsubtest.AllUp(a, "a", "b", "c"))
	c.Advance(3 * time.Second)
	if nodes := a.Mediator.Registry().Nodes(pubsub.TopicAlerts); len(nodes) != 0 {
		t.Fatalf("alerts registered at %v; the new incarnation %v subscribed to nothing", nodes, c2.Daemon.Self())
	}
}

// TestStaleMessageForOldIncarnationDropped: a message addressed to the
// previous process at an address — as protoactor delivers a dead
// process's queue to its successor — is dropped and counted; the same
// message addressed to the current incarnation is delivered.
func TestStaleMessageForOldIncarnationDropped(t *testing.T) {
	c := pubsubtest.New(t)
	ns := c.Form("a", "b")
	a := ns[0]
	oldB := ns[1].Daemon.Self()
	c.Kill("b")
	c.Until(5*time.Second, "b removed", func() bool { return pubsubtest.StatusAt(a, "b") == membership.Removed })
	b2 := c.Start("b", []string{"a", "b"}, nil)
	c.Until(10*time.Second, "b rejoined", func() bool { return pubsubtest.AllUp(a, "a", "b")() && pubsubtest.AllUp(b2, "a", "b")() })
	var got inbox
	b2.Mediator.Subscribe(pubsub.TopicRedundancyState, got.handler)

	msg := func(to membership.UniqueAddress, v string) *wire.PubSubMessage {
		p, _ := anypb.New(str(v))
		return &wire.PubSubMessage{
			From:    &wire.UniqueAddress{Host: "a", Port: pubsubtest.Port, Uid: a.Daemon.Self().UID},
			To:      &wire.UniqueAddress{Host: to.Host, Port: uint32(to.Port), Uid: to.UID},
			Topic:   pubsub.TopicRedundancyState,
			Payload: p,
		}
	}
	c.PubNet.Inject(pubsubtest.Addr("b"), msg(oldB, "for the old b"))
	c.PubNet.Inject(pubsubtest.Addr("b"), msg(b2.Daemon.Self(), "for the new b"))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the message for the new b delivered", got.has("for the new b")))
	if s := b2.Mediator.Stats(); s.WrongIncarnation != 1 {
		t.Fatalf("stats %+v: want one message for another incarnation", s)
	}
	if g := got.got(); !slices.Equal(g, []string{"for the new b"}) {
		t.Fatalf("subscriber got %q", g)
	}

	// and a message from the removed incarnation of b is refused by a
	var onA inbox
	a.Mediator.Subscribe(pubsub.TopicRedundancyState, onA.handler)
	p, _ := anypb.New(str("from the old b"))
	q := a.Mediator.Stats().Quarantined
	c.PubNet.Inject(pubsubtest.Addr("a"), &wire.PubSubMessage{
		From:  &wire.UniqueAddress{Host: "b", Port: pubsubtest.Port, Uid: oldB.UID},
		To:    &wire.UniqueAddress{Host: "a", Port: pubsubtest.Port, Uid: a.Daemon.Self().UID},
		Topic: pubsub.TopicRedundancyState, Payload: p,
	})
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("quarantined message counted", func() bool { return a.Mediator.Stats().Quarantined == q+1 }))
	if len(onA.got()) != 0 {
		t.Fatalf("a delivered %q from a removed incarnation", onA.got())
	}
}

// TestSendToOneNode: SendTo reaches the topic's subscribers on the named
// node only, and is dropped for an incarnation that is not a member.
func TestSendToOneNode(t *testing.T) {
	c := pubsubtest.New(t)
	ns := c.Form("a", "b", "c")
	a, b, cc := ns[0], ns[1], ns[2]
	var onB, onC inbox
	b.Mediator.Subscribe("direct", onB.handler)
	cc.Mediator.Subscribe("direct", onC.handler)
	// no registry round needed: SendTo does not consult it
	_ = a.Mediator.SendTo(b.Daemon.Self(), "direct", str("to b"))
	stranger := membership.UniqueAddress{Host: "c", Port: pubsubtest.Port, UID: cc.Daemon.Self().UID + 1000}
	_ = a.Mediator.SendTo(stranger, "direct", str("to a stranger"))
	_ = a.Mediator.SendTo(cc.Daemon.Self(), "direct", str("to c"))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("b and c got theirs", func() bool { return onB.has("to b")() && onC.has("to c")() }))
	if !slices.Equal(onB.got(), []string{"to b"}) || !slices.Equal(onC.got(), []string{"to c"}) {
		t.Fatalf("b got %q, c got %q", onB.got(), onC.got())
	}
}

// TestUnreachableNodeIsSkipped: a partitioned node is not sent to (no
// buffering), and gets the messages published after it is reachable
// again.
func TestUnreachableNodeIsSkipped(t *testing.T) {
	c := pubsubtest.New(t)
	ns := c.Form("a", "b")
	a, b := ns[0], ns[1]
	var onA, onB inbox
	b.Mediator.Subscribe(pubsub.TopicAlerts, onB.handler)
	a.Mediator.Subscribe(pubsub.TopicAlerts, onA.handler) // the barrier below
	c.Until(3*time.Second, "a knows b's subscription", registered(a, pubsub.TopicAlerts, b.Daemon.Self()))
	c.Until(3*time.Second, "b knows a's subscription", registered(b, pubsub.TopicAlerts, a.Daemon.Self()))
	c.Net.Partition(pubsubtest.Addr("a"), pubsubtest.Addr("b"))
	c.Until(10*time.Second, "a holds b unreachable", func() bool {
		st := a.Daemon.Snapshot()
		return !st.Gossip.Reachability.IsReachableFrom(st.Self, b.Daemon.Self())
	})
	sent := a.Mediator.Stats().Sent
	_ = a.Mediator.Publish(pubsub.TopicAlerts, str("while cut off"))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("a's own subscriber got it (a is done with the publish)", onA.has("while cut off")))
	if s := a.Mediator.Stats(); s.Sent != sent {
		t.Fatalf("a sent %d messages to an unreachable node", s.Sent-sent)
	}
	c.Net.Heal(pubsubtest.Addr("a"), pubsubtest.Addr("b"))
	c.Until(10*time.Second, "b reachable again", func() bool {
		st := a.Daemon.Snapshot()
		return st.Gossip.Reachability.IsReachableFrom(st.Self, b.Daemon.Self())
	})
	_ = a.Mediator.Publish(pubsub.TopicAlerts, str("after the heal"))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("b got the later message", onB.has("after the heal")))
	if g := onB.got(); !slices.Equal(g, []string{"after the heal"}) {
		t.Fatalf("b got %q", g)
	}
}

// linksCut is a Links whose every link is cut.
type linksCut struct{}

func (linksCut) Passes(_, _ membership.Address) bool { return false }

// TestMemNetworkOnFollowsItsLinks: a mediators' network routed over the
// daemons' network drops what that network would drop (one Kill or
// Partition for all the cluster's traffic), and delivers otherwise.
func TestMemNetworkOnFollowsItsLinks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		links pubsub.Links
		want  uint64 // delivered
	}{{"cut", linksCut{}, 0}, {"own network only", nil, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			n := pubsub.NewMemNetworkOn(tc.links)
			if tc.links == nil {
				n = pubsub.NewMemNetwork()
			}
			a, b := n.Transport(), n.Transport()
			got := 0
			a.Bind(pubsubtest.Addr("a"), func(proto.Message) {})
			b.Bind(pubsubtest.Addr("b"), func(proto.Message) { got++ })
			a.Send(pubsubtest.Addr("b"), str("x"))
			if sent, _ := a.Counts(); sent != tc.want || uint64(got) != tc.want {
				t.Fatalf("sent %d, received %d, want %d", sent, got, tc.want)
			}
		})
	}
}
