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

	"github.com/jonboulle/clockwork"
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
	// singleton. Required.
	Factory func() Instance
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
	case o.Factory == nil:
		return errors.New("singleton: Options.Factory is required")
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

// Inputs of the manager's loop.
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
// Placement, and hands it over (Akka's ClusterSingletonManager). Its
// methods are safe for concurrent use.
type Manager struct {
	opts  Options
	self  membership.UniqueAddress
	topic string
	log   *slog.Logger

	mu    sync.Mutex // guards queue, closed
	queue []any
	wake  chan struct{}
	done  chan struct{} // closed when the loop returned

	active atomic.Bool
	phase  atomic.Uint32

	// loop goroutine only
	mach    *machine
	inst    Instance
	cancel  context.CancelFunc
	waiters []chan struct{}

	unsubMembers, unsubMessages func()
	stopTick                    chan struct{}
	closeOnce                   sync.Once
}

// Start starts a manager: it subscribes to the membership and to the
// hand-over topic, and starts the instance at once if this node is
// already the placement and nobody may be running it elsewhere.
func Start(o Options) (*Manager, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	m := &Manager{
		opts:     o,
		self:     o.Daemon.Self(),
		topic:    Topic(o.Name),
		log:      o.Logger.With("singleton", o.Name, "role", o.Role),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		stopTick: make(chan struct{}),
	}
	interval := o.HandOverRetryInterval
	m.mach = newMachine(machineConfig{
		self: m.self, role: o.Role,
		handOverTicks: ticks(o.HandOverTimeout, interval),
		takeOverTicks: ticks(o.TakeOverTimeout, interval),
		exitTicks:     ticks(o.ExitingTakeOverWait, interval),
	})
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
	go m.tickLoop(o.Clock.NewTicker(interval))
	go m.loop()
	return m, nil
}

// onMessage runs on the mediator's goroutine: it only queues.
func (m *Manager) onMessage(from membership.UniqueAddress, msg proto.Message) {
	x, ok := msg.(*wire.SingletonHandOver)
	if !ok || x.GetName() != m.opts.Name {
		return
	}
	m.post(recvIn{from: from, sig: x.GetSignal()})
}

func (m *Manager) post(in any) {
	m.mu.Lock()
	m.queue = append(m.queue, in)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) tickLoop(t clockwork.Ticker) {
	defer t.Stop()
	for {
		select {
		case <-t.Chan():
			m.post(tickIn{})
		case <-m.stopTick:
			return
		}
	}
}

// loop handles the inputs one at a time until the manager ended after
// Stop.
func (m *Manager) loop() {
	defer close(m.done)
	closing := false
	for range m.wake {
		for {
			m.mu.Lock()
			if len(m.queue) == 0 {
				m.mu.Unlock()
				break
			}
			in := m.queue[0]
			m.queue = m.queue[1:]
			m.mu.Unlock()
			if _, ok := in.(closeIn); ok {
				closing = true
			}
			m.handle(in)
			if closing && m.mach.phase == Ended {
				m.release()
				return
			}
		}
	}
}

func (m *Manager) handle(in any) {
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
		m.run(e)
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
	m.inst, m.cancel = nil, nil
	m.active.Store(false)
	if m.opts.OnChange != nil {
		m.opts.OnChange(false)
	}
	if stopping {
		m.log.Info(LogStopped, "reason", m.mach.why)
	}
	return m.mach.onStopped()
}

func (m *Manager) run(e effect) {
	switch e := e.(type) {
	case startInstance:
		m.startInstance(e)
	case stopInstance:
		m.stopInstance(e)
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

func (m *Manager) startInstance(e startInstance) {
	if m.inst != nil {
		panic(fmt.Sprintf("singleton %s: invariant violated: start while an instance runs", m.opts.Name))
	}
	prev := ""
	if !e.previous.IsZero() {
		prev = e.previous.String()
	}
	if e.how == startTakeOver {
		m.log.Warn(LogTakenOver, "previous", prev, "detail", e.detail)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.inst, m.cancel = m.opts.Factory(), cancel
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
		m.inst.Start(ctx)
	}()
	m.log.Info(LogStarted, "reason", e.how, "previous", prev, "self", m.self.NodeID())
}

// stopInstance stops the instance on a goroutine: Stop may take a while
// and the manager keeps answering meanwhile.
func (m *Manager) stopInstance(e stopInstance) {
	inst, cancel := m.inst, m.cancel
	if inst == nil {
		panic(fmt.Sprintf("singleton %s: invariant violated: stop without an instance", m.opts.Name))
	}
	m.log.Info("singleton stopping", "reason", e.why)
	go func() {
		defer m.post(stoppedIn{})
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
// before its Start until its Stop returned.
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
// first on a graceful leave) and the manager, and returns once both have
// stopped. Later calls return at once.
func (m *Manager) Stop() {
	m.closeOnce.Do(func() {
		m.unsubMembers()
		m.post(closeIn{})
		<-m.done
		m.unsubMessages()
		close(m.stopTick)
		if m.opts.Exit != nil {
			m.opts.Exit.remove(m)
		}
	})
}
