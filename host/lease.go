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
	"github.com/otopcua/otopcua/cluster/lease/keeper"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/redundancy"
)

const (
	// leaseTick is how often the keeper looks at its set and its lease.
	leaseTick = 250 * time.Millisecond
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

// leaseKeeper runs this node's share of lease-majority: it is the cluster
// core's lease (a split-brain decision acquires it), the crash fast path's
// (a refusing peer is downed once it is acquired; a lease the dead peer
// holds is waited out, never taken from it), the lease a node takes
// before it forms a cluster on itself, and the Primary's licence (the RoleView's fence and the publish
// actor's cap). The decisions are keeper.Keeper's; this only runs them: it
// reads the membership and the role view, makes the store calls the core
// asks for and steps their answers back, logs its notes and wakes the
// publish actor when the licence moves. Its timer is the actor
// lease-keeper of the node's tree.
//
// The core is touched only under mu: by the actor's tick, by the goroutine
// that made a store call when it steps the answer, and by the cluster
// core's, the fast path's and the gate's calls on their own goroutines.
// Store calls, logging and the wake-up run outside mu.
type leaseKeeper struct {
	l       lease.Lease
	ttl     time.Duration
	cluster string
	cfg     keeper.Config // Owner is set by bind
	clock   actors.Clock
	log     *slog.Logger

	mu       sync.Mutex
	core     *keeper.Keeper       // nil before bind; mu must be held
	d        leaseMembers         // set by bind; mu must be held to write
	view     *redundancy.RoleView // set by follow; mu must be held to write
	onChange func()               // the publish actor's wake-up; mu must be held
	hint     func(doubt bool)     // setStoreHint's; mu must be held
	downed   bool                 // downSelf ran; mu must be held
	pid      *actor.PID
	unsub    func()
}

// leaseMembers is what the keeper reads of the membership daemon
// (*daemon.Daemon).
type leaseMembers interface {
	Self() membership.UniqueAddress
	Snapshot() membership.State
	Subscribe(fn func(membership.Event)) (membership.State, func())
	LastHeard(u membership.UniqueAddress) (time.Time, bool)
	ProvenDead(u membership.UniqueAddress) bool
	Down(addr membership.Address)
}

var _ leaseMembers = (*daemon.Daemon)(nil)

type leaseTickMsg struct{}

func newLeaseKeeper(l lease.Lease, cfg *config.Config, clock actors.Clock, logger *slog.Logger) *leaseKeeper {
	fd := cfg.Cluster.FailureDetector
	return &leaseKeeper{
		l: l, ttl: l.TTL(), cluster: cfg.Node.ClusterId, clock: clock, log: logger.With("lease", l.Name()),
		cfg: keeper.Config{
			Expected:  1 + len(cfg.OpcUa.PeerApplicationUris),
			Heartbeat: fd.HeartbeatInterval, Pause: fd.AcceptableHeartbeatPause,
			Hold: cfg.Redundancy.PromotionHold, TTL: l.TTL(),
		},
	}
}

// bind gives the keeper its daemon (before any split decision: right
// after the daemon starts); the core starts then, knowing its owner.
func (k *leaseKeeper) bind(d leaseMembers) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.d, k.cfg.Owner = d, d.Self().String()
	k.core = keeper.New(k.cfg, k.clock.Now())
}

// bound reports whether bind and follow ran (the licence is computed only
// then; before, nothing is gated yet).
func (k *leaseKeeper) bound() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.core != nil && k.view != nil
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

