package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/downing"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/wire"
)

// Defaults of Options.
const (
	DefaultTickInterval   = 100 * time.Millisecond
	DefaultExitingTimeout = 10 * time.Second
	DefaultLinger         = 500 * time.Millisecond
	// SeedProbeTimeout bounds each TCP probe of the self-form fallback.
	SeedProbeTimeout = time.Second
)

// Options configure a Daemon.
type Options struct {
	// Node is the membership core's configuration; Node.Self.UID must be
	// this process's fresh uid (NewUID). Node.CrashFastPath switches the
	// whole crash fast path (Cluster:DownOnConnectionRefused): probes on a
	// broken connection or a detector suspicion, the core's immediate
	// unreachable mark, and the leader's immediate Down.
	Node node.Config
	// System hosts the daemon actor, named Name. Required.
	System *actors.System
	// Transport carries messages to peers. Default: NewRemoteTransport
	// over System with the dial gate.
	Transport Transport
	// Prober makes the fast path's and the self-form fallback's TCP
	// probes. Default TCPProber{}.
	Prober Prober
	// Clock drives ticks and every membership timer. Default: wall clock.
	Clock actors.Clock
	// Logger receives the operator log lines (see the Log constants).
	// Default: discard.
	Logger *slog.Logger
	// Lease is the split-brain lease of lease-majority. Default: an
	// in-memory lease private to this process (tests; the host refuses
	// lease-majority without a shared one).
	Lease downing.Lease
	// FastPathLease, when set, is asked (on a goroutine of its own)
	// before the crash fast path downs a member whose port refuses
	// connections: the member is downed only when it returns true — under
	// lease-majority, once this side holds the shared lease (a lease the
	// dead member holds is waited out, never taken from it).
	FastPathLease func(dead membership.UniqueAddress) bool
	// FormingLease, when set, is asked (on a goroutine of its own) under
	// lease-majority before this node forms a cluster on itself while a
	// seed is silent: it forms only when it returns true. Default: Lease.
	FormingLease func() bool
	// ExitingTasks run when this node is Exiting (a graceful leave), in
	// order, before the node confirms its exit: singleton hand-over and
	// the like. Each gets a context cancelled after ExitingTimeout.
	ExitingTasks []func(context.Context) error
	// ExitingTimeout bounds all ExitingTasks together. Default 10 s.
	ExitingTimeout time.Duration
	// TickInterval is how often the core's Tick runs. Default 100 ms.
	TickInterval time.Duration
	// Secret is Cluster:Secret. When set, every join handshake message
	// this node sends carries an HMAC-SHA256 proof of it (package wire,
	// Prove), a received one without the right proof is refused (logged,
	// and answered with JoinRefused), and other messages are accepted
	// only from members. Default "": no check, as before.
	Secret string
	// Linger is how long the daemon waits after its node stopped before it
	// reports Done, so that the last gossip and exit confirmations leave
	// the send queues. Default 500 ms; negative means none.
	Linger time.Duration
	// Protocol is what this node says of the cluster protocol in every
	// join handshake message it sends, and what it checks a peer's
	// against (wire.Generations.Accepts): a handshake message from a node
	// it does not work with is refused, logged with both generations, and
	// answered with a JoinRefused naming this node's. Default
	// wire.Current; tests set another to play a node of another release.
	Protocol wire.Generations
}

