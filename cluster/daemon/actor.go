package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/bootstrap"
	"github.com/otopcua/otopcua/cluster/fastpath"
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/wire"
)

// Local messages of the daemon actor (never sent over the network).
type (
	tickMsg   struct{}
	connLost  struct{ peer m.Address }
	probeDone struct {
		peer    m.UniqueAddress
		results []fastpath.ProbeResult
	}
	seedProbeDone struct{ anyAccepted bool }
	leaseDone     struct{ acquired bool }
	fastLeaseDone struct {
		peer     m.UniqueAddress
		acquired bool
	}
	formingLeaseDone struct{ acquired bool }
	exitingDone      struct{}
	leaveCmd         struct{}
	downCmd          struct{ addr m.Address }
	joinCmd          struct{ addr m.Address }
	tlsRefusedCmd    struct{ addr m.Address }
	lingerDone       struct{}
)

// daemonActor owns the node. Every field is touched only on the actor's
// goroutine.
type daemonActor struct {
	d     *Daemon
	n     *node.Node
	epoch time.Time
	log   *slog.Logger

	events    []m.Event
	later     []func() // run once the state of this message is published
	wasMember bool
	leave     bool
	stopped   *node.ShutdownReason
	crashed   bool
	auth      joinAuth
}

func newActor(d *Daemon) *daemonActor {
	return &daemonActor{
		d:     d,
		n:     node.New(d.opts.Node),
		epoch: d.epoch,
		log:   d.opts.Logger,
		auth:  newJoinAuth(d.opts.Secret),
	}
}

func (a *daemonActor) now() node.Instant     { return now(a.d.opts.Clock, a.epoch) }
func (a *daemonActor) self() m.UniqueAddress { return a.d.self }
func (a *daemonActor) local() node.Header    { return node.Local(a.d.self) }
func (a *daemonActor) step(msg node.Message) { a.run(a.n.Step(a.now(), msg)) }
func (a *daemonActor) tell(msg any)          { a.d.root.Send(a.d.pid, msg) }

// Receive is the actor loop: one message at a time.
func (a *daemonActor) Receive(ctx actor.Context) {
	if a.crashed {
		return
	}
	defer a.recoverCrash()
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		a.run(a.n.Start(a.now()))
	case tickMsg:
		t := a.now()
		a.run(a.n.Tick(t))
		a.watchSeeds(t)
		a.d.lastTick.Store(int64(t))
	case connLost:
		a.onConnLost(msg)
	case probeDone:
		a.step(node.PeerProbeResult{Header: a.local(), Peer: msg.peer, Results: msg.results})
	case seedProbeDone:
		a.step(node.SeedProbeResult{Header: a.local(), AnyAccepted: msg.anyAccepted})
	case leaseDone:
		a.step(node.LeaseResult{Header: a.local(), Acquired: msg.acquired})
	case fastLeaseDone:
		a.step(node.FastPathLeaseResult{Header: a.local(), Dead: msg.peer, Acquired: msg.acquired})
	case formingLeaseDone:
		a.step(node.FormingLeaseResult{Header: a.local(), Acquired: msg.acquired})
	case exitingDone:
		a.step(node.ExitingCompleted{Header: a.local()})
	case leaveCmd:
		a.onLeave()
	case downCmd:
		a.step(node.Down{Header: a.local(), Node: msg.addr})
	case joinCmd:
		a.run(a.n.JoinTo(a.now(), msg.addr))
	case tlsRefusedCmd:
		a.step(node.JoinRefused{Header: a.local(), By: msg.addr, Cause: bootstrap.CauseTLS})
	case lingerDone:
		a.d.markDone(a.result())
	case proto.Message:
		a.onInbound(msg)
	default:
		return // protoactor's system messages
	}
	a.publish()
}

// recoverCrash turns a panic (a broken invariant in the core) into a
// stopped daemon: the node's state can no longer be trusted, so nothing
// more is processed and the host exits for the supervisor to restart it.
func (a *daemonActor) recoverCrash() {
	p := recover()
	if p == nil {
		return
	}
	a.crashed = true
	err := fmt.Errorf("cluster daemon crashed: %v", p)
	a.log.Error("cluster daemon crashed; this node stops", "err", err, "stack", string(debug.Stack()))
	r := a.result()
	r.Err = err
	a.d.hub.update(a.n.State(), Info{Phase: node.Stopped, Finished: true, Result: r}, a.n.ProvenDead(), nil)
	a.d.markDone(r)
}

