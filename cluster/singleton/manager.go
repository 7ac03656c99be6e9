package singleton

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/cluster/wire"
)

// Instance is one run of a singleton on one node: a plain Go lifecycle.
// The manager calls Start at most once and Stop at most once, never
// concurrently; a new run gets a new Instance from the Factory.
type Instance interface {
	// Start starts the singleton's work and returns promptly (long work
	// belongs on goroutines or actors it starts). ctx is cancelled when
	// the manager stops the instance, just before it calls Stop.
	Start(ctx context.Context)
	// Stop stops the work and returns once it has stopped: after Stop
	// returns nothing of this instance acts any more, because the next
	// oldest node starts its own as soon as it hears so. A Stop that
	// never returns holds the hand-over (and this node's leave, up to the
	// daemon's exiting timeout).
	Stop()
}

// Membership is the node's cluster membership, as *daemon.Daemon provides
// it.
type Membership interface {
	Self() membership.UniqueAddress
	Snapshot() membership.State
	Subscribe(fn func(membership.Event)) (membership.State, func())
}

// Messenger carries the hand-over messages between the managers of
// different nodes, point to point, with the incarnation checks of
// *pubsub.Mediator (which implements it).
type Messenger interface {
	SendTo(to membership.UniqueAddress, topic string, msg proto.Message) error
	Subscribe(topic string, fn pubsub.Handler) (cancel func())
}

// Defaults of Options.
const (
	DefaultHandOverRetryInterval = time.Second
	DefaultHandOverTimeout       = 5 * time.Second
	DefaultTakeOverTimeout       = 15 * time.Second
	DefaultExitingTakeOverWait   = 2 * time.Second
)

// Options configure a Manager.
type Options struct {
	// Daemon is this node's membership. Required.
	Daemon Membership
	// Mediator carries the hand-over messages. Required.
	Mediator Messenger
	// Role: the singleton runs on the oldest Up member carrying it; ""
	// means any member. Start managers only on nodes with the role.
	Role string
	// Name identifies the singleton in the cluster (one manager per name
	// and node), e.g. "redundancy-state". Required.
	Name string
	// Factory makes the instance each time this node starts the
	// singleton. Required unless Child is set.
	Factory func() Instance
	// Child, instead of Factory, makes the instance an actor: each time
	// this node starts the singleton it is called once, and the manager
	// spawns the producer (with Parent.Props(kind, producer), so the tree
	// supervises it) as its child Name — node/<Name>-manager/<Name> under
	// the tree. Stopping the instance stops that child; it counts as
	// stopped once it terminated. A producer is called again at each
	// restart of the child.
	Child func() (kind string, producer actor.Producer)
	// Parent is where the manager actor is spawned (the node's
	// actors.Tree). Nil: Start creates a private local actor system
	// (actors.Plain on Clock) and Stop shuts it down.
	Parent actors.Parent
	// OnChange is called with true when the instance is about to start
	// and with false once its Stop returned — from the manager's
	// goroutine, in order, never concurrently with itself; it must not
	// block. Optional.
	OnChange func(active bool)
	// Exit, when set, lets the daemon's leave wait for this manager's
	// hand-over (see ExitGroup).
	Exit *ExitGroup
	// Clock drives the retries and timeouts. Default: wall clock.
	Clock actors.Clock
	// Logger receives the manager's log lines (see the Log constants).
	// Default: discard.
	Logger *slog.Logger
	// HandOverRetryInterval is how often HandOverToMe and TakeOverFromMe
	// are repeated. Default 1 s.
	HandOverRetryInterval time.Duration
	// HandOverTimeout is how long a new oldest waits for the HandOverDone
	// of a previous oldest that is Down but still reachable before it
	// starts anyway. A live previous oldest (Exiting, or unreachable but
	// not downed) is waited for without limit. Default 5 s.
	HandOverTimeout time.Duration
	// TakeOverTimeout is how long an oldest that is not leaving keeps
	// offering TakeOverFromMe to a newer placement before it stops its
	// instance anyway. Default 15 s.
	TakeOverTimeout time.Duration
	// ExitingTakeOverWait is how long a leaving oldest waits for the new
	// oldest's HandOverToMe before it stops its instance anyway. Default
	// 2 s.
	ExitingTakeOverWait time.Duration
}

