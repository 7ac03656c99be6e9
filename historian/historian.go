package historian

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/localdb"
)

// The drain actor's name under its Parent and its kind (GET /api/actors).
const (
	ActorName = "historian"
	ActorKind = "HistorianAdapter"
)

// Defaults of Options.
const (
	DefaultDrainEvery  = 500 * time.Millisecond
	DefaultBatchSize   = 256
	DefaultTrimEvery   = 10 * time.Second
	DefaultMaxQueue    = 100_000
	DefaultMaxAttempts = 3
	DefaultMaxBackoff  = 10 * time.Second
	DefaultCallTimeout = 5 * time.Second
)

// States of the drain (Status.State, the state label of
// otopcua_historian_drain_state).
const (
	// StateDraining: this node is Primary and rows are waiting or were
	// delivered by the last drain.
	StateDraining = "Draining"
	// StateIdle: this node is Primary and nothing waits.
	StateIdle = "Idle"
	// StateNotPrimary: the Primary gate denies this node; it queues and
	// trims, the Primary drains.
	StateNotPrimary = "NotPrimary"
	// StateCentralUnreachable: the last drain could not write to the
	// Config DB; the rows stay queued and the drain retries with back-off.
	StateCentralUnreachable = "CentralUnreachable"
	// StateLocalDbError: the last drain could not read or update the
	// LocalDb queue; it retries with back-off.
	StateLocalDbError = "LocalDbError"
	// StateStopped: not started, or stopped.
	StateStopped = "Stopped"
)

// States lists every state, for the one-hot gauge.
var States = []string{StateDraining, StateIdle, StateNotPrimary, StateCentralUnreachable, StateLocalDbError, StateStopped}

// Sentinel errors callers branch on.
var (
	// ErrQueueFull is wrapped by Enqueue when the LocalDb queue holds
	// MaxQueue rows: the event is refused (and counted), the queued ones
	// are kept.
	ErrQueueFull = localdb.ErrQueueFull
	// ErrOtherCluster is wrapped by Enqueue for an event of another
	// ClusterId than the historian's: the adapter skips it (the alerts
	// topic is fleet-wide; each ClusterId historizes its own).
	ErrOtherCluster = errors.New("historian: event of another cluster")
	// ErrInvalidEvent is wrapped by Enqueue for an event that cannot be
	// keyed or is not an alarm transition; the error says why.
	ErrInvalidEvent = errors.New("historian: invalid event")
	// ErrStarted is returned by a second Start.
	ErrStarted = errors.New("historian: already started")
)

// Options configure a Historian. Zero values take the defaults.
type Options struct {
	// ClusterID is this node's Node:ClusterId; only its events are
	// queued. Required.
	ClusterID string
	// Local is this node's LocalDb, which holds the queue. Required.
	Local *localdb.DB
	// Central is the shared Config DB, which holds alarm_history. Required.
	Central *configdb.DB
	// Gate is the Primary gate's verdict for the historian drain (the
	// node's gate.Guard, Check(gate.SiteHistorianDrain), which counts and
	// logs the denials): true → this node drains. reason (gate.Reason's
	// String) is shown while it is false. epoch is the Decision's Epoch,
	// the redundancy epoch the drain is stamped with
	// (configdb.DrainAlarmHistory; 0: not fenced). Called from the drain's
	// tick goroutine once per tick and between batches, never
	// concurrently; it must not block. Required.
	Gate func() (ok bool, reason string, epoch uint64)
	// Clock drives the drain and trim timers, the back-off and the queue
	// stamps of Status. Default: Parent's clock, or the real clock without
	// a Parent.
	Clock clockwork.Clock
	// Parent is where Start spawns the drain actor (ActorName, kind
	// ActorKind): the node's *actors.Tree. Nil: a private local actor
	// system (actors.Plain on Clock), shut down by Stop — for unit tests
	// and tools.
	Parent actors.Parent
	// DrainEvery is the drain's tick. Default 500 ms.
	DrainEvery time.Duration
	// BatchSize is the most rows one Config DB insert carries, and one
	// trim page. Default 256; at most 10,000.
	BatchSize int
	// TrimEvery is how often a node that is not Primary deletes the queued
	// rows alarm_history already holds. Default 10 s.
	TrimEvery time.Duration
	// MaxQueue is the most rows the LocalDb queue holds (poisoned ones
	// included); Enqueue refuses more. Default 100,000.
	MaxQueue int
	// MaxAttempts is how many times the Config DB may refuse a row before
	// it is poisoned. Default 3.
	MaxAttempts int
	// MaxBackoff caps the wait between two drains while the Config DB or
	// the LocalDb fails: DrainEvery, then doubling, up to this (at least
	// DrainEvery). Default 10 s.
	MaxBackoff time.Duration
	// CallTimeout bounds each Config DB and LocalDb call of the drain and
	// the trim, in real time. Default 5 s.
	CallTimeout time.Duration
	// Logger receives state changes, poisoned rows and refusals. Default:
	// discard.
	Logger *slog.Logger
	// OnNewerEpoch, when set, is told the newest epoch the Config DB named
	// when it refused a drain (configdb.StaleEpochError), then again at
	// every tick the gate admits this node under an older epoch, on the
	// drain's goroutine; it must not block. A node that is still the Primary of its
	// set after a split (the other side's Primary stored a newer epoch and
	// has since rejoined as Secondary, or is gone under the lease) takes a
	// new epoch above it through this call; until then it drains nothing.
	OnNewerEpoch func(newest uint64)
}

