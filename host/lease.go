package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/cluster/lease"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/redundancy"
)

// Lease keeper timings.
const (
	// leaseTick is how often the keeper looks at its set and its lease.
	leaseTick = 250 * time.Millisecond
	// downedMemory is how long a downing of a driver peer counts for the
	// promotion hold of the node that becomes Primary after it.
	downedMemory = 30 * time.Second
	// LeaseKeeperName is the keeper's actor.
	LeaseKeeperName = "lease-keeper"
)

// openLease builds Cluster:Lease's store for the ClusterId.
func openLease(cfg *config.Config, db *configdb.DB) (lease.Lease, error) {
	l := cfg.Cluster.Lease
	switch l.Provider {
	case config.LeaseConfigDb:
		return lease.NewConfigDB(db, cfg.Node.ClusterId, l.Ttl)
	case config.LeaseEtcd:
		return lease.NewEtcd(l.Endpoints, cfg.Node.ClusterId, l.Ttl, &http.Client{Timeout: l.Ttl / 2})
	}
	return nil, fmt.Errorf("Cluster:Lease:Provider %q: accepted values are %s", l.Provider, config.LeaseProviders)
}

// leaseKeeper holds this node's share of lease-majority: it is the
// cluster core's lease (a split-brain decision acquires it), the crash
// fast path's (a refusing peer is downed once it is acquired, evicting
// the dead holder), and the Primary's licence (gate.LicenceOf): while its
// set is not whole the Primary acts only holding the lease, renewed every
// TTL/3; a node that becomes Primary after a peer that may still be alive
// was downed waits out Redundancy:PromotionHold. Its timer is the actor
// lease-keeper of the node's tree; the store calls run on goroutines.
type leaseKeeper struct {
	l        lease.Lease
	d        leaseMembers
	view     *redundancy.RoleView
	owner    string
	cluster  string
	expected int           // nodes of the set: this one and OpcUa:PeerApplicationUris
	pause    time.Duration // Cluster:FailureDetector:AcceptableHeartbeatPause
	// suspectAfter is the silence after which the keeper takes the lease
	// for its Primary: a heartbeat interval plus a quarter of the pause,
	// so that the ordinary gap between two heartbeats never looks like a
	// split (taking and freeing the lease between heartbeats left it held
	// at the moment a Primary froze, and the survivor could not take it).
	suspectAfter time.Duration
	hold         time.Duration
	ttl          time.Duration
	clock        actors.Clock
	log          *slog.Logger

	mu         sync.Mutex
	onChange   func()                // a licence change: the publish actor recomputes; mu must be held to read or write
	validUntil time.Time             // on this node's clock: request start + TTL − TTL/6; mu must be held
	holder     string                // last known holder; mu must be held
	renewedAt  time.Time             // start of the last acquire or renewal; mu must be held
	busy       bool                  // a store call runs; mu must be held
	wantFree   bool                  // the core released: free it once the set is whole; mu must be held
	holdUntil  time.Time             // promotion hold; mu must be held
	wasPrimary bool                  // mu must be held
	downed     map[string]downedPeer // by NodeId; mu must be held
	last       gate.Licence          // mu must be held
	lastTick   time.Time             // start of the last tick (or follow); mu must be held
	suspectTil time.Time             // after a stall (frozen process): not whole before this; mu must be held
	pid        *actor.PID
	unsub      func()
}

// leaseMembers is what the keeper reads of the membership daemon
// (*daemon.Daemon).
type leaseMembers interface {
	Self() membership.UniqueAddress
	Snapshot() membership.State
	Subscribe(fn func(membership.Event)) (membership.State, func())
	LastHeard(u membership.UniqueAddress) (time.Time, bool)
	ProvenDead(u membership.UniqueAddress) bool
}

var _ leaseMembers = (*daemon.Daemon)(nil)

type downedPeer struct {
	at     time.Time
	proven bool // the crash fast path found its port refusing
}

type leaseTickMsg struct{}