func (a *daemonActor) result() Result {
	r := Result{LeaveRequested: a.leave}
	if a.stopped != nil {
		r.Reason = *a.stopped
	}
	return r
}

// publish hands the state and the events of this message to the hub.
func (a *daemonActor) publish() {
	st := a.n.State()
	if !a.wasMember && a.n.Phase() == node.Initialized {
		a.wasMember = true
		l, _ := st.Leader()
		a.log.Info(LogJoined, "self", a.self().NodeID(), "uid", uidText(a.self()),
			"formed", len(st.Gossip.Members) == 1, "members", len(st.Gossip.Members), "leader", l.NodeID())
	}
	info := Info{Phase: a.n.Phase(), Finished: a.stopped != nil || a.crashed}
	if info.Finished {
		info.Result = a.result()
	}
	a.d.hub.update(st, info, a.n.ProvenDead(), a.events)
	a.events = nil
	for _, f := range a.later {
		f()
	}
	a.later = nil
}

// onInbound filters a received message and steps it.
func (a *daemonActor) onInbound(pm proto.Message) {
	c := &a.d.stats
	c.received.Add(1)
	if r, ok := pm.(*wire.JoinRefused); ok {
		a.onJoinRefused(r)
		return
	}
	msg, err := wire.FromWire(pm)
	if err != nil {
		c.invalid.Add(1)
		a.log.Debug("cluster message dropped: invalid", "type", fmt.Sprintf("%T", pm), "err", err)
		return
	}
	h := msg.Route()
	self := a.self()
	switch {
	case h.To.Address() != self.Address():
		c.misaddressed.Add(1)
		return
	case h.To.UID != self.UID && (h.To.UID != 0 || !isInitJoin(msg)):
		c.wrongIncarnation.Add(1)
		a.log.Debug("cluster message dropped: for another incarnation", "type", fmt.Sprintf("%T", msg),
			"from", h.From.String(), "to", h.To.String())
		return
	case !a.admitProtocol(pm, h.From), !a.admit(pm, h):
		return
	}
	switch msg.(type) {
	case node.Leave, node.Down:
		if !a.n.State().Gossip.HasMember(h.From) {
			c.unknownSender.Add(1)
			a.log.Warn("cluster message dropped: Leave/Down from a node that is not a member", "from", h.From.String())
			return
		}
	}
	q := a.n.Dropped().Quarantined
	a.step(msg)
	if a.n.Dropped().Quarantined > q {
		c.quarantined.Add(1) // a removed incarnation: the core told it so
		return
	}
	if caughtUp(msg, a.n.State().Gossip.Version) {
		a.d.heard.Store(h.From, a.d.opts.Clock.Now())
	}
}

// caughtUp reports whether, after stepping msg, this node has its
// sender's view of the cluster: msg is a full gossip (merged), or a gossip
// status whose version this node's gossip (ours) already includes.
func caughtUp(msg node.Message, ours m.VectorClock) bool {
	switch msg := msg.(type) {
	case node.GossipEnvelope:
		return true
	case node.GossipStatus:
		o := msg.Version.Compare(ours)
		return o == m.Same || o == m.Before
	}
	return false
}

func isInitJoin(msg node.Message) bool {
	_, ok := msg.(node.InitJoin)
	return ok
}

// run carries out the core's effects in order.
func (a *daemonActor) run(effects []node.Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case node.Send:
			a.send(e.Msg)
		case node.Publish:
			a.onEvent(e.Event)
		case node.Note:
			a.onNote(e)
		case node.ProbeSeeds:
			a.probeSeeds(e.Seeds)
		case node.ProbePeer:
			a.probePeer(e.Peer)
		case node.FastPathVerdict:
			a.log.Info("cluster crash fast path", "member", e.Peer.NodeID(), "uid", uidText(e.Peer), "trigger", e.Trigger.String(),
				"probes", fmt.Sprint(e.Probes), "verdict", e.Verdict.String())
		case node.AcquireLease:
			go func() { a.tell(leaseDone{a.d.opts.Lease.Acquire(e.Owner)}) }()
		case node.ReleaseLease:
			go a.d.opts.Lease.Release(e.Owner)
		case node.AcquireFastPathLease:
			a.acquireFastPathLease(e)
		case node.AcquireFormingLease:
			a.acquireFormingLease(e)
		case node.StartExiting:
			a.startExiting()
		case node.Shutdown:
			a.onShutdown(e.Reason)
		}
	}
}