// Status is what the historian reports (GET /api/historian).
type Status struct {
	State string `json:"state"` // one of States
	// GateReason is why the Primary gate denies this node (NotPrimary).
	GateReason string `json:"gateReason,omitempty"`
	// QueueDepth counts the queued rows waiting for delivery; Poisoned the
	// rows the Config DB refused MaxAttempts times (kept, not delivered).
	QueueDepth int `json:"queueDepth"`
	Poisoned   int `json:"poisoned"`
	// Oldest is when the oldest waiting row was queued (zero: none).
	Oldest time.Time `json:"oldest,omitzero"`
	// LastDrain is when a drain last removed rows from the queue, and
	// LastDrainRows how many that drain removed.
	LastDrain     time.Time `json:"lastDrain,omitzero"`
	LastDrainRows int       `json:"lastDrainRows"`
	// LastError is the last failure of the drain, the trim or Enqueue;
	// it is cleared when a drain or a trim succeeds.
	LastError string `json:"lastError,omitempty"`
	// Drained counts the rows this node delivered (written to
	// alarm_history, or found there already) and removed from its queue.
	Drained uint64 `json:"drained"`
	// Refused counts the events Enqueue could not queue (queue full, the
	// LocalDb failing, invalid events), since start.
	Refused uint64 `json:"refused"`
	// StaleRefused counts the rows the Config DB refused because a newer
	// Primary's epoch is stored (configdb.StaleEpochError), since start.
	// They stay queued, are not retried under the stale epoch, and leave
	// the queue by the trim once the newer Primary has stored its copy.
	StaleRefused uint64 `json:"staleRefused"`
	// FencedBelow is the newest epoch the Config DB named in such a
	// refusal: this node drains again only with an epoch at least as new.
	FencedBelow uint64 `json:"fencedBelow,omitempty"`
}

// refusalLogEvery is the least time between two log lines about refused
// events (the count in between is in the next line and in Refused).
const refusalLogEvery = 10 * time.Second

// Historian is one node's alarm historian: it queues every alarm transition
// in the LocalDb and, while this node is Primary, drains the queue into the
// Config DB's alarm_history. Its methods are safe for concurrent use. The
// drain is an actor (ActorName, kind ActorKind, see the package doc).
type Historian struct {
	opts Options
	log  *slog.Logger

	mu             sync.Mutex // guards the fields below
	st             Status
	started        bool
	ctx            context.Context // Start's; the parent of every tick's
	cancel         context.CancelFunc
	parent         actors.Parent
	stopOwn        func() // shuts down the private actor system without a Parent (actors.OwnParent)
	pid            *actor.PID
	refusalLogged  time.Time // when the last refusal was logged
	refusedUnknown uint64    // refusals since then, not yet logged

	stopOnce sync.Once
	gen      atomic.Uint64  // incarnations of the drain actor so far
	running  sync.WaitGroup // tick goroutines not yet returned
	tickMu   sync.Mutex     // held by the tick goroutine: ticks never overlap, across incarnations too

	// Owned by the tick goroutine holding tickMu (no other lock).
	failures  int       // drain failures in a row
	retryAt   time.Time // no drain before this (back-off)
	nextTrim  time.Time // the next trim on a node that is not Primary
	trimAfter int64     // the trim's position: the last Seq it looked at
	primary   bool      // the gate's verdict at the last tick
	epoch     uint64    // the gate's epoch at the last tick (the drain's stamp)
	fenced    uint64    // the newest epoch a stale refusal named (0: none)

	// ticked, when set (tests), is called after each tick, by the actor.
	ticked func()
}

