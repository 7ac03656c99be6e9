package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// RestartsMetric counts the restarts of each supervised actor; Prometheus
// shows it as otopcua_actor_restarts_total{actor}.
const RestartsMetric = "otopcua.actor.restarts"

// Supervision defaults (TreeOptions).
const (
	DefaultMaxRestarts    = 5
	DefaultRestartWindow  = time.Minute
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
)

// TreeOptions configure a Tree.
type TreeOptions struct {
	// Name of the root actor, the first element of every path. Default
	// "node".
	Name string
	// MaxRestarts within RestartWindow: the failure after those gives up
	// (OnGiveUp). Defaults DefaultMaxRestarts, DefaultRestartWindow.
	MaxRestarts   int
	RestartWindow time.Duration
	// InitialBackoff is the delay before the first restart in a window;
	// it doubles with each further failure, up to MaxBackoff.
	InitialBackoff, MaxBackoff time.Duration
	// OnGiveUp is called once, on the failing actor's parent, with the path
	// of the first actor that failed past the limit; the host ends the
	// process with exit code 1 (Failed delivers the same). The actor is
	// stopped. Optional.
	OnGiveUp func(path string, reason any)
	// Faults lets Fault make any actor of the tree panic (a test hook:
	// OTOPCUA_TEST_HOOKS). Off: Fault returns an error.
	Faults bool
	// Meter, if set, counts restarts (RestartsMetric).
	Meter metric.Meter
	// Clock times the back-off and the start times. Default: wall clock.
	Clock Clock
	// Logger: a Warning per restart, an Error on give-up. Default: discard.
	Logger *slog.Logger
}

// Tree is the node's supervision tree: a root actor under which every
// runtime component runs as a named child (or grandchild), supervised one
// for one — a failed actor restarts after an exponential back-off while
// its siblings keep running; one that fails more than MaxRestarts times
// within RestartWindow ends the node (OnGiveUp). It keeps a registry of
// the running actors for Actors (GET /api/actors).
//
// Actors of the tree are built with Props, which installs the tree's
// strategy for their own children, a counting mailbox and the registry
// hooks; Spawn starts one under the root.
type Tree struct {
	o        TreeOptions
	sys      *actor.ActorSystem
	root     *actor.RootContext
	pid      *actor.PID
	strategy *strategy
	restarts metric.Int64Counter

	mu      sync.Mutex
	running map[string]*entry // by path; mu must be held.
	gaveUp  atomic.Bool
	failed  chan Failure
}

// Failure is the give-up of an actor that failed past its restart limit.
type Failure struct {
	Path   string
	Reason string
}

// entry is one running actor of the tree.
type entry struct {
	kind     string
	started  time.Time
	restarts int
	mbox     *mailboxStats
}

// ActorInfo is one actor of the tree as GET /api/actors shows it.
type ActorInfo struct {
	Path      string    `json:"path"`
	Kind      string    `json:"kind"`
	Mailbox   int64     `json:"mailbox"` // user messages waiting or being handled
	Restarts  int       `json:"restarts"`
	StartedAt time.Time `json:"startedAt"`
}

// Fault is the test hook's message: the receiving actor panics with
// Reason (see TreeOptions.Faults).
type Fault struct{ Reason string }

// spawnChild asks the root actor to spawn a child.
type spawnChild struct {
	props *actor.Props
	name  string
	reply chan spawnResult
}

type spawnResult struct {
	pid *actor.PID
	err error
}

