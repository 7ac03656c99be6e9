package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/redundancy"
)

// Default DbProbe timings.
const (
	DefaultDbProbeInterval = 5 * time.Second
	DefaultDbProbeTimeout  = 2 * time.Second
)

// The DB probe actor's name under its Parent and its kind (GET
// /api/actors).
const (
	DbProbeName = "db-health-probe"
	DbProbeKind = "DbHealthProbeActor"
)

// ErrDbProbeStarted is returned by a second Start (a DbProbe runs once).
var ErrDbProbeStarted = errors.New("health: DB probe already started")

// Pinger is what DbProbe probes; *configdb.DB implements it. Ping must
// return nil only when the database answered, and should return soon after
// ctx is cancelled (DbProbe copes when it does not, see above).
type Pinger interface {
	Ping(ctx context.Context) error
}

// DbProbeResult is the outcome of one probe.
type DbProbeResult struct {
	// Reachable is true when the database answered within the timeout.
	Reachable bool
	// AsOf is when the result became known: the answer, or the timeout.
	AsOf time.Time
	// Err says why the database is unreachable; empty when Reachable.
	Err string
}

// DbProbeConfig configures a DbProbe. Zero values take the defaults.
type DbProbeConfig struct {
	// Interval between the starts of two probes. Default 5 s
	// (DefaultDbProbeInterval). Must be positive.
	Interval time.Duration

	// Timeout bounds one probe; a call still running after it counts as
	// unreachable. Default 2 s (DefaultDbProbeTimeout). Must be positive
	// and at most Interval.
	Timeout time.Duration

	// Clock drives the interval and the timeout and stamps AsOf. Default:
	// Parent's clock, or the real clock without a Parent.
	Clock clockwork.Clock

	// OnChange is called with the first result and with every result whose
	// Reachable differs from the previous one. It is called from the
	// probe actor's Receive, one call at a time, in result order, never
	// concurrently; it must not block (the actor's next message waits for
	// it). A panic in it restarts the actor. Nil: no notification.
	OnChange func(DbProbeResult)

	// Parent is where Start spawns the actor (DbProbeName, kind
	// DbProbeKind): the node's *actors.Tree, so that it is supervised and
	// listed. Nil: a private local actor system (actors.Plain on Clock),
	// shut down by Stop — for unit tests and tools.
	Parent actors.Parent

	// Logger gets one line per change (Warn when the database becomes
	// unreachable, Info when it answers). Default: discard.
	Logger *slog.Logger
}