// follow gives the keeper the node's role view and steps the downings of
// the set's driver peers into the core (for the promotion hold).
func (k *leaseKeeper) follow(view *redundancy.RoleView) {
	k.mu.Lock()
	k.view = view
	k.mu.Unlock()
	k.run(k.step(keeper.Follow{}))
	_, k.unsub = k.d.Subscribe(func(ev membership.Event) {
		if ev.Kind != membership.MemberDowned || ev.Member.ClusterID != k.cluster || !ev.Member.HasRole(config.RoleDriver) {
			return
		}
		proven := k.d.ProvenDead(ev.Member.Address)
		k.run(k.step(keeper.Downed{Peer: ev.Member.Address.NodeID(), Proven: proven}))
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
	if k.Holder() == k.owner() {
		ctx, cancel := context.WithTimeout(context.Background(), k.ttl/2)
		defer cancel()
		_ = k.l.Release(ctx, k.owner())
	}
}

// setOnChange installs the publish actor's wake-up.
func (k *leaseKeeper) setOnChange(fn func()) {
	k.mu.Lock()
	k.onChange = fn
	k.mu.Unlock()
}

// setStoreHint installs fn, told what the keeper learns of its store:
// doubt true when an acquire got no answer or when the set splits (the
// licence turns Unlicensed: the network changed, the store may be gone
// too), false when the store answered (granted, or held by another). The
// host wires it to the Config DB probe when the lease is on the Config DB.
func (k *leaseKeeper) setStoreHint(fn func(doubt bool)) {
	k.mu.Lock()
	k.hint = fn
	k.mu.Unlock()
}

// storeHint tells the installed hint, if any.
func (k *leaseKeeper) storeHint(doubt bool) {
	k.mu.Lock()
	fn := k.hint
	k.mu.Unlock()
	if fn != nil {
		fn(doubt)
	}
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

// Acquire is the cluster core's split-brain lease (downing.Lease): it
// blocks for the store's answer, at most TTL/2.
func (k *leaseKeeper) Acquire(string) bool { return k.run(k.step(keeper.CoreAcquire{})) }

// Release is the core's release after its release-after: the lease is
// freed once the set is whole again (a lone Primary keeps it).
func (k *leaseKeeper) Release(string) bool {
	k.run(k.step(keeper.CoreRelease{}))
	return true
}

// Holder is the last holder seen.
func (k *leaseKeeper) Holder() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.core == nil {
		return ""
	}
	return k.core.Holder()
}

// fastPath is the crash fast path's lease. A lease the dead member holds
// is not taken from it: a port that refuses may be a firewall's reset in
// front of a live holder, which acts on its lease until it runs out. The
// fast path asks once more a TTL later, when a holder that is really dead
// has stopped renewing and its lease has run out on the store's clock.
func (k *leaseKeeper) fastPath(dead membership.UniqueAddress) bool {
	if k.run(k.step(keeper.FastPath{Dead: dead.String()})) {
		return true
	}
	if k.Holder() != dead.String() {
		return false
	}
	k.log.Info("crash fast path: the member whose port refuses holds the lease; asking again once it has run out",
		"member", dead.NodeID(), "after", k.ttl.String())
	<-k.clock.After(k.ttl)
	return k.run(k.step(keeper.FastPath{Dead: dead.String()}))
}

// forming is the lease a node takes before it forms a cluster on itself:
// refused while another node of the set holds it (that node runs behind a
// partition; a second cluster of the ClusterId would never merge with its
// own) or while the store does not answer.
func (k *leaseKeeper) forming() bool {
	return k.run(k.step(keeper.Forming{}))
}

// licence is the Primary's licence now (gate.LicenceOf), on a fresh
// observation (which may start the promotion hold).
func (k *leaseKeeper) licence() gate.Licence {
	if !k.bound() {
		return gate.Licensed
	}
	obs := k.observe()
	k.mu.Lock()
	now := k.clock.Now()
	effs := k.core.Step(now, keeper.Observed{Observation: obs})
	l := k.core.Licence(now)
	k.mu.Unlock()
	k.run(effs)
	return l
}

// tick feeds the core its timer with what the node sees now.
func (k *leaseKeeper) tick() {
	if !k.bound() {
		return
	}
	obs := k.observe()
	k.mu.Lock()
	effs := k.core.Tick(k.clock.Now(), obs)
	k.mu.Unlock()
	k.run(effs)
}

// busy reports whether one of the keeper's own store calls is running.
func (k *leaseKeeper) busy() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.core != nil && k.core.Busy()
}

// step hands msg to the core at the clock's now.
func (k *leaseKeeper) step(msg keeper.Message) []keeper.Effect {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.core == nil {
		return nil
	}
	return k.core.Step(k.clock.Now(), msg)
}

func (k *leaseKeeper) owner() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cfg.Owner
}

// observe reads what the core decides on: this node's role and, from one
// membership snapshot, the driver members of the ClusterId.
func (k *leaseKeeper) observe() keeper.Observation {
	st := k.d.Snapshot()
	obs := keeper.Observation{Primary: k.view.Role() == redundancy.RolePrimary}
	for _, m := range st.Gossip.Members {
		ours := m.ClusterID == k.cluster && m.HasRole(config.RoleDriver)
		driver := ours && m.Status == membership.Up
		if m.Address == st.Self {
			obs.Self = driver
			continue
		}
		leaving := ours && (m.Status == membership.Leaving || m.Status == membership.Exiting)
		down := ours && m.Status == membership.Down
		p := keeper.Peer{ID: m.Address.NodeID(), Member: driver, Leaving: leaving, Down: down}
		if down {
			p.Proven = k.d.ProvenDead(m.Address)
		}
		if driver || leaving {
			p.Reachable = st.Gossip.Reachability.StatusFrom(st.Self, m.Address) == membership.Reachable
			p.LastHeard, p.Heard = k.d.LastHeard(m.Address)
		}
		obs.Peers = append(obs.Peers, p)
	}
	return obs
}