// NewTree spawns the root actor on sys.
func NewTree(sys *System, o TreeOptions) (*Tree, error) {
	if o.Name == "" {
		o.Name = "node"
	}
	if o.MaxRestarts <= 0 {
		o.MaxRestarts = DefaultMaxRestarts
	}
	if o.RestartWindow <= 0 {
		o.RestartWindow = DefaultRestartWindow
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = DefaultInitialBackoff
	}
	if o.MaxBackoff < o.InitialBackoff {
		o.MaxBackoff = max(o.InitialBackoff, DefaultMaxBackoff)
	}
	if o.Clock == nil {
		o.Clock = RealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Tree{o: o, sys: sys.Actor, root: sys.Root(), running: map[string]*entry{}, failed: make(chan Failure, 1)}
	t.strategy = &strategy{t: t, failures: map[string][]time.Time{}}
	if o.Meter != nil {
		c, err := o.Meter.Int64Counter(RestartsMetric, metric.WithUnit("{restart}"),
			metric.WithDescription("Restarts of a supervised actor after it failed."))
		if err != nil {
			return nil, fmt.Errorf("actors: %s: %w", RestartsMetric, err)
		}
		t.restarts = c
	}
	pid, err := t.root.SpawnNamed(t.Props("root", func() actor.Actor { return &rootActor{} }), o.Name)
	if err != nil {
		return nil, fmt.Errorf("actors: root actor %q: %w", o.Name, err)
	}
	t.pid = pid
	return t, nil
}

// Root is the root context of the actor system, for sends and requests
// from outside any actor.
func (t *Tree) Root() *actor.RootContext { return t.root }

// PID is the root actor's.
func (t *Tree) PID() *actor.PID { return t.pid }

// Clock is the tree's clock.
func (t *Tree) Clock() Clock { return t.o.Clock }

// Failed delivers the first give-up (see TreeOptions.OnGiveUp).
func (t *Tree) Failed() <-chan Failure { return t.failed }

// Props returns the props of an actor of the tree: producer makes a fresh
// actor at the start and at every restart, kind names what it is (shown
// by Actors). opts are applied first; the tree's supervisor, mailbox and
// hooks override theirs.
func (t *Tree) Props(kind string, producer actor.Producer, opts ...actor.PropsOption) *actor.Props {
	mb := &mailboxStats{}
	opts = append(slices.Clone(opts),
		actor.WithSupervisor(t.strategy),
		actor.WithMailbox(actor.Unbounded(mb)),
		actor.WithReceiverMiddleware(t.hooks(kind, mb)))
	return actor.PropsFromProducer(producer, opts...)
}

// Spawn starts props as the root's child name and returns its PID.
func (t *Tree) Spawn(props *actor.Props, name string) (*actor.PID, error) {
	reply := make(chan spawnResult, 1)
	t.root.Send(t.pid, &spawnChild{props: props, name: name, reply: reply})
	select {
	case r := <-reply:
		return r.pid, r.err
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("actors: spawning %q: the root actor did not answer", name)
	}
}

// SpawnNamed is Spawn with the signature of actor.RootContext's, so the
// tree can stand where a component asks for a spawner.
func (t *Tree) SpawnNamed(props *actor.Props, name string) (*actor.PID, error) {
	return t.Spawn(props, name)
}

// Shutdown stops the root actor and with it every actor of the tree.
func (t *Tree) Shutdown() {
	_ = t.root.StopFuture(t.pid).Wait()
}

// Actors lists the running actors of the tree, sorted by path.
func (t *Tree) Actors() []ActorInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ActorInfo, 0, len(t.running))
	for path, e := range t.running {
		out = append(out, e.info(path))
	}
	slices.SortFunc(out, func(a, b ActorInfo) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Actor is the entry of Actors at path; false if no actor runs there.
func (t *Tree) Actor(path string) (ActorInfo, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.running[path]
	if !ok {
		return ActorInfo{}, false
	}
	return e.info(path), true
}

// info is e's ActorInfo; t.mu must be held.
func (e *entry) info(path string) ActorInfo {
	return ActorInfo{Path: path, Kind: e.kind, Mailbox: e.mbox.len(), Restarts: e.restarts, StartedAt: e.started}
}

// Fault makes the actor at path panic (inside its Receive) when the tree
// allows faults; the error says why not otherwise.
func (t *Tree) Fault(path, reason string) error {
	if !t.o.Faults {
		return errors.New("actors: faults are not enabled (a test hook)")
	}
	t.mu.Lock()
	_, ok := t.running[path]
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("actors: no running actor at %q", path)
	}
	t.root.Send(actor.NewPID(t.sys.Address(), path), &Fault{Reason: reason})
	return nil
}

