package node

import (
	"fmt"
	"math/rand/v2"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/phi"
)

// Phase is where a node is in its life.
type Phase uint8

// Phases.
const (
	// Idle: created, not started, or started with no seeds (waits for a
	// manual join).
	Idle Phase = iota + 1
	// SeedJoining: looking for a cluster through the seeds (InitJoin).
	SeedJoining
	// TryingToJoin: Join sent, waiting for Welcome.
	TryingToJoin
	// Initialized: a member of a cluster.
	Initialized
	// Stopped: shut down; ignores everything.
	Stopped
)

func (p Phase) String() string {
	return [...]string{"?", "Idle", "SeedJoining", "TryingToJoin", "Initialized", "Stopped"}[p]
}

// DropStats counts messages a node refused.
type DropStats struct {
	// WrongIncarnation: To.UID was not this node's uid (stale message for
	// an earlier process at this address).
	WrongIncarnation int
	// Misaddressed: To named another host:port.
	Misaddressed int
	// Quarantined: sent by an incarnation this node saw removed (it was
	// told so, at most once a second).
	Quarantined int
}

// QuarantineSize bounds the removed incarnations a node remembers.
const QuarantineSize = 256

// quarantine is the removed incarnations (Akka's quarantine): their
// messages are dropped and answered with a Down naming their own address,
// so that a process paused past its removal stops instead of running on.
type quarantine struct {
	set     map[m.UniqueAddress]bool
	order   []m.UniqueAddress
	noticed map[m.UniqueAddress]Instant
}

func (q *quarantine) add(u m.UniqueAddress) {
	if q.set == nil {
		q.set, q.noticed = map[m.UniqueAddress]bool{}, map[m.UniqueAddress]Instant{}
	}
	if q.set[u] {
		return
	}
	q.set[u] = true
	q.order = append(q.order, u)
	if len(q.order) > QuarantineSize {
		delete(q.set, q.order[0])
		delete(q.noticed, q.order[0])
		q.order = q.order[1:]
	}
}

// Node is one cluster member's membership state machine (Akka's
// ClusterCoreDaemon, heartbeat sender, downing provider and join processes
// in one value). It performs no I/O and reads no clock: the driver steps it
// with messages and ticks, passing the current Instant, and carries out the
// returned effects in order.
//
// A Node is not safe for concurrent use; one actor owns it.
type Node struct {
	cfg   Config
	now   Instant
	phase Phase
	state m.State
	vnode string
	out   []Effect

	seed   seedProcess
	join   joinAttempt
	manual *m.Address
	self   selfForm
	form   forming
	refuse refusals

	nextLeader, nextReap, nextHeartbeat, nextDowning Instant
	lastGossip                                       Instant
	viewChanged                                      Instant    // last install of another gossip version
	rng                                              *rand.Rand // gossip targets; seeded with the uid

	hb hbState
	fp fpState

	exitingConfirmed       []m.UniqueAddress
	exitingTasksInProgress bool
	selfDownCounter        int
	leaderActionCounter    int

	dn downState

	dropped DropStats
	quar    quarantine
}

// New returns an Idle node. It panics if cfg does not Validate: start-up
// validates the config first and fails with the message.
func New(cfg Config) *Node {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("node: invariant violated: invalid config reached New: %v", err))
	}
	n := &Node{
		cfg:   cfg,
		phase: Idle,
		state: m.State{Self: cfg.Self},
		vnode: m.VClockNode(cfg.Self),
		hb:    newHBState(),
		fp:    newFPState(),
		dn:    newDownState(),
		rng:   rand.New(rand.NewPCG(cfg.Self.UID, uint64(cfg.Self.Port))),
	}
	n.refuse.noted = -1
	return n
}

// Self is this node's unique address.
func (n *Node) Self() m.UniqueAddress { return n.cfg.Self }

// Phase reports the node's phase.
func (n *Node) Phase() Phase { return n.phase }

// State is the node's current membership view.
func (n *Node) State() m.State { return n.state }

// Dropped reports the refused-message counters.
func (n *Node) Dropped() DropStats { return n.dropped }

// Now is the Instant of the last Start, Step or Tick.
func (n *Node) Now() Instant { return n.now }

// Detector returns the failure detector for a monitored peer.
func (n *Node) Detector(peer m.UniqueAddress) (*phi.Detector, bool) {
	d, ok := n.hb.fd[peer]
	return d, ok
}

func (n *Node) begin(now Instant) {
	if now > n.now {
		n.now = now
	}
	n.out = nil
}

