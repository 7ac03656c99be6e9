package redundancy

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// StateActorOptions configure a RedundancyStateActor.
type StateActorOptions struct {
	// Membership is this node's membership daemon. Required.
	Membership Membership
	// PubSub carries the snapshots on wire.Topic. Required.
	PubSub PubSub
	// Tracker seeds the epochs and supplies each node's advertised
	// ApplicationURI and endpoint. Required: it must have been subscribed
	// to the topic since the process started (see Tracker).
	Tracker *Tracker
	// Parent is where StateActor.Start spawns the actor. Nil: Start
	// creates a private local actor system (actors.Plain on Clock) and
	// Stop shuts it down. Not used by StateActorChild, whose actor the
	// singleton manager spawns as its child.
	Parent actors.Parent
	// Clock drives the debounce and the republish heartbeat. Default: the
	// wall clock.
	Clock clockwork.Clock
	// Logger receives Primary changes (Info) and every publish (Debug).
	// Default: discard.
	Logger *slog.Logger
	// Subscribers, if set, lists the nodes subscribed to wire.Topic (the
	// mediator's registry, sorted). It is read every SubscriberPoll; a node
	// that newly appears gets a snapshot after the quiet period instead of
	// waiting for the next heartbeat (pub/sub does not replay, and a node
	// that just came Up subscribes before the registry tells this node).
	Subscribers func() []membership.UniqueAddress
}

// SubscriberPoll is how often the state actor reads Subscribers.
const SubscriberPoll = 500 * time.Millisecond

// Names of the RedundancyStateActor in the actor tree: the singleton
// manager of StateActorName spawns it as its child StateActorName.
const (
	StateActorName = "redundancy-state"
	StateActorKind = "RedundancyStateActor"
)

// stateShared is what the incarnations of one state actor share, created
// once per singleton instance: the options, the snapshot sequence (it keeps
// increasing across restarts of the actor) and the wake-up count.
type stateShared struct {
	o   StateActorOptions
	seq atomic.Uint64 // last sequence published
	gen atomic.Uint64 // of the latest debounce timer, across incarnations

	// kicks counts the membership and NodeStatus wake-ups handled, so that
	// tests can wait for one before they move the clock.
	kicks atomic.Uint64
}

func newStateShared(o StateActorOptions) *stateShared {
	if o.Membership == nil || o.PubSub == nil || o.Tracker == nil {
		panic("redundancy: StateActorOptions needs Membership, PubSub and Tracker")
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &stateShared{o: o}
}

// StateActorChild is the RedundancyStateActor as the singleton manager's
// child (singleton.Options.Child): the kind to spawn it as and a producer
// that makes a fresh incarnation at the start and at every restart. Call
// it once per singleton instance: its incarnations share the sequence
// number.
func StateActorChild(o StateActorOptions) (kind string, producer actor.Producer) {
	sh := newStateShared(o)
	return StateActorKind, func() actor.Actor { return &stateIncarnation{sh: sh} }
}

// StateActor is the RedundancyStateActor: the admin singleton that turns
// membership into RedundancyStateChanged snapshots. It subscribes to
// membership events, publishes DebounceQuiet after the last one (at most
// DebounceMax after the first), republishes every RepublishEvery, and keeps
// one ownership epoch per ClusterId (see NextEpoch and Tracker).
//
// The actor is a protoactor actor of kind StateActorKind; StateActor is a
// singleton Instance around it (Start and Stop are called by the singleton
// manager, Start once, Stop once after it). The host runs it instead as
// the manager's actor child, through StateActorChild.
type StateActor struct {
	*stateShared
	stopOwn func() // shuts down the private system without a Parent (actors.OwnParent)
	parent  actors.Parent
	pid     *actor.PID
	stopCh  chan struct{}
	once    sync.Once
}

// NewStateActor returns a stopped actor.
func NewStateActor(o StateActorOptions) *StateActor {
	return &StateActor{stateShared: newStateShared(o), stopCh: make(chan struct{})}
}

// Start spawns the actor (StateActorName under Options.Parent); it runs
// until Stop or ctx ends. Its first snapshot goes out DebounceQuiet after
// the actor started.
func (a *StateActor) Start(ctx context.Context) {
	a.parent, a.stopOwn = actors.OwnParent(a.o.Parent, a.o.Clock)
	sh := a.stateShared
	pid, err := a.parent.SpawnNamed(a.parent.Props(StateActorKind, func() actor.Actor { return &stateIncarnation{sh: sh} }), StateActorName)
	if err != nil {
		a.o.Logger.Error("redundancy state singleton not started", "err", err)
		return
	}
	a.pid = pid
	go func() {
		select {
		case <-ctx.Done():
			a.Stop()
		case <-a.stopCh:
		}
	}()
}

// Stop ends the actor and waits for it. No snapshot is published after
// Stop returns.
func (a *StateActor) Stop() {
	a.once.Do(func() {
		close(a.stopCh)
		if a.pid != nil {
			_ = a.parent.Root().StopFuture(a.pid).Wait()
		}
		if a.stopOwn != nil {
			a.stopOwn()
		}
	})
}

// Messages of the RedundancyStateActor.
type (
	stateKick      struct{} // a membership event or a changed NodeStatus
	statePoll      struct{} // read Subscribers
	stateRepublish struct{} // the heartbeat
	stateDebounced struct{ gen uint64 }
)

// stateIncarnation is one incarnation of the actor. Its epoch book starts
// from the Tracker (which every publish feeds), so a restart continues the
// epochs; the sequence lives in stateShared.
type stateIncarnation struct {
	sh      *stateShared
	stops   []func()
	stopped bool

	book         EpochBook
	subscribers  []membership.UniqueAddress
	pendingSince time.Time
	timer        clockwork.Timer // the debounce, one-shot
	gen          uint64          // of timer; older firings (also of an earlier incarnation) are ignored
}

// Receive handles one message.
func (c *stateIncarnation) Receive(ctx actor.Context) {
	o := &c.sh.o
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.start(ctx)
	case *actor.Stopping, *actor.Restarting:
		c.stop()
		if _, ok := m.(*actor.Stopping); ok {
			o.Logger.Info("redundancy state singleton stopped")
		}
	case stateKick:
		c.debounce(ctx)
	case statePoll:
		if c.stopped {
			return
		}
		now := o.Subscribers()
		if hasNew(c.subscribers, now) {
			c.debounce(ctx)
		}
		c.subscribers = now
	case stateDebounced:
		if c.stopped || m.gen != c.gen {
			return // a stale firing
		}
		c.pendingSince = time.Time{}
		c.publish("change")
	case stateRepublish:
		if !c.stopped {
			c.publish("heartbeat")
		}
	}
}