// acquireFastPathLease runs the fast path's lease acquisition on a
// goroutine (Options.FastPathLease, else the plain lease) and steps the
// result.
func (a *daemonActor) acquireFastPathLease(e node.AcquireFastPathLease) {
	a.log.Info("cluster crash fast path: acquiring the lease before downing a member whose cluster port refuses connections",
		"member", e.Dead.NodeID(), "uid", uidText(e.Dead))
	fast, plain := a.d.opts.FastPathLease, a.d.opts.Lease
	go func() {
		var ok bool
		if fast != nil {
			ok = fast(e.Dead)
		} else {
			ok = plain.Acquire(e.Owner)
		}
		a.tell(fastLeaseDone{peer: e.Dead, acquired: ok})
	}()
}

// acquireFormingLease runs the lease acquisition before this node forms a
// cluster on itself on a goroutine (Options.FormingLease, else the plain
// lease) and steps the result.
func (a *daemonActor) acquireFormingLease(e node.AcquireFormingLease) {
	forming, plain := a.d.opts.FormingLease, a.d.opts.Lease
	go func() {
		var ok bool
		switch {
		case forming != nil:
			ok = forming()
		case plain != nil:
			ok = plain.Acquire(e.Owner)
		}
		a.tell(formingLeaseDone{acquired: ok})
	}()
}

func (a *daemonActor) send(msg node.Message) {
	w, err := wire.ToWire(msg)
	if err != nil {
		a.log.Error("cluster: the core asked to send a local message; dropped", "err", err)
		return
	}
	wire.Stamp(w, a.d.opts.Protocol)
	a.prove(w)
	to := msg.Route().To.Address()
	if to == a.self().Address() {
		a.tell(w) // not produced by the core; kept correct anyway
		return
	}
	a.d.opts.Transport.Send(to, w)
}

func (a *daemonActor) onNote(n node.Note) {
	switch n.Kind {
	case node.NoteSelfFormed:
		a.log.Warn(LogSelfFormed, "detail", n.Text)
	case node.NoteNewIncarnation:
		a.log.Warn(LogNewIncarnation, "detail", n.Text)
	case node.NoteQuarantineNotice:
		a.log.Info("cluster told a removed incarnation it is no longer a member", "detail", n.Text)
	case node.NoteFastPathDown:
		a.log.Warn("cluster crash fast path: downing a member whose cluster port refuses connections", "detail", n.Text)
	case node.NoteFastPathLease, node.NoteFormingLease:
		a.log.Debug("cluster decision", "detail", n.Text)
	case node.NoteFastPathNoLease:
		a.log.Warn("cluster crash fast path: the lease was not acquired; the split-brain strategy decides", "detail", n.Text)
	case node.NoteFormingHeld:
		a.log.Warn("cluster: "+n.Text, "self", a.self().NodeID())
	case node.NoteNotFormingAlone:
		a.log.Warn("cluster: "+n.Text, "self", a.self().NodeID(),
			"hint", "this node keeps asking to join; give it the Cluster:Secret and Cluster:Tls of the running nodes and restart it")
	default:
		a.log.Info("cluster decision", "detail", n.Text)
	}
}

func memberAttrs(mb m.Member) []any {
	return []any{"member", mb.Address.NodeID(), "uid", uidText(mb.Address), "status", mb.Status.String(),
		"roles", mb.Roles, "clusterId", mb.ClusterID}
}

func (a *daemonActor) onEvent(ev m.Event) {
	a.events = append(a.events, ev)
	mb := ev.Member
	switch ev.Kind {
	case m.MemberJoined:
		a.log.Info("cluster member joining", memberAttrs(mb)...)
	case m.MemberWeaklyUp:
		a.log.Info("cluster member WeaklyUp", memberAttrs(mb)...)
	case m.MemberUp:
		a.log.Info(LogMemberUp, append(memberAttrs(mb), "upNumber", mb.UpNumber)...)
	case m.MemberLeft:
		a.log.Info(LogLeaving, memberAttrs(mb)...)
	case m.MemberExited:
		a.log.Info("cluster member exiting", memberAttrs(mb)...)
	case m.MemberDowned:
		a.log.Warn(LogDowned, memberAttrs(mb)...)
	case m.MemberRemoved:
		a.log.Info(LogRemoved, append(memberAttrs(mb), "previousStatus", ev.PreviousStatus.String())...)
	case m.UnreachableMember:
		a.log.Warn(LogUnreachable, memberAttrs(mb)...)
	case m.ReachableMember:
		a.log.Info(LogReachableAgain, memberAttrs(mb)...)
	case m.LeaderChanged:
		a.log.Info("cluster leader changed", "leader", leaderName(ev))
	case m.RoleLeaderChanged:
		a.log.Debug("cluster role leader changed", "role", ev.Role, "leader", leaderName(ev))
	case m.SelfDowned:
		a.log.Warn("cluster this node was downed", "self", a.self().NodeID())
	}
}