func newLeaseKeeper(l lease.Lease, cfg *config.Config, clock actors.Clock, logger *slog.Logger) *leaseKeeper {
	return &leaseKeeper{
		l: l, cluster: cfg.Node.ClusterId,
		expected: 1 + len(cfg.OpcUa.PeerApplicationUris), pause: cfg.Cluster.FailureDetector.AcceptableHeartbeatPause,
		suspectAfter: cfg.Cluster.FailureDetector.HeartbeatInterval + cfg.Cluster.FailureDetector.AcceptableHeartbeatPause/4,
		hold:         cfg.Redundancy.PromotionHold, ttl: l.TTL(), clock: clock, log: logger.With("lease", l.Name()),
		downed: map[string]downedPeer{}, last: gate.Licensed,
	}
}

// bind gives the keeper its daemon (before any split decision: right
// after the daemon starts).
func (k *leaseKeeper) bind(d leaseMembers) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.d, k.owner = d, d.Self().String()
}

// bound reports whether bind and start ran (the licence is computed only
// then; before, nothing is gated yet).
func (k *leaseKeeper) bound() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.d != nil && k.view != nil
}

// start spawns the keeper's actor and follows the membership; view is the
// node's role view.
func (k *leaseKeeper) start(tree *actors.Tree, view *redundancy.RoleView) error {
	k.follow(view)
	pid, err := tree.Spawn(tree.Props("LeaseKeeper", func() actor.Actor { return &leaseKeeperActor{k: k} }), LeaseKeeperName)
	if err != nil {
		k.unsub()
		return err
	}
	k.pid = pid
	return nil
}

// follow gives the keeper the node's role view and records the downings
// of the set's driver peers (for the promotion hold).
func (k *leaseKeeper) follow(view *redundancy.RoleView) {
	k.mu.Lock()
	k.view = view
	k.lastTick = k.clock.Now()
	k.mu.Unlock()
	_, k.unsub = k.d.Subscribe(func(ev membership.Event) {
		if ev.Kind != membership.MemberDowned || ev.Member.ClusterID != k.cluster || !ev.Member.HasRole(config.RoleDriver) {
			return
		}
		k.mu.Lock()
		k.downed[ev.Member.Address.NodeID()] = downedPeer{at: k.clock.Now(), proven: k.d.ProvenDead(ev.Member.Address)}
		k.mu.Unlock()
	})
}

// stop releases a held lease (a graceful stop hands the decision back).
func (k *leaseKeeper) stop(tree *actors.Tree) {
	if k.unsub != nil {
		k.unsub()
	}
	if k.pid != nil {
		_ = tree.Root().StopFuture(k.pid).Wait()
	}
	k.mu.Lock()
	held := k.holder == k.owner
	k.mu.Unlock()
	if held {
		ctx, cancel := context.WithTimeout(context.Background(), k.ttl/2)
		defer cancel()
		_ = k.l.Release(ctx, k.owner)
	}
}

// setOnChange installs the publish actor's wake-up.
func (k *leaseKeeper) setOnChange(fn func()) {
	k.mu.Lock()
	k.onChange = fn
	k.mu.Unlock()
}

type leaseKeeperActor struct {
	k    *leaseKeeper
	stop func()
}

func (a *leaseKeeperActor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		a.stop = actors.Every(c.ActorSystem().Root, a.k.clock, c.Self(), leaseTick, leaseTickMsg{})
	case *actor.Stopping, *actor.Restarting:
		if a.stop != nil {
			a.stop()
		}
	case leaseTickMsg:
		a.k.tick()
	}
}

