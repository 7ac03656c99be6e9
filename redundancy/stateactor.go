package redundancy

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

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

// StateActor is the RedundancyStateActor: the admin singleton that turns
// membership into RedundancyStateChanged snapshots. It subscribes to
// membership events, publishes DebounceQuiet after the last one (at most
// DebounceMax after the first), republishes every RepublishEvery, and keeps
// one ownership epoch per ClusterId (see NextEpoch and Tracker).
//
// It is a singleton Instance: Start and Stop are called by the singleton
// manager, Start once, Stop once after it.
type StateActor struct {
	o      StateActorOptions
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	// kicks counts the membership and NodeStatus wake-ups handled, so that
	// tests can wait for one before they move the clock.
	kicks atomic.Uint64

	// Owned by the run goroutine.
	book EpochBook
	seq  uint64
}

// NewStateActor returns a stopped actor.
func NewStateActor(o StateActorOptions) *StateActor {
	if o.Membership == nil || o.PubSub == nil || o.Tracker == nil {
		panic("redundancy: StateActorOptions needs Membership, PubSub and Tracker")
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &StateActor{o: o, done: make(chan struct{}), book: EpochBook{}}
}

// Start runs the actor until Stop or ctx ends. Its first snapshot goes out
// DebounceQuiet after Start.
func (a *StateActor) Start(ctx context.Context) {
	ctx, a.cancel = context.WithCancel(ctx)
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	_, unsubscribe := a.o.Membership.Subscribe(func(membership.Event) { poke() })
	unwatch := a.o.Tracker.Watch(poke)
	a.o.Logger.Info("redundancy state singleton started", "self", a.o.Membership.Self().NodeID(),
		"seedEpochs", len(a.o.Tracker.Epochs()))
	go func() {
		defer close(a.done)
		defer unsubscribe()
		defer unwatch()
		a.run(ctx, kick)
	}()
}

// Stop ends the actor and waits for it. No snapshot is published after
// Stop returns.
func (a *StateActor) Stop() {
	a.once.Do(func() {
		if a.cancel == nil {
			close(a.done)
			return
		}
		a.cancel()
		<-a.done
		a.o.Logger.Info("redundancy state singleton stopped")
	})
}

func (a *StateActor) run(ctx context.Context, kick <-chan struct{}) {
	clock := a.o.Clock
	republish := clock.NewTicker(RepublishEvery)
	defer republish.Stop()
	var poll <-chan time.Time
	var subscribers []membership.UniqueAddress
	if a.o.Subscribers != nil {
		t := clock.NewTicker(SubscriberPoll)
		defer t.Stop()
		poll = t.Chan()
		subscribers = a.o.Subscribers()
	}
	// Start counts as a membership event: the first snapshot waits for
	// the quiet period like any other.
	pendingSince := clock.Now()
	timer := clock.NewTimer(DebounceQuiet)
	defer timer.Stop()
	debounce := func() {
		now := clock.Now()
		if pendingSince.IsZero() {
			pendingSince = now
		}
		timer.Reset(max(0, DebounceDeadline(pendingSince, now, DebounceQuiet, DebounceMax).Sub(now)))
		a.kicks.Add(1)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
			debounce()
		case <-poll:
			now := a.o.Subscribers()
			if hasNew(subscribers, now) {
				debounce()
			}
			subscribers = now
		case <-timer.Chan():
			pendingSince = time.Time{}
			a.publish("change")
		case <-republish.Chan():
			a.publish("heartbeat")
		}
	}
}

// publish builds the snapshot from the current membership and publishes
// it. An empty membership (not joined) publishes nothing.
func (a *StateActor) publish(why string) {
	st := a.o.Membership.Snapshot()
	if st.Gossip.IsEmpty() {
		return
	}
	now := a.o.Clock.Now()
	before := MergeEpochs(a.book, a.o.Tracker.Epochs())
	snap, book := BuildSnapshot(st.Gossip.Members, a.o.Tracker.NodeInfos(), before, now)
	a.book = book
	a.seq++
	snap.Publisher, snap.Sequence = st.Self.NodeID(), a.seq
	for cid, ep := range snap.Epochs {
		if old, ok := before[cid]; !ok || old != ep {
			a.o.Logger.Info("redundancy Primary changed", "clusterId", cid, "primary", ep.Primary,
				"epoch", ep.Epoch, "previous", old.Primary, "previousEpoch", old.Epoch)
		}
	}
	a.o.Tracker.ObserveEpochs(book)
	if err := a.o.PubSub.Publish(wire.Topic, snap.ToWire()); err != nil {
		a.o.Logger.Error("redundancy snapshot not published", "err", err)
		return
	}
	a.o.Logger.Debug("redundancy snapshot published", "why", why, "sequence", a.seq, "entries", len(snap.Entries))
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