// DbProbe is the DbHealthProbeActor of the design: an actor (DbProbeName,
// kind DbProbeKind) that probes the Config DB on a timer, and a façade
// that keeps the last result and answers "is the Config DB reachable from
// this node?" for the ServiceLevel (DbReachable, or an Ask of the actor
// with redundancy.DbHealthQuery) and the health endpoint. Its methods are
// safe for concurrent use.
//
// How it runs:
//
//   - A probe is one Pinger.Ping (configdb.DB.Ping: SELECT 1), run on a
//     goroutine the actor owns; its answer comes back to the actor as a
//     message. The first runs when the actor starts (at Start), then one
//     every Interval (default 5 s): a timer of the injected clock that sends
//     the actor a message (actors.Every).
//   - A probe that has not answered after Timeout (default 2 s) counts as
//     unreachable at that moment: its context is cancelled and the result
//     recorded without waiting for the call to return.
//   - Probes never overlap. When a tick comes while a timed-out call is
//     still running (a driver that ignores its context), no new call starts:
//     the tick records "unreachable, previous probe still running" and the
//     late call's eventual answer is discarded (and logged as a warning). So
//     at most one call is in flight, and the result is refreshed on every
//     tick whatever the driver does.
//   - ProbeSoon runs one out of rhythm when another part of the node saw
//     the Config DB fail (the lease store, on the same database): not while
//     one runs, and not within SoonGap (1 s) of the last one's start.
//   - Every result replaces the last one (Last). OnChange is called with
//     the first result and whenever Reachable flips, right when the probe
//     completes or times out — a consumer reacts at once, not at its next
//     tick.
//   - The actor answers *redundancy.DbHealthQuery (or the value) at once,
//     from memory, with a *redundancy.DbHealthReply.
//
// What survives a restart of the actor (a panic in its Receive, in
// OnChange for instance): the last result, kept by the façade, so Last and
// the actor's answers keep their verdict with its AsOf (the staleness rules
// of Ready and of the ServiceLevel still apply to it); and the call in
// flight, if any — a goroutine the old incarnation started, which the new
// one adopts instead of overlapping it (each call carries an attempt
// number; its answer and timeout count only for the call in flight). The
// new incarnation probes at once, not one Interval later, so the verdict
// is refreshed from its source; the old incarnation's ticks (tagged with
// its generation) are ignored.
//
// An outage that starts just after a successful probe is seen at the next
// tick, when the call fails (a refused connection: milliseconds) or times
// out: within Interval + Timeout (7 s with the defaults), or sooner when a
// ProbeSoon comes first. A recovery is seen
// at the first tick after the database answers again: within Interval plus
// the connection set-up (one Interval more when a timed-out call was still
// running at that tick).
type DbProbe struct {
	pinger Pinger
	cfg    DbProbeConfig

	mu      sync.Mutex // guards the fields below
	last    DbProbeResult
	have    bool // last holds a result
	started bool
	ctx     context.Context // Start's; the parent of every Ping's
	cancel  context.CancelFunc
	parent  actors.Parent
	stopOwn func() // shuts down the private actor system without a Parent (actors.OwnParent)
	pid     *actor.PID
	gen     uint64    // incarnations of the actor so far
	attempt uint64    // Pings started so far
	call    *dbCall   // the Ping whose goroutine has not returned; nil: none
	begun   time.Time // when the last Ping started (zero: none yet)

	stopOnce sync.Once
}

// dbCall is a Ping whose goroutine has not returned yet.
type dbCall struct {
	attempt  uint64
	started  time.Time
	cancel   context.CancelFunc
	timer    clockwork.Timer // its timeout
	timedOut bool            // its result is recorded: an answer now is late
	skipped  bool            // a tick found it still running after its timeout
}

// Messages of the probe actor.
type (
	dbTick    struct{ gen uint64 } // the Interval timer of incarnation gen
	dbTimeout struct{ attempt uint64 }
	dbSoon    struct{} // ProbeSoon
	dbAnswer  struct {
		attempt uint64
		err     error
	}
)

// NewDbProbe validates cfg, fills its defaults and returns a probe that
// does nothing until Start.
func NewDbProbe(p Pinger, cfg DbProbeConfig) (*DbProbe, error) {
	if p == nil {
		return nil, errors.New("health: DB probe: nil Pinger")
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultDbProbeInterval
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultDbProbeTimeout
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("health: DB probe Interval %v: accepted values are positive durations (default %v)", cfg.Interval, DefaultDbProbeInterval)
	}
	if cfg.Timeout < 0 || cfg.Timeout > cfg.Interval {
		return nil, fmt.Errorf("health: DB probe Timeout %v: accepted values are positive durations up to Interval %v (default %v)", cfg.Timeout, cfg.Interval, DefaultDbProbeTimeout)
	}
	if cfg.Clock == nil {
		if cfg.Parent != nil {
			cfg.Clock = cfg.Parent.Clock()
		} else {
			cfg.Clock = clockwork.NewRealClock()
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &DbProbe{pinger: p, cfg: cfg}, nil
}

// Config returns the effective configuration (defaults filled in).
func (p *DbProbe) Config() DbProbeConfig { return p.cfg }

// Start spawns the probe actor under Parent (or on a private actor
// system): it runs the first probe now and then one every Interval, until
// Stop or until ctx ends. It returns once the actor is spawned;
// ErrDbProbeStarted on a second call.
func (p *DbProbe) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return ErrDbProbeStarted
	}
	p.started = true
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.parent, p.stopOwn = actors.OwnParent(p.cfg.Parent, p.cfg.Clock)
	parent, pctx := p.parent, p.ctx
	p.mu.Unlock()

	pid, err := parent.SpawnNamed(parent.Props(DbProbeKind, func() actor.Actor { return &dbProbeActor{p: p} }), DbProbeName)
	if err != nil {
		p.Stop()
		return fmt.Errorf("health: DB probe actor %q: %w", DbProbeName, err)
	}
	p.mu.Lock()
	p.pid = pid
	p.mu.Unlock()
	go func() {
		<-pctx.Done() // Stop, or the caller's ctx
		p.stopOnce.Do(p.shutdown)
	}()
	return nil
}

