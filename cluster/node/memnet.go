package node

import (
	"fmt"
	"slices"
	"strings"

	"github.com/otopcua/otopcua/cluster/bootstrap"
	"github.com/otopcua/otopcua/cluster/downing"
	"github.com/otopcua/otopcua/cluster/fastpath"
	m "github.com/otopcua/otopcua/cluster/membership"
)

// MemPort is the cluster port every in-memory host listens on; hosts differ
// by name.
const MemPort = 2552

// Network is an in-memory network of Nodes driven by simulated time, for
// scenario tests and simulations. It plays the driver of every node: it
// ticks them, delivers their messages one step (StepMs) later, answers
// their probe and lease requests, and models what the protoactor transport
// does on a real network:
//
//   - a killed process: messages to it are held (for HoldFor ms) and
//     delivered to the next process started at the same address; its peers
//     get ConnectionLost; TCP probes are refused — after a linger, if one
//     is given, during which its listening socket still accepts (KillLingering);
//     a crash no connection event reports is KillQuiet;
//   - a connection that breaks while both processes live (BreakConnection):
//     the peers get ConnectionLost, probes are accepted;
//   - the crash fast path's probes as TCPProber makes them: up to
//     fastpath.MaxProbes connects, stopping at the first that is not
//     Refused, all made when the node asks and answered one step later;
//   - a partition: messages between groups vanish silently; probes time out;
//   - Cluster:Secret (Host.Secret): a host with a secret refuses a join
//     handshake message from a host with another (or none) and answers
//     the sender with JoinRefused; it drops every other message from it
//     (such a host is never a member);
//   - a lease store reachable by every host (Lease).
//
// A Network is not safe for concurrent use.
type Network struct {
	// StepMs is the simulation step: tick interval and message latency.
	StepMs int64
	// HoldFor is how long messages to a dead address are kept for the next
	// incarnation (protoactor's reconnect schedule, 2 s × 5).
	HoldFor int64
	// Lease is the shared lease-majority lease.
	Lease *downing.MemLease

	now      Instant
	hosts    map[string]*Host
	names    []string
	inflight []Message
	held     map[m.Address][]heldMsg
	group    map[string]int
	uidSeq   uint64
	log      []LogLine
	lost     int
	gossips  int                   // GossipEnvelope and GossipStatus sent
	refused  map[[2]string]Instant // last refusal line per (receiver, sender)
}

type heldMsg struct {
	at  Instant
	msg Message
}

// Host is one simulated process slot: a name (its host) and the Node of
// the process currently running there, if any.
type Host struct {
	Name string
	Cfg  Config
	Node *Node
	// Alive: a process is running (started and not killed or shut down).
	Alive bool
	// Exit is the reason of the last shutdown (0 if killed or running).
	Exit ShutdownReason
	// Secret models Cluster:Secret ("" for none), read at each delivery.
	Secret string
	// Frozen: the process is stopped (SIGSTOP): it neither ticks nor
	// receives; its port still accepts (the kernel's backlog), and what is
	// sent to it waits in frozenIn until Thaw.
	Frozen   bool
	frozenIn []Message
	// lingerUntil: a killed process's listening socket accepts until then
	// (KillLingering).
	lingerUntil Instant
}

// LogLine is one thing that happened on a host: a published event, a note
// from the node, or a lifecycle line from the network.
type LogLine struct {
	At    Instant
	Host  string
	Event *m.Event
	Text  string
}

func (l LogLine) String() string {
	s := l.Text
	if l.Event != nil {
		s = l.Event.String()
	}
	return fmt.Sprintf("%d.%ds %s: %s", l.At/1000, (l.At%1000)/100, l.Host, s)
}

// NewNetwork returns an empty network at time 0.
func NewNetwork() *Network {
	return &Network{
		StepMs:  100,
		HoldFor: 10_000,
		Lease:   &downing.MemLease{},
		hosts:   map[string]*Host{},
		held:    map[m.Address][]heldMsg{},
		refused: map[[2]string]Instant{},
	}
}

// Now is the simulated time.
func (nw *Network) Now() Instant { return nw.now }

// Address is the cluster address of a host name.
func Address(name string) m.Address { return m.Address{Host: name, Port: MemPort} }

// AddNode adds a host with default settings (auto-down, self-form 10 s)
// adjusted by configure; it is not started.
func (nw *Network) AddNode(name string, configure func(*Config)) *Host {
	if _, ok := nw.hosts[name]; ok {
		panic(fmt.Sprintf("memnet: host %q added twice", name))
	}
	cfg := DefaultConfig(m.UniqueAddress{Host: name, Port: MemPort}, nil)
	if configure != nil {
		configure(&cfg)
	}
	h := &Host{Name: name, Cfg: cfg}
	nw.hosts[name] = h
	nw.names = append(nw.names, name)
	return h
}