func (o *Options) defaults() error {
	switch {
	case o.Daemon == nil:
		return errors.New("singleton: Options.Daemon is required")
	case o.Mediator == nil:
		return errors.New("singleton: Options.Mediator is required")
	case o.Name == "":
		return errors.New("singleton: Options.Name is required")
	case o.Factory == nil && o.Child == nil:
		return errors.New("singleton: Options.Factory or Options.Child is required")
	case o.Factory != nil && o.Child != nil:
		return errors.New("singleton: set Options.Factory or Options.Child, not both")
	}
	if o.Clock == nil {
		o.Clock = actors.RealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HandOverRetryInterval <= 0 {
		o.HandOverRetryInterval = DefaultHandOverRetryInterval
	}
	if o.HandOverTimeout <= 0 {
		o.HandOverTimeout = DefaultHandOverTimeout
	}
	if o.TakeOverTimeout <= 0 {
		o.TakeOverTimeout = DefaultTakeOverTimeout
	}
	if o.ExitingTakeOverWait <= 0 {
		o.ExitingTakeOverWait = DefaultExitingTakeOverWait
	}
	return nil
}

// ticks converts a timeout to retry intervals, at least 1.
func ticks(d, interval time.Duration) int {
	return max(1, int((d+interval-1)/interval))
}

// Topic is the mediator topic of the managers of the singleton name.
func Topic(name string) string { return "otopcua-singleton/" + name }

// Names of the manager actor: ManagerKind, spawned as Name+ManagerSuffix.
const (
	ManagerKind   = "ClusterSingletonManager"
	ManagerSuffix = "-manager"
)

// Inputs of the manager actor.
type (
	viewIn struct{}
	recvIn struct {
		from membership.UniqueAddress
		sig  wire.SingletonSignal
	}
	tickIn        struct{}
	stoppedIn     struct{}
	leavingIn     struct{ ack chan struct{} }
	selfRemovedIn struct{}
	closeIn       struct{}
)

// Manager runs one singleton on this node while this node is its
// Placement, and hands it over (Akka's ClusterSingletonManager). It is a
// protoactor actor (ManagerKind, Name+ManagerSuffix under Options.Parent);
// the Manager value is its façade. Its methods are safe for concurrent
// use.
//
// The machine, the running instance and the leave waiters live in the
// façade, touched only by the running incarnation of the actor, so that a
// restart of the manager actor keeps them (see the package documentation).
type Manager struct {
	opts  Options
	self  membership.UniqueAddress
	topic string
	log   *slog.Logger

	stopOwn func() // shuts down the private system without a Parent (actors.OwnParent)
	parent  actors.Parent
	pid     *actor.PID
	ready   chan struct{} // closed when the first incarnation started
	done    chan struct{} // closed when the manager actor stopped
	doneMu  sync.Once
	rdyMu   sync.Once

	active atomic.Bool
	phase  atomic.Uint32

	// Owned by the manager actor (one incarnation at a time).
	mach          *machine
	running       bool               // an instance runs (or is being stopped)
	inst          Instance           // Factory's instance
	cancel        context.CancelFunc // of inst's context
	child         *actor.PID         // Child's instance
	childStopping bool               // stopInstance asked the child to stop
	waiters       []chan struct{}
	closing       bool
	incarnations  int

	unsubMembers, unsubMessages func()
	closeOnce                   sync.Once
}

// Start starts a manager: it spawns the manager actor, subscribes to the
// membership and to the hand-over topic, and starts the instance at once
// if this node is already the placement and nobody may be running it
// elsewhere.
func Start(o Options) (*Manager, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	m := &Manager{
		opts:  o,
		self:  o.Daemon.Self(),
		topic: Topic(o.Name),
		log:   o.Logger.With("singleton", o.Name, "role", o.Role),
		ready: make(chan struct{}),
		done:  make(chan struct{}),
	}
	interval := o.HandOverRetryInterval
	m.mach = newMachine(machineConfig{
		self: m.self, role: o.Role,
		handOverTicks: ticks(o.HandOverTimeout, interval),
		takeOverTicks: ticks(o.TakeOverTimeout, interval),
		exitTicks:     ticks(o.ExitingTakeOverWait, interval),
	})
	m.parent, m.stopOwn = actors.OwnParent(o.Parent, o.Clock)
	pid, err := m.parent.SpawnNamed(m.parent.Props(ManagerKind, func() actor.Actor { return &managerActor{m: m} }), o.Name+ManagerSuffix)
	if err != nil {
		m.stopOwn()
		return nil, fmt.Errorf("singleton %s: manager actor: %w", o.Name, err)
	}
	m.pid = pid
	<-m.ready // its ticker runs from now on
	m.unsubMessages = o.Mediator.Subscribe(m.topic, m.onMessage)
	_, m.unsubMembers = o.Daemon.Subscribe(func(ev membership.Event) {
		if ev.Kind == membership.SelfRemoved {
			m.post(selfRemovedIn{})
			return
		}
		m.post(viewIn{})
	})
	if o.Exit != nil {
		o.Exit.add(m)
	}
	m.post(viewIn{})
	return m, nil
}

// PID is the manager actor's.
func (m *Manager) PID() *actor.PID { return m.pid }

// onMessage runs on the mediator's goroutine: it only sends.
func (m *Manager) onMessage(from membership.UniqueAddress, msg proto.Message) {
	x, ok := msg.(*wire.SingletonHandOver)
	if !ok || x.GetName() != m.opts.Name {
		return
	}
	m.post(recvIn{from: from, sig: x.GetSignal()})
}

// post sends an input to the manager actor; it never blocks (the mailbox
// is unbounded). After the actor stopped the input is dropped.
func (m *Manager) post(in any) { m.parent.Root().Send(m.pid, in) }

// managerActor is one incarnation of the manager actor.
type managerActor struct {
	m          *Manager
	stopTick   func()
	restarting bool
}

func (a *managerActor) Receive(ctx actor.Context) {
	m := a.m
	switch x := ctx.Message().(type) {
	case *actor.Started:
		a.stopTick = actors.Every(ctx.ActorSystem().Root, m.opts.Clock, ctx.Self(), m.opts.HandOverRetryInterval, tickIn{})
		m.incarnations++
		if m.incarnations > 1 {
			m.restarted(ctx)
		}
		m.rdyMu.Do(func() { close(m.ready) })
		return
	case *actor.Restarting:
		a.restarting = true
		a.stopTick()
		return
	case *actor.Stopping:
		a.stopTick()
		return
	case *actor.Stopped:
		m.doneMu.Do(func() { close(m.done) })
		return
	case *actor.Terminated:
		if a.restarting || m.child == nil || !x.Who.Equal(m.child) {
			return // the restart stopped the child: the next incarnation reconciles
		}
		m.child = nil
		if !m.childStopping {
			m.log.Error("singleton instance actor stopped on its own (it failed past its restart limit)")
		}
		m.handle(ctx, stoppedIn{})
	case closeIn:
		m.closing = true
		m.handle(ctx, x)
	default:
		m.handle(ctx, x)
	}
	if m.closing && m.mach.phase == Ended {
		m.release()
		ctx.Stop(ctx.Self())
	}
}

// restarted reconciles a new incarnation of the manager actor with the
// instance: the restart stopped the child actor (protoactor stops an
// actor's children when it restarts), so it is started again, or counted
// as stopped when a stop was under way. A Factory instance is no actor
// and kept running.
func (m *Manager) restarted(ctx actor.Context) {
	if m.opts.Child == nil || !m.running {
		return
	}
	m.child = nil
	if m.childStopping {
		m.handle(ctx, stoppedIn{})
		return
	}
	m.log.Warn("singleton manager restarted: starting its instance actor again")
	m.spawnChild(ctx)
}

func (m *Manager) handle(ctx actor.Context, in any) {
	var effects []effect
	switch x := in.(type) {
	case viewIn:
		effects = m.mach.onView(m.opts.Daemon.Snapshot())
	case recvIn:
		effects = m.mach.onReceive(x.from, x.sig)
	case tickIn:
		effects = append(m.mach.onView(m.opts.Daemon.Snapshot()), m.mach.onTick()...)
	case stoppedIn:
		effects = m.onInstanceStopped()
	case leavingIn:
		m.waiters = append(m.waiters, x.ack)
		effects = m.mach.onLeaving()
	case selfRemovedIn:
		effects = m.mach.onSelfRemoved()
	case closeIn:
		effects = m.mach.onClose()
	}
	for _, e := range effects {
		m.run(ctx, e)
	}
	m.phase.Store(uint32(m.mach.phase))
	m.release()
}

// release answers the leave waiters once this node is leaving and runs
// nothing.
func (m *Manager) release() {
	if len(m.waiters) == 0 || (!m.mach.exiting && m.mach.phase != Ended) || m.mach.phase.Running() {
		return
	}
	for _, w := range m.waiters {
		close(w)
	}
	m.waiters = nil
}

func (m *Manager) onInstanceStopped() []effect {
	stopping := m.mach.phase == Stopping
	m.running, m.inst, m.cancel, m.child, m.childStopping = false, nil, nil, nil, false
	m.active.Store(false)
	if m.opts.OnChange != nil {
		m.opts.OnChange(false)
	}
	if stopping {
		m.log.Info(LogStopped, "reason", m.mach.why)
	}
	return m.mach.onStopped()
}

func (m *Manager) run(ctx actor.Context, e effect) {
	switch e := e.(type) {
	case startInstance:
		m.startInstance(ctx, e)
	case stopInstance:
		m.stopInstance(ctx, e)
	case sendSignal:
		if err := m.opts.Mediator.SendTo(e.to, m.topic, &wire.SingletonHandOver{Name: m.opts.Name, Signal: e.sig}); err != nil {
			m.log.Warn("singleton hand-over message not sent", "to", e.to.String(), "signal", e.sig.String(), "err", err)
		}
	case handedOver:
		to := "nobody"
		if !e.to.IsZero() {
			to = e.to.NodeID()
		}
		m.log.Info(LogHandedOver, "to", to, "toUid", e.to.UID)
	case ended:
		m.log.Info(LogEnded, "reason", e.why)
	case stillWaiting:
		m.log.Warn(LogWaiting, "previous", e.previous.NodeID(), "previousUid", e.previous.UID, "verdict", e.verdict.String())
	}
}

func (m *Manager) startInstance(ctx actor.Context, e startInstance) {
	if m.running {
		panic(fmt.Sprintf("singleton %s: invariant violated: start while an instance runs", m.opts.Name))
	}
	prev := ""
	if !e.previous.IsZero() {
		prev = e.previous.String()
	}
	if e.how == startTakeOver {
		m.log.Warn(LogTakenOver, "previous", prev, "detail", e.detail)
	}
	m.running = true
	if m.opts.Child == nil {
		var ictx context.Context
		ictx, m.cancel = context.WithCancel(context.Background())
		m.inst = m.opts.Factory()
		if m.opts.OnChange != nil {
			m.opts.OnChange(true) // before Active turns true: a reader of Active sees its effects
		}
		m.active.Store(true)
		func() {
			defer func() {
				if p := recover(); p != nil {
					m.log.Error("singleton instance panicked in Start", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				}
			}()
			m.inst.Start(ictx)
		}()
	} else {
		if m.opts.OnChange != nil {
			m.opts.OnChange(true)
		}
		m.active.Store(true)
		m.spawnChild(ctx)
	}
	m.log.Info(LogStarted, "reason", e.how, "previous", prev, "self", m.self.NodeID())
}

// spawnChild spawns the Child instance actor. A failed spawn is logged;
// the instance then counts as running until it is stopped.
func (m *Manager) spawnChild(ctx actor.Context) {
	kind, producer := m.opts.Child()
	pid, err := ctx.SpawnNamed(m.parent.Props(kind, producer), m.opts.Name)
	if err != nil {
		m.log.Error("singleton instance actor not spawned", "err", err)
		return
	}
	m.child = pid
}

// stopInstance stops the instance without holding the manager: a Factory
// instance's Stop runs on a goroutine, a Child actor is told to stop; the
// manager keeps answering meanwhile and takes stoppedIn once it stopped.
func (m *Manager) stopInstance(ctx actor.Context, e stopInstance) {
	if !m.running {
		panic(fmt.Sprintf("singleton %s: invariant violated: stop without an instance", m.opts.Name))
	}
	m.log.Info("singleton stopping", "reason", e.why)
	if m.opts.Child != nil {
		m.childStopping = true
		if m.child == nil {
			ctx.Send(ctx.Self(), stoppedIn{})
			return
		}
		ctx.Stop(m.child) // its Terminated is stoppedIn
		return
	}
	inst, cancel := m.inst, m.cancel
	root, self := ctx.ActorSystem().Root, ctx.Self()
	go func() {
		defer root.Send(self, stoppedIn{})
		defer func() {
			if p := recover(); p != nil {
				m.log.Error("singleton instance panicked in Stop", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
		}()
		cancel()
		inst.Stop()
	}()
}

// Active reports whether the instance runs on this node: true from just
// before its Start until its Stop returned (for a Child: from just before
// its spawn until it terminated).
func (m *Manager) Active() bool { return m.active.Load() }

// Phase is the manager's current phase.
func (m *Manager) Phase() Phase { return Phase(m.phase.Load()) }

// HandOver is the leave task: this node is leaving, so the manager never
// starts the instance again and hands a running one over to the next
// oldest. It returns once no instance runs here, or with ctx's error.
func (m *Manager) HandOver(ctx context.Context) error {
	ack := make(chan struct{})
	m.post(leavingIn{ack: ack})
	select {
	case <-ack:
		return nil
	case <-m.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("singleton %s: hand-over not finished: %w", m.opts.Name, ctx.Err())
	}
}

// Stop stops the instance if it runs (without a hand-over: call HandOver
// first on a graceful leave) and the manager actor, and returns once both
// have stopped. Later calls return at once.
func (m *Manager) Stop() {
	m.closeOnce.Do(func() {
		m.unsubMembers()
		m.post(closeIn{})
		<-m.done
		m.unsubMessages()
		if m.opts.Exit != nil {
			m.opts.Exit.remove(m)
		}
		m.stopOwn()
	})
}