func (n *Node) end() []Effect {
	out := n.out
	n.out = nil
	return out
}

func (n *Node) send(msg Message)             { n.out = append(n.out, Send{Msg: msg}) }
func (n *Node) note(format string, a ...any) { n.noteKind(NoteDecision, format, a...) }
func (n *Node) noteKind(k NoteKind, format string, a ...any) {
	n.out = append(n.out, Note{Kind: k, Text: fmt.Sprintf(format, a...)})
}
func (n *Node) hdr(to m.UniqueAddress) Header { return Header{From: n.cfg.Self, To: to} }

// Start begins joining: the seed join process (or an immediate self-join if
// this node is its only seed), and arms the self-form window.
func (n *Node) Start(now Instant) []Effect {
	n.begin(now)
	if n.phase != Idle {
		return n.end()
	}
	n.lastGossip = n.now
	n.nextLeader = n.now + Instant(n.cfg.LeaderActionsInterval)
	n.nextReap = n.now + Instant(n.cfg.UnreachableReaperInterval)
	n.nextDowning = n.now + Instant(n.cfg.DowningInterval)
	n.nextHeartbeat = n.now + Instant(n.cfg.HeartbeatInterval)
	n.dn.resetStable(n.now, n.cfg.Downing.StableAfter)
	n.armSelfForm()
	n.form = forming{noted: -1}
	n.joinSeedNodes()
	return n.end()
}

// JoinTo joins the cluster of the node at addr (Cluster.Join) instead of
// the seeds: it asks that node with InitJoin (its uid is not known) and
// joins once it acknowledges, retrying like a seed join. When addr is this
// node's own address it forms a new cluster at once. It is ignored once the
// node is a member.
func (n *Node) JoinTo(now Instant, addr m.Address) []Effect {
	n.begin(now)
	if n.phase == Idle || n.phase == SeedJoining || n.phase == TryingToJoin {
		if addr == n.cfg.Self.Address() {
			n.joinTo(addr, n.cfg.Self.UID)
		} else {
			n.manual = &addr
			n.joinSeedNodes()
		}
	}
	return n.end()
}

// Step processes one message received at now.
func (n *Node) Step(now Instant, msg Message) []Effect {
	n.begin(now)
	if n.phase == Stopped {
		return n.end()
	}
	if !n.accept(msg) {
		return n.end()
	}
	n.dispatch(msg)
	return n.end()
}

// admitSender drops a message from a removed incarnation and tells it,
// at most once a second, that it is no longer a member: a Down naming its
// own address, which makes it down itself and stop.
func (n *Node) admitSender(from m.UniqueAddress) bool {
	if from == n.cfg.Self || !n.quar.set[from] {
		return true
	}
	n.dropped.Quarantined++
	if last, ok := n.quar.noticed[from]; !ok || n.now-last >= 1000 {
		n.quar.noticed[from] = n.now
		n.noteKind(NoteQuarantineNotice, "told the removed incarnation %v it is no longer a member", from)
		n.send(Down{Header: n.hdr(from), Node: from.Address()})
	}
	return false
}

// accept filters misaddressed and stale-incarnation messages.
func (n *Node) accept(msg Message) bool {
	to := msg.Route().To
	if to.Address() != n.cfg.Self.Address() {
		n.dropped.Misaddressed++
		return false
	}
	if to.UID == n.cfg.Self.UID {
		return n.admitSender(msg.Route().From)
	}
	if _, ok := msg.(InitJoin); ok && to.UID == 0 {
		return true
	}
	n.dropped.WrongIncarnation++
	return false
}

func (n *Node) dispatch(msg Message) {
	from := msg.Route().From
	if isHandshake(msg) {
		n.withdrawRefusal(from.Address())
	}
	switch msg := msg.(type) {
	case InitJoin:
		n.onInitJoin(from)
	case InitJoinAck:
		n.onInitJoinAck(from)
	case InitJoinNack:
		n.onInitJoinNack(from)
	case Join:
		if n.phase == Initialized {
			n.joining(from, msg.Roles, msg.ClusterID)
		}
	case Welcome:
		n.onWelcome(from, msg.Gossip)
	case GossipEnvelope:
		if n.phase == Initialized {
			n.receiveGossip(from, msg.Gossip)
		}
	case GossipStatus:
		if n.phase == Initialized {
			n.receiveGossipStatus(from, msg.Version)
		}
	case Leave:
		if n.phase == Initialized {
			n.leaving(msg.Node)
		}
	case Down:
		if n.phase == Initialized {
			n.downing(msg.Node)
		}
	case Heartbeat:
		n.send(HeartbeatRsp{Header: n.hdr(from), Seq: msg.Seq})
	case HeartbeatRsp:
		n.onHeartbeatRsp(from)
	case ExitingConfirmed:
		n.exitingConfirmed = appendUnique(n.exitingConfirmed, msg.Node)
	case ExitingCompleted:
		n.exitingCompleted()
	case SeedProbeResult:
		n.onSeedProbeResult(msg.AnyAccepted)
	case ConnectionLost:
		n.onConnectionLost(msg.Peer)
	case PeerProbeResult:
		n.onPeerProbeResult(msg.Peer, msg.Results)
	case LeaseResult:
		n.onLeaseResult(msg.Acquired)
	case FastPathLeaseResult:
		n.onFastPathLease(msg.Dead, msg.Acquired)
	case FormingLeaseResult:
		n.onFormingLease(msg.Acquired)
	case JoinRefused:
		n.onJoinRefused(msg.By, msg.Cause)
	}
}