func (o *Options) defaults() error {
	if o.System == nil {
		return errors.New("daemon: Options.System is required")
	}
	if o.Node.Self.UID == 0 {
		return errors.New("daemon: Options.Node.Self needs a uid (NewUID)")
	}
	if err := o.Node.Validate(); err != nil {
		return err
	}
	if o.Protocol == (wire.Generations{}) {
		o.Protocol = wire.Current
	}
	if o.Protocol.Oldest == 0 || o.Protocol.Oldest > o.Protocol.Speaks {
		return fmt.Errorf("daemon: Options.Protocol %v: the oldest generation must be 1 to the generation spoken", o.Protocol)
	}
	if o.Transport == nil {
		o.Transport = NewRemoteTransport(o.System, nil)
	}
	if o.Prober == nil {
		o.Prober = TCPProber{}
	}
	if o.Clock == nil {
		o.Clock = actors.RealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Lease == nil {
		o.Lease = &downing.MemLease{}
	}
	if o.ExitingTimeout <= 0 {
		o.ExitingTimeout = DefaultExitingTimeout
	}
	if o.TickInterval <= 0 {
		o.TickInterval = DefaultTickInterval
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	return nil
}

// Result says how a daemon's node stopped.
type Result struct {
	// Reason the node stopped: ReasonDowned, ReasonLeft or ReasonRemoved;
	// 0 when the daemon crashed or was stopped with Stop first.
	Reason node.ShutdownReason
	// LeaveRequested: Leave was called before the node stopped.
	LeaveRequested bool
	// Err is set when the daemon crashed (a broken invariant in the core).
	Err error
}

// Stats counts what the daemon received and refused.
type Stats struct {
	// Received cluster messages, refused ones included.
	Received uint64
	// Invalid: not a valid cluster message (wire.ErrInvalid).
	Invalid uint64
	// WrongIncarnation: addressed to another uid at this address — a
	// message queued for an earlier process here, delivered late.
	WrongIncarnation uint64
	// Misaddressed: addressed to another host:port.
	Misaddressed uint64
	// Quarantined: sent by an incarnation that was removed from the
	// cluster.
	Quarantined uint64
	// UnknownSender: a Leave or Down from a node that is not a member, or,
	// with a Cluster:Secret, any message other than the join handshake
	// from a node that is not a member.
	UnknownSender uint64
	// RefusedJoin: a join handshake message (InitJoin, InitJoinAck,
	// InitJoinNack, Join, Welcome) without the proof of this node's
	// Cluster:Secret.
	RefusedJoin uint64
	// RefusedProtocol: a join handshake message from a node whose
	// protocol generation this node does not work with (Options.Protocol).
	RefusedProtocol uint64
	// Transport is the transport's own count.
	Transport TransportStats
}

type counters struct {
	received, invalid, wrongIncarnation, misaddressed, quarantined, unknownSender, refusedJoin, refusedProtocol atomic.Uint64
}

// Daemon runs one node's membership: a protoactor actor named Name that
// owns a node.Node, ticks it, steps every received message into it and
// carries out its effects. Its methods are safe for concurrent use.
type Daemon struct {
	opts  Options
	self  membership.UniqueAddress
	root  *actor.RootContext
	pid   *actor.PID
	hub   *hub
	stats counters

	cancel   context.CancelFunc // stops probes and exiting tasks
	ctx      context.Context
	stopTick chan struct{}
	stopOnce sync.Once

	done     chan struct{}
	doneOnce sync.Once
	result   atomic.Pointer[Result]
	epoch    time.Time    // Instant 0 on the clock
	lastTick atomic.Int64 // Instant of the last processed tick

	heard sync.Map // membership.UniqueAddress → time.Time of the last gossip from it this node caught up with
}

// LastHeard is when this node last caught up with u's view of the cluster,
// on the daemon's clock: it merged a full gossip from u, or u's gossip
// status showed a version this node already has. ok is false when never.
// A heartbeat does not count: a process woken from a freeze hears its
// peers' heartbeats before it has merged what they decided meanwhile (that
// it was downed, say), and the woken-process fences lift on LastHeard.
// A process that was frozen sees at once, on waking, that its peers went
// silent.
func (d *Daemon) LastHeard(u membership.UniqueAddress) (at time.Time, ok bool) {
	v, ok := d.heard.Load(u)
	if !ok {
		return time.Time{}, false
	}
	return v.(time.Time), true
}

// ProvenDead reports whether the crash fast path found u's cluster port
// refusing connections: the process is gone, not silent (the core's
// node.Node.ProvenDead, as of the last published state; a subscriber that
// gets u's MemberDowned sees the record of the state that downed it).
func (d *Daemon) ProvenDead(u membership.UniqueAddress) bool { return d.hub.provenDead(u) }

// Start spawns the daemon actor, which starts joining at once (seed join,
// self-join as the only or first seed, self-form fallback), and starts the
// tick loop.
func Start(o Options) (*Daemon, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{
		opts:     o,
		self:     o.Node.Self,
		root:     o.System.Root(),
		hub:      newHub(o.Node.Self),
		ctx:      ctx,
		cancel:   cancel,
		stopTick: make(chan struct{}),
		done:     make(chan struct{}),
		epoch:    o.Clock.Now(),
	}
	d.pid = o.System.Actor.NewLocalPID(Name)
	o.Transport.Bind(d.self.Address(), inboxFor(d.root, d.pid), func(peer membership.Address) {
		d.root.Send(d.pid, connLost{peer: peer})
	})
	a := newActor(d)
	props := actor.PropsFromProducer(func() actor.Actor { return a }, actor.WithGuardian(actors.StopOnFailure()),
		actor.WithMailbox(actors.RemoteMailbox())) // peers send to it while it spawns
	// d.pid stays the NewLocalPID above (the same PID SpawnNamed returns):
	// the transport's callbacks may already be reading it.
	if _, err := d.root.SpawnNamed(props, Name); err != nil {
		cancel()
		o.Transport.Close()
		d.hub.stop()
		return nil, fmt.Errorf("daemon: spawn %s: %w", Name, err)
	}
	o.Logger.Info("cluster starting", "self", d.self.NodeID(), "uid", uidText(d.self), "seeds", addrs(o.Node.Seeds),
		"roles", o.Node.Roles, "clusterId", o.Node.ClusterID, "strategy", o.Node.Downing.Strategy,
		"selfFormAfterMs", o.Node.SelfFormAfter, "crashFastPath", o.Node.CrashFastPath)
	go d.tickLoop(o.Clock.NewTicker(o.TickInterval))
	return d, nil
}

func addrs(as []membership.Address) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}

func (d *Daemon) tickLoop(t clockwork.Ticker) {
	defer t.Stop()
	for {
		select {
		case <-t.Chan():
			d.root.Send(d.pid, tickMsg{})
		case <-d.stopTick:
			return
		}
	}
}

// Self is this node's unique address.
func (d *Daemon) Self() membership.UniqueAddress { return d.self }

// PID is the daemon actor.
func (d *Daemon) PID() *actor.PID { return d.pid }

// Snapshot returns the current membership view (empty gossip before the
// node joined). It never blocks on the actor.
func (d *Daemon) Snapshot() membership.State {
	st, _ := d.hub.snapshot()
	return st
}

// Info returns the node's phase and, once it stopped, its Result.
func (d *Daemon) Info() Info {
	_, info := d.hub.snapshot()
	return info
}

// Subscribe registers fn for every membership event published after the
// returned state, and returns that state and a function that cancels the
// subscription. fn is called on the daemon's event goroutine, one event at
// a time in publish order, never concurrently with itself or another
// subscriber; it must not block: a slow subscriber delays every later
// event to every subscriber (hand long work to a goroutine or an actor).
func (d *Daemon) Subscribe(fn func(membership.Event)) (membership.State, func()) {
	return d.hub.subscribe(fn)
}

// Leave asks this node to leave the cluster gracefully (Leave → Exiting →
// Removed); Done is closed once it has. A node that is not a member yet
// stops at once.
func (d *Daemon) Leave() { d.root.Send(d.pid, leaveCmd{}) }

// Down marks the member at addr Down (Cluster.Down).
func (d *Daemon) Down(addr membership.Address) { d.root.Send(d.pid, downCmd{addr}) }

// JoinTo joins the cluster of the node at addr instead of the seeds.
func (d *Daemon) JoinTo(addr membership.Address) { d.root.Send(d.pid, joinCmd{addr}) }

// PeerRefusedTLS tells the daemon that the peer at addr answers but its
// certificate was refused in a TLS handshake (Cluster:Tls of another CA):
// like a JoinRefused, it keeps this node from forming a cluster of its own
// while it keeps asking the seeds (bootstrap.CauseTLS). It does not block.
func (d *Daemon) PeerRefusedTLS(addr membership.Address) { d.root.Send(d.pid, tlsRefusedCmd{addr}) }

// Done is closed when the node stopped: downed, removed, left, or the
// daemon crashed. Result then says which.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Result is how the node stopped; the zero Result before Done.
func (d *Daemon) Result() Result {
	if r := d.result.Load(); r != nil {
		return *r
	}
	return Result{}
}

func (d *Daemon) markDone(r Result) {
	d.doneOnce.Do(func() {
		d.result.Store(&r)
		close(d.done)
	})
}

// Stats returns the counters of received, refused and sent messages.
func (d *Daemon) Stats() Stats {
	c := &d.stats
	return Stats{
		Received: c.received.Load(), Invalid: c.invalid.Load(), WrongIncarnation: c.wrongIncarnation.Load(),
		Misaddressed: c.misaddressed.Load(), Quarantined: c.quarantined.Load(), UnknownSender: c.unknownSender.Load(),
		RefusedJoin: c.refusedJoin.Load(), RefusedProtocol: c.refusedProtocol.Load(), Transport: d.opts.Transport.Stats(),
	}
}

// DeadPeers lists the peers known dead: members this node holds
// unreachable, and addresses whose connection broke or refused the gate's
// probe. The host shuts protoactor down non-gracefully when any exist.
func (d *Daemon) DeadPeers() []membership.Address {
	st := d.Snapshot()
	out := d.opts.Transport.DeadPeers()
	for _, u := range st.Gossip.Reachability.AllUnreachableFrom(d.self) {
		out = append(out, u.Address())
	}
	slices.SortFunc(out, membership.Address.Compare)
	return slices.Compact(out)
}

// Stop stops the tick loop, the actor and the transport without leaving
// the cluster (call Leave and wait for Done first for a graceful stop). It
// does not shut the actor system down. Done is closed if it was not yet.
func (d *Daemon) Stop() {
	d.stopOnce.Do(func() {
		close(d.stopTick)
		d.cancel()
		_ = d.root.StopFuture(d.pid).Wait()
		d.opts.Transport.Close()
		d.hub.stop()
		d.markDone(Result{})
	})
}

// now is the current Instant: ms since epoch on the daemon's clock.
func now(c actors.Clock, epoch time.Time) node.Instant {
	return node.Instant(c.Since(epoch) / time.Millisecond)
}