// acquire takes or renews the lease, evicting evict; it blocks at most
// TTL/2 and reports whether this node holds the lease.
func (k *leaseKeeper) acquire(evict ...string) bool {
	k.mu.Lock()
	owner := k.owner
	k.mu.Unlock()
	if owner == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.ttl/2)
	defer cancel()
	start := k.clock.Now()
	g, err := k.l.Acquire(ctx, k.owner, evict...)
	k.mu.Lock()
	defer k.mu.Unlock()
	var held *lease.HeldError
	switch {
	case err == nil:
		if k.holder != k.owner {
			k.log.Info("lease acquired", "owner", k.owner, "epoch", g.Epoch, "evicted", evict)
		}
		k.holder, k.renewedAt = k.owner, start
		k.validUntil = start.Add(k.ttl - k.ttl/6)
		return true
	case errors.As(err, &held):
		if k.holder == k.owner {
			k.log.Warn("lease lost to another node", "holder", held.Holder, "epoch", held.Epoch)
		}
		k.holder, k.validUntil = held.Holder, time.Time{}
	default:
		k.log.Warn("lease store did not answer", "err", err)
	}
	return false
}

// Acquire is the cluster core's split-brain lease (downing.Lease).
func (k *leaseKeeper) Acquire(string) bool {
	ok := k.acquire()
	if ok {
		k.mu.Lock()
		k.wantFree = false
		k.mu.Unlock()
	}
	k.changed()
	return ok
}

// Release is the core's release after its release-after: the lease is
// freed once the set is whole again (a lone Primary keeps it).
func (k *leaseKeeper) Release(string) bool {
	k.mu.Lock()
	k.wantFree = true
	k.mu.Unlock()
	return true
}

// Holder is the last holder seen.
func (k *leaseKeeper) Holder() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.holder
}

// fastPath is the crash fast path's lease: take it, evicting the dead
// member if it held it.
func (k *leaseKeeper) fastPath(dead membership.UniqueAddress) bool {
	ok := k.acquire(dead.String())
	k.changed()
	return ok
}

// whole reports whether every node of the set is an Up, reachable driver
// member of the ClusterId heard from within the acceptable pause.
func (k *leaseKeeper) whole(now time.Time) bool { return k.wholeWithin(now, k.pause) }

// wholeWithin is whole with another silence bound: the keeper takes the
// lease for its Primary when a peer has been silent for a heartbeat plus a quarter of the
// pause, so the lease is held before the set stops being whole and the
// Primary's licence never lapses on a split it wins.
func (k *leaseKeeper) wholeWithin(now time.Time, pause time.Duration) bool {
	n, ok := k.side(now, pause)
	return ok && n >= k.expected
}

// side counts the nodes of the set on this node's side — itself and the Up
// driver peers it holds reachable and heard from within pause; ok is false
// while it cannot tell (see the stall below).
func (k *leaseKeeper) side(now time.Time, pause time.Duration) (n int, ok bool) {
	k.mu.Lock()
	stalled := now.Sub(k.lastTick) > k.pause || now.Before(k.suspectTil)
	k.mu.Unlock()
	if stalled {
		// This process did not run for a pause (SIGSTOP, a VM freeze) or
		// has just woken from it: what it hears now may have waited in its
		// sockets through the freeze, so it cannot tell whether its peers
		// still count it. Until a pause has passed awake, only the lease
		// licenses it.
		return 1, false
	}
	st := k.d.Snapshot()
	for _, m := range st.Gossip.Members {
		if m.ClusterID != k.cluster || !m.HasRole(config.RoleDriver) || m.Status != membership.Up {
			continue
		}
		if m.Address != st.Self {
			if st.Gossip.Reachability.StatusFrom(st.Self, m.Address) != membership.Reachable {
				continue
			}
			if at, ok := k.d.LastHeard(m.Address); !ok || now.Sub(at) > pause {
				continue
			}
		}
		n++
	}
	return n, true
}