func (c *stateIncarnation) start(ctx actor.Context) {
	o := &c.sh.o
	root, self := ctx.ActorSystem().Root, ctx.Self()
	c.book = o.Tracker.Epochs()
	_, unsubscribe := o.Membership.Subscribe(func(membership.Event) { root.Send(self, stateKick{}) })
	unwatch := o.Tracker.Watch(func() { root.Send(self, stateKick{}) })
	c.stops = append(c.stops, unsubscribe, unwatch,
		actors.Every(root, o.Clock, self, RepublishEvery, stateRepublish{}))
	if o.Subscribers != nil {
		c.subscribers = o.Subscribers()
		c.stops = append(c.stops, actors.Every(root, o.Clock, self, SubscriberPoll, statePoll{}))
	}
	o.Logger.Info("redundancy state singleton started", "self", o.Membership.Self().NodeID(),
		"seedEpochs", len(c.book), "sequence", c.sh.seq.Load())
	// The start counts as a membership event: the first snapshot waits
	// for the quiet period like any other — unless the Primary moved from
	// the one the previous instance published (this instance took over
	// from a crashed oldest): that goes out at once.
	c.pendingSince = o.Clock.Now()
	c.arm(ctx, DebounceQuiet)
	c.publishPrimaryChange()
}

// publishPrimaryChange publishes at once when the membership elects
// another Primary than the last snapshot named (PrimaryChanged); the
// debounce still runs and publishes the settled view after it.
func (c *stateIncarnation) publishPrimaryChange() {
	if PrimaryChanged(c.sh.o.Membership.Snapshot().Gossip.Members, c.book) {
		c.publish("primary-changed")
	}
}

func (c *stateIncarnation) stop() {
	c.stopped = true
	for _, fn := range c.stops {
		fn()
	}
	c.stops = nil
	if c.timer != nil {
		c.timer.Stop()
	}
}

// arm (re)starts the one-shot debounce timer: its firing is a message
// carrying the timer's generation.
func (c *stateIncarnation) arm(ctx actor.Context, d time.Duration) {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.gen = c.sh.gen.Add(1)
	gen, root, self := c.gen, ctx.ActorSystem().Root, ctx.Self()
	c.timer = c.sh.o.Clock.AfterFunc(d, func() { root.Send(self, stateDebounced{gen: gen}) })
}

func (c *stateIncarnation) debounce(ctx actor.Context) {
	if c.stopped {
		return
	}
	now := c.sh.o.Clock.Now()
	if c.pendingSince.IsZero() {
		c.pendingSince = now
	}
	c.arm(ctx, max(0, DebounceDeadline(c.pendingSince, now, DebounceQuiet, DebounceMax).Sub(now)))
	c.publishPrimaryChange()
	c.sh.kicks.Add(1)
}

// publish builds the snapshot from the current membership and publishes
// it. An empty membership (not joined) publishes nothing.
func (c *stateIncarnation) publish(why string) {
	o := &c.sh.o
	st := o.Membership.Snapshot()
	if st.Gossip.IsEmpty() {
		return
	}
	now := o.Clock.Now()
	before := MergeEpochs(c.book, o.Tracker.Epochs())
	snap, book := BuildSnapshot(st.Gossip.Members, o.Tracker.NodeInfos(), before, now)
	c.book = book
	seq := c.sh.seq.Add(1)
	snap.Publisher, snap.Sequence = st.Self.NodeID(), seq
	for cid, ep := range snap.Epochs {
		if old, ok := before[cid]; !ok || old != ep {
			o.Logger.Info("redundancy Primary changed", "clusterId", cid, "primary", ep.Primary,
				"epoch", ep.Epoch, "previous", old.Primary, "previousEpoch", old.Epoch)
		}
	}
	o.Tracker.ObserveEpochs(book)
	if err := o.PubSub.Publish(wire.Topic, snap.ToWire()); err != nil {
		o.Logger.Error("redundancy snapshot not published", "err", err)
		return
	}
	o.Logger.Debug("redundancy snapshot published", "why", why, "sequence", seq, "entries", len(snap.Entries))
}

// hasNew reports whether now lists a node that before does not.
func hasNew(before, now []membership.UniqueAddress) bool {
	for _, u := range now {
		if !slices.Contains(before, u) {
			return true
		}
	}
	return false
}