// Tick runs the periodic tasks that are due at now: join retries, the
// self-form window, heartbeats, the unreachable reaper, gossip, leader
// actions and downing. Tick at least every 100 ms for accurate timing.
func (n *Node) Tick(now Instant) []Effect {
	n.begin(now)
	switch n.phase {
	case SeedJoining:
		n.tickSeedProcess()
	case TryingToJoin:
		n.tickTryingToJoin()
	}
	if n.phase != Initialized && n.phase != Stopped {
		n.tickSelfForm()
	}
	if n.phase != Initialized {
		return n.end()
	}
	n.tickHeartbeat()
	n.tickFastPath()
	if n.now >= n.nextReap {
		n.nextReap = n.now + Instant(n.cfg.UnreachableReaperInterval)
		n.reapUnreachable()
	}
	n.tickGossip()
	own := n.ownDowningTick()
	if n.now >= n.nextLeader {
		n.nextLeader = n.now + Instant(n.cfg.LeaderActionsInterval)
		n.leaderActions()
		if !own {
			n.tickDowning()
		}
	}
	if own && n.now >= n.nextDowning {
		n.nextDowning = n.now + Instant(n.cfg.DowningInterval)
		n.tickDowning()
	}
	return n.end()
}

// ownDowningTick reports whether the split-brain resolver runs on its own
// DowningInterval rather than with the leader actions.
func (n *Node) ownDowningTick() bool {
	return n.cfg.DowningInterval > 0 && n.cfg.Downing.Strategy != AutoDown && n.cfg.Downing.Strategy != NoDowning
}

// updateLatestGossip stamps a locally changed gossip with a new version
// seen only by this node (nobody while exiting), then installs it.
func (n *Node) updateLatestGossip(g m.Gossip) {
	g = g.Increment(n.vnode)
	if n.exitingTasksInProgress {
		g = g.ClearSeen()
	} else {
		g = g.OnlySeen(n.cfg.Self)
	}
	n.install(g)
}

// install replaces the gossip and publishes the difference.
func (n *Node) install(g m.Gossip) {
	if err := g.CheckInvariants(); err != nil {
		panic(fmt.Sprintf("node: invariant violated: gossip: %v", err))
	}
	old := n.state
	n.state.Gossip = g
	if g.Version.Compare(old.Gossip.Version) != m.Same {
		n.viewChanged = n.now
	}
	evs := m.Diff(old, n.state)
	for _, ev := range evs {
		n.out = append(n.out, Publish{Event: ev})
		if ev.Kind == m.MemberRemoved && ev.Member.Address != n.cfg.Self {
			n.quar.add(ev.Member.Address)
		}
	}
	n.hb.sync(n)
	n.fp.sync(g)
	n.dn.observe(n, evs)
}

func (n *Node) selfStatus() m.Status { return n.state.Gossip.StatusOf(n.cfg.Self) }

// shutdown stops the node for good.
func (n *Node) shutdown(reason ShutdownReason) {
	if n.phase == Stopped {
		return
	}
	n.phase = Stopped
	self, _ := n.state.SelfMember()
	n.out = append(n.out, Publish{Event: m.Event{Kind: m.SelfRemoved, Member: self}}, Shutdown{Reason: reason})
	if n.dn.holdingLease {
		n.out = append(n.out, ReleaseLease{Owner: n.leaseOwner()})
		n.dn.holdingLease = false
	}
}

func appendUnique(us []m.UniqueAddress, u m.UniqueAddress) []m.UniqueAddress {
	for _, x := range us {
		if x == u {
			return us
		}
	}
	return append(us, u)
}