// PID is the probe actor's (nil before Start), for an Ask with
// redundancy.DbHealthQuery.
func (p *DbProbe) PID() *actor.PID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Stop stops the actor and waits for it (not for a Ping that ignores its
// cancelled context). It may be called more than once, and before Start.
func (p *DbProbe) Stop() {
	p.mu.Lock()
	cancel := p.cancel
	p.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	p.stopOnce.Do(p.shutdown)
}

// shutdown stops the actor and the private actor system.
func (p *DbProbe) shutdown() {
	p.mu.Lock()
	parent, pid, stopOwn := p.parent, p.pid, p.stopOwn
	p.mu.Unlock()
	if pid != nil {
		_ = parent.Root().StopFuture(pid).Wait()
	}
	stopOwn()
}

// Last returns the last result; false before the first probe has ended.
func (p *DbProbe) Last() (DbProbeResult, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.have
}

// reply is the answer to a DbHealthQuery.
func (p *DbProbe) reply() *redundancy.DbHealthReply {
	r, ok := p.Last()
	return &redundancy.DbHealthReply{Status: redundancy.DbStatus{Reachable: r.Reachable, AsOf: r.AsOf, Err: r.Err}, Known: ok}
}

// dbProbeActor is one incarnation of the probe actor; its state that must
// survive a restart is in the DbProbe.
type dbProbeActor struct {
	p         *DbProbe
	gen       uint64
	stopTicks func()
}

func (a *dbProbeActor) Receive(c actor.Context) {
	p := a.p
	switch m := c.Message().(type) {
	case *actor.Started:
		p.mu.Lock()
		p.gen++
		a.gen = p.gen
		p.mu.Unlock()
		a.stopTicks = actors.Every(p.parent.Root(), p.cfg.Clock, c.Self(), p.cfg.Interval, dbTick{gen: a.gen})
		p.probe(c.Self()) // at once, the first incarnation and every restart
	case dbTick:
		if m.gen == a.gen {
			p.probe(c.Self())
		}
	case dbTimeout:
		p.timedOut(m.attempt)
	case dbSoon:
		p.soon(c.Self())
	case dbAnswer:
		p.answered(m)
	case *redundancy.DbHealthQuery, redundancy.DbHealthQuery:
		c.Respond(p.reply())
	case *actor.Restarting:
		// The call in flight, if any, is the new incarnation's to adopt.
		a.stopTicks()
	case *actor.Stopping:
		if a.stopTicks != nil {
			a.stopTicks()
		}
		p.mu.Lock()
		call := p.call
		p.mu.Unlock()
		if call != nil {
			call.timer.Stop()
			call.cancel()
		}
	}
}

// probe starts a Ping on its goroutine, or records that the previous one
// is still running past its timeout. Called by the actor.
func (p *DbProbe) probe(self *actor.PID) {
	now := p.cfg.Clock.Now()
	p.mu.Lock()
	if c := p.call; c != nil {
		if !c.timedOut { // its answer or its timeout is on the way (an adopted call)
			p.mu.Unlock()
			return
		}
		c.skipped = true
		p.mu.Unlock()
		p.record(DbProbeResult{AsOf: now,
			Err: fmt.Sprintf("previous probe still running after its %v timeout", p.cfg.Timeout)})
		return
	}
	if p.ctx.Err() != nil {
		p.mu.Unlock()
		return // stopping
	}
	p.attempt++
	p.begun = now
	ctx, cancel := context.WithCancel(p.ctx)
	c := &dbCall{attempt: p.attempt, started: now, cancel: cancel}
	root := p.parent.Root()
	c.timer = p.cfg.Clock.AfterFunc(p.cfg.Timeout, func() { root.Send(self, dbTimeout{attempt: c.attempt}) })
	p.call = c
	p.mu.Unlock()
	go func() {
		err := p.pinger.Ping(ctx)
		root.Send(self, dbAnswer{attempt: c.attempt, err: err})
	}()
}

// SoonGap is the least time between the start of one probe and a probe
// that ProbeSoon asks for: a caller failing in a loop costs the Config DB
// at most one extra probe per SoonGap.
const SoonGap = time.Second

// ProbeSoon asks for a probe now, out of the Interval's rhythm, because
// another part of this node saw a call on the Config DB fail, or succeed
// while the last verdict is "unreachable" (the lease store's, when
// Cluster:Lease:Provider is the Config DB). Without it, an outage that
// starts just after a probe is seen up to Interval + Timeout later (7 s
// with the defaults), which is longer than a split of the set takes to be
// decided. A request is ignored while a probe is running or within SoonGap
// of the start of the last one, and before Start; the next tick comes at
// its usual time. Safe for concurrent use; it does not block.
func (p *DbProbe) ProbeSoon() {
	p.mu.Lock()
	parent, pid := p.parent, p.pid
	p.mu.Unlock()
	if pid != nil {
		parent.Root().Send(pid, dbSoon{})
	}
}

// soon starts the probe ProbeSoon asked for, unless one is running or the
// last one started less than SoonGap ago. Called by the actor.
func (p *DbProbe) soon(self *actor.PID) {
	p.mu.Lock()
	busy := p.call != nil || (!p.begun.IsZero() && p.cfg.Clock.Since(p.begun) < SoonGap)
	p.mu.Unlock()
	if !busy {
		p.probe(self)
	}
}

// timedOut records the call in flight as unreachable at its timeout.
func (p *DbProbe) timedOut(attempt uint64) {
	p.mu.Lock()
	c := p.call
	if c == nil || c.attempt != attempt || c.timedOut {
		p.mu.Unlock()
		return // answered in time, or stale
	}
	c.timedOut = true
	stopping := p.ctx.Err() != nil
	p.mu.Unlock()
	c.cancel()
	if !stopping {
		p.record(DbProbeResult{AsOf: c.started.Add(p.cfg.Timeout), Err: fmt.Sprintf("no answer within %v", p.cfg.Timeout)})
	}
}

// answered records the answer of the call in flight, or discards it when
// its timeout already counted.
func (p *DbProbe) answered(m dbAnswer) {
	p.mu.Lock()
	c := p.call
	if c == nil || c.attempt != m.attempt {
		p.mu.Unlock()
		return // stale
	}
	p.call = nil
	stopping := p.ctx.Err() != nil
	p.mu.Unlock()
	c.timer.Stop()
	c.cancel()
	switch {
	case c.timedOut:
		p.discardLate(c, m.err)
	case stopping: // no verdict
	default:
		r := DbProbeResult{Reachable: m.err == nil, AsOf: p.cfg.Clock.Now()}
		if m.err != nil {
			r.Err = m.err.Error()
		}
		p.record(r)
	}
}

// discardLate logs the answer of a call that returned after its timeout:
// it is too old to count. A call that overran into the next tick is a
// driver ignoring its deadline, worth a warning; one that returned soon
// after its cancellation is routine (debug).
func (p *DbProbe) discardLate(late *dbCall, err error) {
	level := slog.LevelDebug
	if late.skipped {
		level = slog.LevelWarn
	}
	p.cfg.Logger.Log(context.Background(), level, lateAnswerMsg,
		"after", p.cfg.Clock.Since(late.started), "timeout", p.cfg.Timeout, "err", err)
}

const lateAnswerMsg = "config DB probe returned after its timeout; answer discarded"

// record stores r and notifies a change of Reachable.
func (p *DbProbe) record(r DbProbeResult) {
	p.mu.Lock()
	prev, had := p.last, p.have
	p.last, p.have = r, true
	p.mu.Unlock()
	if had && prev.Reachable == r.Reachable {
		return
	}
	if r.Reachable {
		p.cfg.Logger.Info("config DB reachable", "asOf", r.AsOf)
	} else {
		p.cfg.Logger.Warn("config DB unreachable", "asOf", r.AsOf, "err", r.Err)
	}
	if p.cfg.OnChange != nil {
		p.cfg.OnChange(r)
	}
}