// run carries out the core's effects in order. The keeper's own store
// calls run on goroutines; an acquire for the cluster core or the fast
// path runs here, for its waiting caller, and granted reports its answer.
func (k *leaseKeeper) run(effs []keeper.Effect) (granted bool) {
	for _, e := range effs {
		switch e := e.(type) {
		case keeper.Acquire:
			if e.Purpose.Background() {
				go func() { k.run(k.step(k.acquire(e))) }()
				continue
			}
			r := k.acquire(e)
			granted = r.Outcome == keeper.Granted
			k.run(k.step(r))
		case keeper.Release:
			go func() { k.run(k.step(k.release())) }()
		case keeper.DownSelf:
			k.downSelf(e.Holder)
		case keeper.LicenceChanged:
			k.log.Info("Primary licence", "licence", e.Licence.String())
			k.mu.Lock()
			fn := k.onChange
			k.mu.Unlock()
			if fn != nil {
				fn()
			}
			if e.Licence == gate.Unlicensed {
				k.storeHint(true)
			}
		case keeper.Note:
			k.note(e)
			if e.Kind == keeper.NoteHold {
				// Look again the moment the hold ends, not at the next
				// 250 ms tick: the 250 waits for nothing else.
				k.clock.AfterFunc(e.For, k.tick)
			}
		}
	}
	return granted
}

// downSelf downs this node, once: another node of its set took the lease
// it held while the set is split, so the other side decides and this
// node, cut off from it and unlicensed, would stay fenced for good. The
// membership ends, the process exits with the restart code and the new
// incarnation joins the side that holds the lease.
func (k *leaseKeeper) downSelf(holder string) {
	k.mu.Lock()
	done := k.downed
	k.downed = true
	d := k.d
	k.mu.Unlock()
	if done || d == nil {
		return
	}
	k.log.Error("lease lost to another node while this node's set is split: downing this node so that it restarts and rejoins the side that holds the lease",
		"holder", holder)
	d.Down(d.Self().Address())
}

// acquire makes an acquire call on the store, bounded to TTL/2.
func (k *leaseKeeper) acquire(e keeper.Acquire) keeper.AcquireResult {
	r := keeper.AcquireResult{Purpose: e.Purpose, Start: e.Start}
	ctx, cancel := context.WithTimeout(context.Background(), k.ttl/2)
	defer cancel()
	g, err := k.l.Acquire(ctx, k.owner())
	var held *lease.HeldError
	switch {
	case err == nil:
		r.Outcome, r.Holder, r.Epoch = keeper.Granted, g.Holder, g.Epoch
	case errors.As(err, &held):
		r.Outcome, r.Holder, r.Epoch = keeper.Held, held.Holder, held.Epoch
	default:
		r.Outcome, r.Err = keeper.Failed, err.Error()
	}
	k.storeHint(r.Outcome == keeper.Failed)
	return r
}

// release frees the lease on the store, bounded to TTL/2.
func (k *leaseKeeper) release() keeper.ReleaseResult {
	ctx, cancel := context.WithTimeout(context.Background(), k.ttl/2)
	defer cancel()
	return keeper.ReleaseResult{OK: k.l.Release(ctx, k.owner()) == nil}
}

// note logs one of the core's notes.
func (k *leaseKeeper) note(n keeper.Note) {
	switch n.Kind {
	case keeper.NoteAcquired:
		k.log.Info("lease acquired", "owner", k.owner(), "epoch", n.Epoch)
	case keeper.NoteLost:
		k.log.Warn("lease lost to another node", "holder", n.Peer, "epoch", n.Epoch)
	case keeper.NoteStoreSilent:
		k.log.Warn("lease store did not answer", "err", n.Err)
	case keeper.NoteReleased:
		k.log.Info("lease released: the set is whole again")
	case keeper.NoteWoken:
		k.log.Warn("lease keeper: this process did not run for longer than the heartbeat pause (frozen?); the Primary acts only with the lease until a pause has passed",
			"gap", n.For.String())
	case keeper.NoteHold:
		k.log.Warn("promotion hold: Primary after the downing of a peer that may still be alive",
			"peer", n.Peer, "hold", n.For.String())
	default:
		k.log.Info(n.String())
	}
}