// Host returns a host by name.
func (nw *Network) Host(name string) *Host {
	h, ok := nw.hosts[name]
	if !ok {
		panic(fmt.Sprintf("memnet: unknown host %q", name))
	}
	return h
}

// Hosts returns all hosts in the order they were added.
func (nw *Network) Hosts() []*Host {
	out := make([]*Host, len(nw.names))
	for i, n := range nw.names {
		out[i] = nw.hosts[n]
	}
	return out
}

// Start starts a process on the host with a fresh uid (a restart when a
// process ran there before) and begins its join.
func (nw *Network) Start(name string) {
	h := nw.Host(name)
	if h.Alive {
		panic(fmt.Sprintf("memnet: host %q already running", name))
	}
	nw.uidSeq++
	h.Cfg.Self.UID = nw.uidSeq
	h.Node = New(h.Cfg)
	h.Alive, h.Exit = true, 0
	nw.logf(name, "started as %v", h.Cfg.Self)
	nw.process(h, h.Node.Start(nw.now))
	addr := Address(name)
	for _, hm := range nw.held[addr] {
		if int64(nw.now-hm.at) <= nw.HoldFor {
			nw.inflight = append(nw.inflight, hm.msg)
		}
	}
	delete(nw.held, addr)
}

// Listen makes the host a bare TCP listener that speaks no cluster
// protocol: probes are accepted, messages vanish.
func (nw *Network) Listen(name string) {
	h := nw.Host(name)
	if h.Alive {
		panic(fmt.Sprintf("memnet: host %q already running", name))
	}
	h.Node, h.Alive, h.Exit = nil, true, 0
	nw.logf(name, "bare listener")
}

// Kill stops the host's process abruptly (SIGKILL): its peers see the
// connection drop; nothing is sent on its behalf.
func (nw *Network) Kill(name string) { nw.kill(name, 0, true) }

// KillLingering is Kill whose listening socket still accepts connections
// for ms after the peers saw the connection drop (a process killed by
// SIGKILL closes its connections a moment before its listener).
func (nw *Network) KillLingering(name string, ms int64) { nw.kill(name, ms, true) }

// KillQuiet is Kill without the connection event: only the peers' failure
// detectors notice (no connection was open to report the break).
func (nw *Network) KillQuiet(name string) { nw.kill(name, 0, false) }

func (nw *Network) kill(name string, linger int64, tell bool) {
	h := nw.Host(name)
	if !h.Alive {
		return
	}
	h.Alive, h.Frozen, h.frozenIn = false, false, nil
	h.lingerUntil = nw.now + Instant(linger)
	switch {
	case !tell:
		nw.logf(name, "killed (no connection event)")
	case linger > 0:
		nw.logf(name, "killed (its port accepts for %dms more)", linger)
	default:
		nw.logf(name, "killed")
	}
	if tell {
		nw.connectionLost(h)
	}
}

// BreakConnection makes the connections to the host's running process
// break (its peers get ConnectionLost) while the process lives on.
func (nw *Network) BreakConnection(name string) {
	h := nw.Host(name)
	if !h.Alive || h.Node == nil {
		return
	}
	nw.logf(name, "connections broken")
	nw.connectionLost(h)
}

// Freeze stops the host's process without killing it (SIGSTOP).
func (nw *Network) Freeze(name string) {
	h := nw.Host(name)
	if h.Alive && !h.Frozen {
		h.Frozen = true
		nw.logf(name, "frozen")
	}
}

// Thaw resumes a frozen process (SIGCONT): it receives what was sent to it
// meanwhile, then ticks again, at the current time.
func (nw *Network) Thaw(name string) {
	h := nw.Host(name)
	if !h.Frozen {
		return
	}
	h.Frozen = false
	nw.logf(name, "thawed")
	msgs := h.frozenIn
	h.frozenIn = nil
	for _, msg := range msgs {
		nw.deliver(msg)
	}
}

// Restart kills the host's process if it runs and starts a new one.
func (nw *Network) Restart(name string) {
	nw.Kill(name)
	nw.Start(name)
}

// Partition splits the network into groups of host names; hosts not named
// form one more group together.
func (nw *Network) Partition(groups ...[]string) {
	nw.group = map[string]int{}
	for i, g := range groups {
		for _, n := range g {
			nw.group[n] = i + 1
		}
	}
}