// licence is the Primary's licence now (gate.LicenceOf); it also starts
// the promotion hold when this node has just become Primary after the
// downing of a peer that may be alive.
func (k *leaseKeeper) licence() gate.Licence {
	if !k.bound() {
		return gate.Licensed
	}
	now := k.clock.Now()
	whole := k.whole(now)
	primary := k.view.Role() == redundancy.RolePrimary
	k.mu.Lock()
	defer k.mu.Unlock()
	if primary && !k.wasPrimary {
		for id, p := range k.downed {
			if !p.proven && now.Sub(p.at) < downedMemory && k.hold > 0 {
				k.holdUntil = now.Add(k.hold)
				k.log.Warn("promotion hold: Primary after the downing of a peer that may still be alive",
					"peer", id, "hold", k.hold.String())
				break
			}
		}
	}
	k.wasPrimary = primary
	return gate.LicenceOf(gate.LicenceInput{
		LeaseMajority: true, Whole: whole,
		LeaseValid: k.holder == k.owner && now.Before(k.validUntil),
		HoldLeft:   k.holdUntil.Sub(now),
	})
}

// licensed is the RoleView's fence.
func (k *leaseKeeper) licensed() bool { return k.licence() == gate.Licensed }

// changed wakes the publish actor when the licence moved.
func (k *leaseKeeper) changed() {
	l := k.licence()
	k.mu.Lock()
	moved := l != k.last
	k.last = l
	fn := k.onChange
	k.mu.Unlock()
	if moved {
		k.log.Info("Primary licence", "licence", l.String())
		if fn != nil {
			fn()
		}
	}
}

// tick renews a held lease, takes it for a Primary whose set is split,
// frees it once the set is whole and the core released it, and reports a
// licence change.
func (k *leaseKeeper) tick() {
	if !k.bound() {
		return
	}
	now := k.clock.Now()
	k.mu.Lock()
	if gap := now.Sub(k.lastTick); gap > k.pause {
		k.suspectTil = now.Add(k.pause)
		k.log.Warn("lease keeper: this process did not run for longer than the heartbeat pause (frozen?); the Primary acts only with the lease until a pause has passed",
			"gap", gap.String())
	}
	k.lastTick = now
	k.mu.Unlock()
	mySide, known := k.side(now, k.suspectAfter)
	suspect := !known || mySide < k.expected
	// The keeper takes the lease ahead of the split-brain decision only
	// for a side that cannot be a minority (a pair's lone Primary, half or
	// more of a larger set): a Primary cut off in the minority of three
	// or more leaves the lease to the majority's decision.
	notMinority := mySide*2 >= k.expected
	primary := k.view.Role() == redundancy.RolePrimary
	k.mu.Lock()
	mine := k.holder == k.owner && now.Before(k.validUntil.Add(k.ttl/6))
	var call func()
	switch {
	case k.busy:
	case mine && !suspect && k.wantFree:
		// Free only once every peer is heard again within a heartbeat plus a quarter of the
		// pause: freeing while one is still suspect would be taken back at
		// once, and could lapse the licence when the set stops being whole.
		call = func() {
			ctx, cancel := context.WithTimeout(context.Background(), k.ttl/2)
			defer cancel()
			if err := k.l.Release(ctx, k.owner); err == nil {
				k.mu.Lock()
				k.holder, k.validUntil, k.wantFree = "", time.Time{}, false
				k.mu.Unlock()
				k.log.Info("lease released: the set is whole again")
			}
		}
	case mine && now.Sub(k.renewedAt) >= k.ttl/3:
		call = func() { k.acquire() }
	case !mine && primary && suspect && notMinority && now.Sub(k.renewedAt) >= 500*time.Millisecond:
		k.renewedAt = now // paces the attempts
		call = func() {
			if k.acquire() { // its own: freed again once the set is whole
				k.mu.Lock()
				k.wantFree = true
				k.mu.Unlock()
			}
		}
	}
	if call != nil {
		k.busy = true
	}
	for id, p := range k.downed {
		if now.Sub(p.at) >= downedMemory {
			delete(k.downed, id)
		}
	}
	k.mu.Unlock()
	if call != nil {
		go func() {
			call()
			k.mu.Lock()
			k.busy = false
			k.mu.Unlock()
			k.changed()
		}()
	}
	k.changed()
}