// hooks is the receiver middleware of every actor of the tree: it keeps
// the registry and, with faults enabled, panics on a Fault.
func (t *Tree) hooks(kind string, mb *mailboxStats) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			path := c.Self().Id
			switch m := env.Message.(type) {
			case *actor.Started:
				t.mu.Lock()
				e := t.running[path]
				if e == nil {
					e = &entry{kind: kind, mbox: mb}
					t.running[path] = e
				}
				e.started = t.o.Clock.Now()
				t.mu.Unlock()
			case *actor.Restarting:
				// The message that failed was posted and never received.
				mb.n.Add(-1)
			case *actor.Stopped:
				t.mu.Lock()
				delete(t.running, path)
				t.mu.Unlock()
			case *Fault:
				if t.o.Faults {
					panic(fmt.Sprintf("test fault in %s: %s", path, m.Reason))
				}
				return
			}
			next(c, env)
		}
	}
}

// restarted records a restart of path.
func (t *Tree) restarted(path string) {
	t.mu.Lock()
	if e := t.running[path]; e != nil {
		e.restarts++
	}
	t.mu.Unlock()
	if t.restarts != nil {
		t.restarts.Add(context.Background(), 1, metric.WithAttributes(attribute.String("actor", path)))
	}
}

// giveUp reports the first actor that failed past its limit.
func (t *Tree) giveUp(path string, reason any) {
	if !t.gaveUp.CompareAndSwap(false, true) {
		return
	}
	t.failed <- Failure{Path: path, Reason: fmt.Sprint(reason)}
	if t.o.OnGiveUp != nil {
		t.o.OnGiveUp(path, reason)
	}
}

// strategy is the tree's one-for-one supervisor strategy: restart with an
// exponential back-off on the tree's clock, give up past MaxRestarts
// failures within RestartWindow.
type strategy struct {
	t        *Tree
	mu       sync.Mutex
	failures map[string][]time.Time // by child path; mu must be held.
}

var _ actor.SupervisorStrategy = (*strategy)(nil)

func (s *strategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ any) {
	t := s.t
	now := t.o.Clock.Now()
	s.mu.Lock()
	kept := s.failures[child.Id][:0]
	for _, at := range s.failures[child.Id] {
		if now.Sub(at) < t.o.RestartWindow {
			kept = append(kept, at)
		}
	}
	kept = append(kept, now)
	s.failures[child.Id] = kept
	n := len(kept)
	s.mu.Unlock()

	if n > t.o.MaxRestarts {
		t.o.Logger.Error("actor failed past its restart limit: ending the node", "actor", child.Id, "reason", fmt.Sprint(reason),
			"failures", n, "window", t.o.RestartWindow.String())
		sup.StopChildren(child)
		t.giveUp(child.Id, reason)
		return
	}
	backoff := t.o.InitialBackoff << (n - 1)
	if backoff > t.o.MaxBackoff || backoff <= 0 {
		backoff = t.o.MaxBackoff
	}
	t.o.Logger.Warn("actor failed; restarting it", "actor", child.Id, "reason", fmt.Sprint(reason),
		"restart", n, "of", t.o.MaxRestarts, "window", t.o.RestartWindow.String(), "backoff", backoff.String())
	t.o.Clock.AfterFunc(backoff, func() {
		t.restarted(child.Id)
		sup.RestartChildren(child)
	})
}

// rootActor spawns the tree's top-level children.
type rootActor struct{}

func (rootActor) Receive(c actor.Context) {
	if m, ok := c.Message().(*spawnChild); ok {
		pid, err := c.SpawnNamed(m.props, m.name)
		m.reply <- spawnResult{pid: pid, err: err}
	}
}

// mailboxStats counts the user messages of one actor waiting in its
// mailbox or being handled.
type mailboxStats struct{ n atomic.Int64 }

func (m *mailboxStats) MailboxStarted() {}
func (m *mailboxStats) MessagePosted(msg any) {
	if _, sys := msg.(actor.SystemMessage); !sys {
		m.n.Add(1)
	}
}
func (m *mailboxStats) MessageReceived(msg any) {
	if _, sys := msg.(actor.SystemMessage); !sys {
		m.n.Add(-1)
	}
}
func (m *mailboxStats) MailboxEmpty() {}
func (m *mailboxStats) len() int64    { return max(0, m.n.Load()) }