// Heal removes every partition.
func (nw *Network) Heal() { nw.group = nil }

func (nw *Network) partitioned(a, b string) bool {
	return nw.group != nil && a != b && nw.group[a] != nw.group[b]
}

// Lost counts messages lost to partitions or dead hosts.
func (nw *Network) Lost() int { return nw.lost }

// Send injects a message (for example a user Leave or Down) for delivery
// at the next step.
func (nw *Network) Send(msg Message) { nw.inflight = append(nw.inflight, msg) }

// Leave asks the host's own node to leave the cluster.
func (nw *Network) Leave(name string) {
	h := nw.Host(name)
	nw.Send(Leave{Header: Local(h.Cfg.Self), Node: h.Cfg.Self.Address()})
}

// Down asks the node on host by to down the node on host target.
func (nw *Network) Down(by, target string) {
	h := nw.Host(by)
	nw.Send(Down{Header: Local(h.Cfg.Self), Node: Address(target)})
}

// Advance runs the simulation for d ms in StepMs steps.
func (nw *Network) Advance(d int64) {
	for end := nw.now + Instant(d); nw.now < end; {
		nw.StepOnce()
	}
}

// StepOnce advances time by one step: delivers the messages in flight, then
// ticks every running node.
func (nw *Network) StepOnce() {
	nw.now += Instant(nw.StepMs)
	nw.Deliver()
	for _, name := range nw.names {
		if h := nw.hosts[name]; h.Alive && h.Node != nil && !h.Frozen {
			nw.process(h, h.Node.Tick(nw.now))
		}
	}
}

// Deliver delivers the messages currently in flight without advancing
// time; messages they cause are delivered at the next step.
func (nw *Network) Deliver() {
	msgs := nw.inflight
	nw.inflight = nil
	for _, msg := range msgs {
		nw.deliver(msg)
	}
}

// InFlight returns the messages waiting for delivery, in order.
func (nw *Network) InFlight() []Message { return slices.Clone(nw.inflight) }

func (nw *Network) hostAt(a m.Address) *Host {
	if a.Port != MemPort {
		return nil
	}
	return nw.hosts[a.Host]
}

func (nw *Network) deliver(msg Message) {
	r := msg.Route()
	to := nw.hostAt(r.To.Address())
	if to == nil {
		nw.lost++
		return
	}
	if !to.Alive || to.Node == nil {
		nw.lost++
		if to.Alive {
			return
		}
		if nw.HoldFor > 0 && len(nw.held[r.To.Address()]) < 1000 {
			nw.held[r.To.Address()] = append(nw.held[r.To.Address()], heldMsg{at: nw.now, msg: msg})
		}
		return
	}
	from := nw.hostAt(r.From.Address())
	if from != nil && nw.partitioned(from.Name, to.Name) {
		nw.lost++
		return
	}
	if to.Frozen {
		if len(to.frozenIn) < 10000 {
			to.frozenIn = append(to.frozenIn, msg)
		}
		return
	}
	if from != nil && from != to && to.Secret != "" && from.Secret != to.Secret {
		nw.refuse(from, to, msg)
		return
	}
	nw.process(to, to.Node.Step(nw.now, msg))
}

// refuse is the receiver's Cluster:Secret check failing: a handshake
// message is answered with JoinRefused, anything else dropped.
func (nw *Network) refuse(from, to *Host, msg Message) {
	nw.lost++
	if !isHandshake(msg) {
		return
	}
	cause := bootstrap.CauseWrongSecret
	if from.Secret == "" {
		cause = bootstrap.CauseMissingProof
	}
	key := [2]string{to.Name, from.Name}
	if last, ok := nw.refused[key]; !ok || nw.now-last >= 60_000 {
		nw.refused[key] = nw.now
		nw.logf(to.Name, "refused %s from %s: %v (logged once a minute)", msgName(msg), from.Name, cause)
	}
	sender := msg.Route().From
	nw.Send(JoinRefused{Header: Local(sender), By: to.Cfg.Self.Address(), Cause: cause})
}

func msgName(msg Message) string {
	name := fmt.Sprintf("%T", msg)
	return name[strings.LastIndex(name, ".")+1:]
}