// New checks opts, fills in the defaults and returns a historian that
// queues at once (Enqueue) and drains from Start.
func New(opts Options) (*Historian, error) {
	switch {
	case opts.ClusterID == "":
		return nil, errors.New("historian: Options.ClusterID is empty: set it to Node:ClusterId")
	case opts.Local == nil:
		return nil, errors.New("historian: Options.Local is nil: the queue needs the node's LocalDb")
	case opts.Central == nil:
		return nil, errors.New("historian: Options.Central is nil: the drain needs the Config DB")
	case opts.Gate == nil:
		return nil, errors.New("historian: Options.Gate is nil: the drain needs the Primary gate")
	}
	if err := fill(&opts); err != nil {
		return nil, err
	}
	h := &Historian{opts: opts, log: opts.Logger.With("cluster_id", opts.ClusterID)}
	h.st.State = StateStopped
	return h, nil
}

// fill puts the defaults in and checks the ranges.
func fill(o *Options) error {
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"DrainEvery", &o.DrainEvery, DefaultDrainEvery}, {"TrimEvery", &o.TrimEvery, DefaultTrimEvery},
		{"MaxBackoff", &o.MaxBackoff, DefaultMaxBackoff}, {"CallTimeout", &o.CallTimeout, DefaultCallTimeout},
	}
	for _, d := range durations {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return fmt.Errorf("historian: Options.%s %v: accepted values are positive durations (default %v)", d.name, *d.v, d.def)
		}
	}
	ints := []struct {
		name     string
		v        *int
		def, max int
	}{
		{"BatchSize", &o.BatchSize, DefaultBatchSize, min(localdb.MaxEventBatch, configdb.MaxAlarmHistoryBatch)},
		{"MaxQueue", &o.MaxQueue, DefaultMaxQueue, 100_000_000},
		{"MaxAttempts", &o.MaxAttempts, DefaultMaxAttempts, 1000},
	}
	for _, i := range ints {
		if *i.v == 0 {
			*i.v = i.def
		}
		if *i.v < 1 || *i.v > i.max {
			return fmt.Errorf("historian: Options.%s %d: accepted values are 1 to %d (default %d)", i.name, *i.v, i.max, i.def)
		}
	}
	if o.MaxBackoff < o.DrainEvery {
		o.MaxBackoff = o.DrainEvery
	}
	if o.Clock == nil {
		if o.Parent != nil {
			o.Clock = o.Parent.Clock()
		} else {
			o.Clock = clockwork.NewRealClock()
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Options returns the effective options (defaults filled in).
func (h *Historian) Options() Options { return h.opts }

// Enqueue queues e in the LocalDb until the Primary's drain has written it
// to alarm_history. The node's alerts adapter calls it for every
// transition it receives, on every node, Primary or not; a transition
// delivered twice is queued once. It returns when the row is committed to
// the LocalDb file (or refused); it never waits for the Config DB.
//
// An event of another ClusterId is not queued (ErrOtherCluster). A full
// queue (ErrQueueFull), a failing LocalDb or an invalid event
// (ErrInvalidEvent) refuses the event: the error is returned, logged
// (at most once per 10 s) and counted in Status.Refused.
func (h *Historian) Enqueue(ctx context.Context, e Event) error {
	if e.ClusterID != h.opts.ClusterID {
		return fmt.Errorf("%w: %q, this node historizes %q", ErrOtherCluster, e.ClusterID, h.opts.ClusterID)
	}
	if err := e.check(); err != nil {
		return h.refuse(err)
	}
	e.Time = e.Time.UTC().Truncate(time.Microsecond)
	added, err := h.opts.Local.EnqueueEvent(ctx, e.queued(), h.opts.MaxQueue)
	if err != nil {
		return h.refuse(fmt.Errorf("historian: queue %s/%s: %w", e.Alarm, e.TransitionID, err))
	}
	if added {
		h.mu.Lock()
		h.st.QueueDepth++ // until the next tick reads the queue's own count
		if h.st.Oldest.IsZero() {
			h.st.Oldest = h.opts.Clock.Now().UTC()
		}
		h.mu.Unlock()
	}
	return nil
}

// refuse counts and logs a refused event and returns err.
func (h *Historian) refuse(err error) error {
	now := h.opts.Clock.Now()
	h.mu.Lock()
	h.st.Refused++
	h.st.LastError = err.Error()
	h.refusedUnknown++
	logIt := h.refusalLogged.IsZero() || now.Sub(h.refusalLogged) >= refusalLogEvery
	n, total := h.refusedUnknown, h.st.Refused
	if logIt {
		h.refusalLogged, h.refusedUnknown = now, 0
	}
	h.mu.Unlock()
	if logIt {
		h.log.Error("historian: alarm event refused: it is not in this node's history queue",
			"err", err, "refused_since_last_line", n, "refused_total", total)
	}
	return err
}

// Start spawns the drain actor under Options.Parent (or on a private actor
// system): it reads the queue's size, runs the first tick now and then one
// every DrainEvery until Stop or until ctx ends. It returns once the actor
// is spawned; ErrStarted on a second call.
func (h *Historian) Start(ctx context.Context) error {
	h.mu.Lock()
	if h.started {
		h.mu.Unlock()
		return ErrStarted
	}
	h.started = true
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.parent, h.stopOwn = actors.OwnParent(h.opts.Parent, h.opts.Clock)
	parent, hctx := h.parent, h.ctx
	h.mu.Unlock()

	pid, err := parent.SpawnNamed(parent.Props(ActorKind, func() actor.Actor { return &drainActor{h: h} }), ActorName)
	if err != nil {
		h.Stop()
		return fmt.Errorf("historian: drain actor %q: %w", ActorName, err)
	}
	h.mu.Lock()
	h.pid = pid
	h.mu.Unlock()
	go func() {
		<-hctx.Done() // Stop, or the caller's ctx
		h.stopOnce.Do(h.shutdown)
	}()
	return nil
}

// PID is the drain actor's (nil before Start).
func (h *Historian) PID() *actor.PID {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pid
}

// Stop ends the drain and waits for it (a Config DB call in flight is
// cancelled, and its tick goroutine awaited). Queued rows stay in the
// LocalDb. It may be called more than once, and before Start.
func (h *Historian) Stop() {
	h.mu.Lock()
	cancel := h.cancel
	h.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	h.stopOnce.Do(h.shutdown)
}

// shutdown stops the actor, waits for its tick goroutine and stops the
// private actor system.
func (h *Historian) shutdown() {
	h.mu.Lock()
	parent, pid, stopOwn := h.parent, h.pid, h.stopOwn
	h.mu.Unlock()
	if pid != nil {
		_ = parent.Root().StopFuture(pid).Wait()
	}
	h.running.Wait() // no tick starts once the actor has stopped
	stopOwn()
	h.mu.Lock()
	h.st.State, h.st.GateReason = StateStopped, ""
	h.mu.Unlock()
}

// Status returns the last known state; it never touches a database.
func (h *Historian) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st
}

// Messages of the drain actor.
type (
	drainTick struct{ gen uint64 } // the DrainEvery timer of incarnation gen
	tickDone  struct{ gen, attempt uint64 }
)

// drainActor is one incarnation of the drain actor. It runs each tick (the
// database calls) on a goroutine of its own and hears of its end as a
// message; the drain state lives in the Historian.
type drainActor struct {
	h         *Historian
	gen       uint64
	attempt   uint64 // ticks started by this incarnation
	busy      bool   // a tick goroutine runs
	pending   bool   // a timer tick came while busy: tick again at its end
	stopTicks func()
	cancel    context.CancelFunc // of the tick running
}

func (a *drainActor) Receive(c actor.Context) {
	h := a.h
	switch m := c.Message().(type) {
	case *actor.Started:
		a.gen = h.gen.Add(1)
		a.stopTicks = actors.Every(h.parent.Root(), h.opts.Clock, c.Self(), h.opts.DrainEvery, drainTick{gen: a.gen})
		a.startTick(c, true) // at once, the first incarnation and every restart
	case drainTick:
		switch {
		case m.gen != a.gen: // the timer of an earlier incarnation
		case a.busy:
			a.pending = true // as a ticker's one-slot channel would
		default:
			a.startTick(c, false)
		}
	case tickDone:
		if m.gen != a.gen || m.attempt != a.attempt {
			return // a tick of an earlier incarnation, cancelled
		}
		a.busy = false
		a.cancel()
		if h.ticked != nil {
			h.ticked()
		}
		if a.pending {
			a.pending = false
			a.startTick(c, false)
		}
	case *actor.Restarting, *actor.Stopping:
		if a.stopTicks != nil {
			a.stopTicks()
		}
		if a.cancel != nil {
			a.cancel() // the tick running ends soon; the next waits for it (tickMu)
		}
	}
}

// startTick runs one tick on a goroutine; refresh reads the queue's size
// first (an incarnation's first tick).
func (a *drainActor) startTick(c actor.Context, refresh bool) {
	h := a.h
	if h.ctx.Err() != nil {
		return // stopping
	}
	a.attempt++
	a.busy = true
	ctx, cancel := context.WithCancel(h.ctx)
	a.cancel = cancel
	root, self, done := h.parent.Root(), c.Self(), tickDone{gen: a.gen, attempt: a.attempt}
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		h.tickMu.Lock()
		if ctx.Err() == nil {
			if refresh {
				h.refreshStats(ctx)
			}
			h.tick(ctx)
		}
		h.tickMu.Unlock()
		root.Send(self, done)
	}()
}