// Parent is where a component spawns its actors: the node's Tree, or
// Plain for a unit test without one.
type Parent interface {
	// Props builds the props of one of the component's actors (see
	// Tree.Props).
	Props(kind string, producer actor.Producer, opts ...actor.PropsOption) *actor.Props
	// SpawnNamed starts props as a top-level child called name.
	SpawnNamed(props *actor.Props, name string) (*actor.PID, error)
	// Root is the root context for sends and requests from outside.
	Root() *actor.RootContext
	// Clock is the clock of the actors' timers.
	Clock() Clock
}

var _ Parent = (*Tree)(nil)

// Plain is a Parent without a tree: actors spawn at the root of sys with
// DefaultSupervisor, on clock (nil: the wall clock). For unit tests of a
// component.
func Plain(root *actor.RootContext, clock Clock) Parent {
	if clock == nil {
		clock = RealClock()
	}
	return plain{root: root, clock: clock}
}

// OwnParent returns parent, or, if it is nil, a Plain parent on clock at
// the root of a private local actor system; stop shuts that system down
// (a no-op for a given parent). It is the fallback of a component whose
// Options.Parent is nil.
func OwnParent(parent Parent, clock Clock) (_ Parent, stop func()) {
	if parent != nil {
		return parent, func() {}
	}
	sys := NewLocal(slog.New(slog.DiscardHandler)) // protoactor's own lines are noise here
	return Plain(sys.Root(), clock), func() { sys.Shutdown(false) }
}

type plain struct {
	root  *actor.RootContext
	clock Clock
}

func (p plain) Props(_ string, producer actor.Producer, opts ...actor.PropsOption) *actor.Props {
	return actor.PropsFromProducer(producer, append(slices.Clone(opts), actor.WithSupervisor(DefaultSupervisor()))...)
}
func (p plain) SpawnNamed(props *actor.Props, name string) (*actor.PID, error) {
	return p.root.SpawnNamed(props, name)
}
func (p plain) Root() *actor.RootContext { return p.root }
func (p plain) Clock() Clock             { return p.clock }

// Every sends msg to pid every d on clock until stop: an actor's timer as
// messages. Call stop when the actor stops (in its *actor.Stopping).
//
// On the real clock the ticks fall on the multiples of d (NextMultiple),
// not d after the call: every periodic actor of a node whose period is a
// multiple of another's then wakes in the same instant, and an idle node
// wakes once per 250 ms instead of once per timer (measured in
// docs/benchmarks.md, "Idle node"). The first tick therefore comes after
// at most d, not exactly d. A fake clock ticks every d from the call, as
// tests expect.
func Every(root *actor.RootContext, clock Clock, pid *actor.PID, d time.Duration, msg any) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	send := func() { root.Send(pid, msg) }
	if isRealClock(clock) {
		go alignedTicks(d, send, done)
	} else {
		go ticks(clock.NewTicker(d), send, done)
	}
	return func() { once.Do(func() { close(done) }) }
}

func ticks(t clockwork.Ticker, send func(), done <-chan struct{}) {
	defer t.Stop()
	for {
		select {
		case <-t.Chan():
			send()
		case <-done:
			return
		}
	}
}

// alignedTicks calls send at every multiple of d on the wall clock until
// done. A late wake-up (a stalled process, a stepped wall clock) skips to
// the next multiple instead of firing the missed ones.
func alignedTicks(d time.Duration, send func(), done <-chan struct{}) {
	t := time.NewTimer(time.Until(NextMultiple(time.Now(), d)))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			send()
			t.Reset(time.Until(NextMultiple(time.Now(), d)))
		case <-done:
			return
		}
	}
}

// NextMultiple is the first instant after now that is a whole multiple of
// d (counted from the zero time, as time.Time.Truncate counts).
func NextMultiple(now time.Time, d time.Duration) time.Time {
	return now.Truncate(d).Add(d)
}

// isRealClock reports whether c is clockwork's real clock.
func isRealClock(c Clock) bool {
	return reflect.TypeOf(c) == realClockType
}

var realClockType = reflect.TypeOf(clockwork.NewRealClock())