func (nw *Network) process(h *Host, effects []Effect) {
	self := h.Cfg.Self
	for _, e := range effects {
		switch e := e.(type) {
		case Send:
			switch e.Msg.(type) {
			case GossipEnvelope, GossipStatus:
				nw.gossips++
			}
			nw.inflight = append(nw.inflight, e.Msg)
		case Publish:
			ev := e.Event
			nw.log = append(nw.log, LogLine{At: nw.now, Host: h.Name, Event: &ev})
		case Note:
			nw.logf(h.Name, "%s", e.Text)
		case ProbeSeeds:
			accepted := false
			for _, s := range e.Seeds {
				accepted = accepted || nw.probe(h.Name, s) == fastpath.Accepted
			}
			nw.Send(SeedProbeResult{Header: Local(self), AnyAccepted: accepted})
		case ProbePeer:
			nw.Send(PeerProbeResult{Header: Local(self), Peer: e.Peer, Results: nw.probePeer(h.Name, e.Peer.Address())})
		case FastPathVerdict:
			nw.logf(h.Name, "%s", describeVerdict(e))
		case AcquireLease:
			nw.Send(LeaseResult{Header: Local(self), Acquired: nw.Lease.Acquire(e.Owner)})
		case ReleaseLease:
			nw.Lease.Release(e.Owner)
		case AcquireFastPathLease:
			// A lease is never taken from a holder that runs (a refusing
			// port may be a firewall's reset in front of it); a dead
			// holder's runs out at once here (the network has no TTL).
			ok := nw.Lease.Acquire(e.Owner) || !nw.running(e.Dead) && nw.Lease.Evict(e.Dead.String(), e.Owner)
			nw.Send(FastPathLeaseResult{Header: Local(self), Dead: e.Dead, Acquired: ok})
		case AcquireFormingLease:
			// The node's lease keeper frees a forming lease once the set is
			// whole; the network, which has no keeper, frees it at once.
			ok := nw.Lease.Acquire(e.Owner)
			if ok {
				nw.Lease.Release(e.Owner)
			}
			nw.Send(FormingLeaseResult{Header: Local(self), Acquired: ok})
		case StartExiting:
			nw.Send(ExitingCompleted{Header: Local(self)})
		case Shutdown:
			if h.Alive && h.Node != nil && h.Node.Self() == self {
				h.Alive, h.Exit = false, e.Reason
				nw.logf(h.Name, "process exits (%v)", e.Reason)
				nw.connectionLost(h)
			}
		}
	}
}

// probePeer makes the crash fast path's connects from host `from` to addr,
// stopping at the first that is not Refused.
func (nw *Network) probePeer(from string, addr m.Address) []fastpath.ProbeResult {
	var out []fastpath.ProbeResult
	for range fastpath.MaxProbes {
		r := nw.probe(from, addr)
		out = append(out, r)
		if r != fastpath.Refused {
			break
		}
	}
	return out
}

// describeVerdict is the log line of a FastPathVerdict.
func describeVerdict(v FastPathVerdict) string {
	how := ""
	if v.Trigger != ByConnection {
		how = " (" + v.Trigger.String() + ")"
	}
	return fmt.Sprintf("crash fast path for %v%s: probes %v: %v", v.Peer, how, v.Probes, v.Verdict)
}

// probe is a TCP connect from host `from` to addr.
func (nw *Network) probe(from string, addr m.Address) fastpath.ProbeResult {
	to := nw.hostAt(addr)
	switch {
	case to == nil:
		return fastpath.Refused
	case nw.partitioned(from, to.Name):
		return fastpath.Timeout // the partition drops the SYN
	case to.Alive || nw.now < to.lingerUntil:
		return fastpath.Accepted
	default:
		return fastpath.Refused
	}
}

// connectionLost tells the running peers on the same side of any partition
// that h's process is gone.
func (nw *Network) connectionLost(h *Host) {
	for _, name := range nw.names {
		p := nw.hosts[name]
		if p == h || !p.Alive || p.Node == nil || nw.partitioned(name, h.Name) {
			continue
		}
		nw.Send(ConnectionLost{Header: Local(p.Cfg.Self), Peer: h.Cfg.Self})
	}
}

func (nw *Network) logf(host, format string, a ...any) {
	nw.log = append(nw.log, LogLine{At: nw.now, Host: host, Text: fmt.Sprintf(format, a...)})
}

// TakeLog returns and clears the log.
func (nw *Network) TakeLog() []LogLine {
	l := nw.log
	nw.log = nil
	return l
}

// Running returns the hosts with a running node, in order.
func (nw *Network) Running() []*Host {
	return slices.DeleteFunc(nw.Hosts(), func(h *Host) bool { return !h.Alive || h.Node == nil })
}

// running reports whether the incarnation u runs (a process at its address
// with its uid, not killed or shut down; a frozen one runs).
func (nw *Network) running(u m.UniqueAddress) bool {
	h := nw.hostAt(u.Address())
	return h != nil && h.Alive && h.Node != nil && h.Node.Self() == u
}