func leaderName(ev m.Event) string {
	if !ev.HasLeader {
		return ""
	}
	return ev.Leader.NodeID()
}

func (a *daemonActor) probeSeeds(seeds []m.Address) {
	ctx, prober := a.d.ctx, a.d.opts.Prober
	go func() { a.tell(seedProbeDone{prober.AnyAccepts(ctx, seeds, SeedProbeTimeout)}) }()
}

// onConnLost maps a broken connection to the member at that address.
func (a *daemonActor) onConnLost(c connLost) {
	mb, ok := a.n.State().Gossip.MemberAt(c.peer)
	if !ok || mb.Address == a.self() {
		return
	}
	a.log.Debug("cluster connection lost", "member", c.peer.String())
	a.step(node.ConnectionLost{Header: a.local(), Peer: mb.Address})
}

// probePeer runs the core's ProbePeer on a goroutine (the Prober's
// connects, each bounded by its timeout) and steps the results back. The
// core decides; the actor keeps nothing about the probe.
func (a *daemonActor) probePeer(u m.UniqueAddress) {
	ctx, prober := a.d.ctx, a.d.opts.Prober
	go func() { a.tell(probeDone{peer: u, results: prober.ProbePeer(ctx, u.Address())}) }()
}

func (a *daemonActor) startExiting() {
	a.log.Info("cluster exiting: running the leave tasks", "tasks", len(a.d.opts.ExitingTasks))
	tasks, timeout, parent := a.d.opts.ExitingTasks, a.d.opts.ExitingTimeout, a.d.ctx
	log := a.log
	// started after publish, so that the tasks see this node Exiting
	a.later = append(a.later, func() { go a.runExitingTasks(tasks, timeout, parent, log) })
}

func (a *daemonActor) runExitingTasks(tasks []func(context.Context) error, timeout time.Duration, parent context.Context, log *slog.Logger) {
	{
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		for i, task := range tasks {
			if err := task(ctx); err != nil {
				log.Warn("cluster leave task failed; leaving anyway", "task", i, "err", err)
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				log.Warn("cluster leave tasks timed out; leaving anyway", "timeout", timeout.String())
				break
			}
		}
		a.tell(exitingDone{})
	}
}

func (a *daemonActor) onLeave() {
	if a.leave || a.stopped != nil {
		return
	}
	a.leave = true
	if a.n.Phase() != node.Initialized || !a.n.State().Gossip.HasMember(a.self()) {
		a.log.Info("cluster leave requested before this node joined; stopping", "self", a.self().NodeID())
		a.finish(node.ReasonLeft)
		return
	}
	a.log.Info("cluster leave requested", "self", a.self().NodeID())
	a.step(node.Leave{Header: a.local(), Node: a.self().Address()})
}

func (a *daemonActor) onShutdown(r node.ShutdownReason) {
	switch r {
	case node.ReasonLeft:
		a.log.Info(LogStopped, "self", a.self().NodeID(), "reason", r.String())
	default:
		a.log.Warn(LogStopped, "self", a.self().NodeID(), "reason", r.String())
	}
	a.finish(r)
}

// finish records the reason and reports Done after the linger.
func (a *daemonActor) finish(r node.ShutdownReason) {
	if a.stopped != nil {
		return
	}
	a.stopped = &r
	if a.d.opts.Linger < 0 {
		a.d.markDone(a.result())
		return
	}
	a.d.opts.Clock.AfterFunc(a.d.opts.Linger, func() { a.tell(lingerDone{}) })
}

// uidText renders a uid for logs: as a string, since JSON numbers above
// 2^53 lose precision in many readers.
func uidText(u m.UniqueAddress) string { return strconv.FormatUint(u.UID, 10) }
