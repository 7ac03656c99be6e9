package node

import (
	"slices"

	"github.com/otopcua/otopcua/cluster/bootstrap"
	m "github.com/otopcua/otopcua/cluster/membership"
)

// seedProcess is Akka's FirstSeedNodeProcess (first: this node is the first
// seed) or JoinSeedNodeProcess.
type seedProcess struct {
	active    bool
	first     bool
	remaining []m.Address // first seed: seeds that have not answered Nack
	others    []m.Address // other seeds to ask
	started   Instant     // first seed: seed-node-timeout runs from here
	next      Instant     // next InitJoin round
	attempts  int
}

// Join retry schedule: a node looking for its cluster asks the seeds again
// (InitJoin) — and the first seed asks the seeds that have not answered —
// after JoinRetryFirst, then after twice as long each time, at most
// JoinRetryMax apart. Akka asks every second: when a cluster of many nodes
// starts at once, the seeds come up a few hundred ms apart and a second's
// wait is most of the formation time; the back-off keeps a node whose
// seeds are down from asking more than twice a second.
const (
	JoinRetryFirst Instant = 100
	JoinRetryMax   Instant = 500
)

// joinRetryAfter is the wait before asking again after attempt (≥ 1)
// rounds of InitJoin: JoinRetryFirst × 2^(attempt−1), at most JoinRetryMax.
func joinRetryAfter(attempt int) Instant {
	d := JoinRetryFirst
	for i := 1; i < attempt && d < JoinRetryMax; i++ {
		d *= 2
	}
	return min(d, JoinRetryMax)
}

type joinAttempt struct {
	with     m.Address
	to       m.UniqueAddress
	deadline Instant // give up and restart the seed process
	resend   Instant // send the Join again
}

// joinResend is how often a Join without a Welcome is sent again. A node
// restarted at its old address is admitted only once its previous
// incarnation is removed (about a second after it is downed); asking again
// every second admits it then instead of after retry-unsuccessful-join-after.
const joinResend Instant = 1000

type selfForm struct {
	armed   bool
	start   Instant
	probing bool
}

// forming is a formation on this node alone waiting for the lease
// (lease-majority): by the first seed's rule or the self-form fallback.
type forming struct {
	waiting  bool
	fallback bool // the self-form fallback asked (else the first seed's rule)
	// noted is when the refusal was last said (rate limited like a
	// join refusal's line); -1 never.
	noted int64
}

// seeds is the configured seed list, or the node of a manual JoinTo.
func (n *Node) seeds() []m.Address {
	if n.manual != nil {
		return []m.Address{*n.manual}
	}
	return n.cfg.Seeds
}

// joinSeedNodes starts the seed join process (Akka's JoinSeedNodes).
func (n *Node) joinSeedNodes() {
	seeds := n.seeds()
	self := n.cfg.Self.Address()
	n.seed = seedProcess{}
	switch {
	case len(seeds) == 0:
		n.phase = Idle
	case len(seeds) == 1 && seeds[0] == self:
		n.joinTo(self, n.cfg.Self.UID)
	case seeds[0] == self:
		others := bootstrap.OtherSeeds(self, seeds)
		n.phase = SeedJoining
		n.seed = seedProcess{active: true, first: true, remaining: others, others: others,
			started: n.now, next: n.now + joinRetryAfter(1), attempts: 1}
		n.sendInitJoins(others)
	default:
		others := bootstrap.OtherSeeds(self, seeds)
		n.phase = SeedJoining
		// Akka's JoinSeedNodeProcess asks the other seeds again every
		// second; this one backs off from JoinRetryFirst to JoinRetryMax.
		n.seed = seedProcess{active: true, others: others, next: n.now + joinRetryAfter(1), attempts: 1}
		n.sendInitJoins(others)
	}
}

func (n *Node) sendInitJoins(to []m.Address) {
	for _, a := range to {
		n.send(InitJoin{Header: n.hdr(m.UniqueAddress{Host: a.Host, Port: a.Port})})
	}
}

func (n *Node) tickSeedProcess() {
	s := &n.seed
	switch {
	case !s.active:
	case s.first && n.decideFirstSeed(false):
	case s.first && n.now >= s.next:
		s.attempts++
		s.next = n.now + joinRetryAfter(s.attempts)
		n.sendInitJoins(s.remaining)
	case !s.first && n.now >= s.next:
		s.attempts++
		s.next = n.now + joinRetryAfter(s.attempts)
		n.sendInitJoins(s.others)
	}
}

// decideFirstSeed applies bootstrap.DecideFirstSeed and reports whether
// this node joined itself. Held back by a refusal, it says so (rate
// limited) and, when every other seed had said Nack, asks them all again.
func (n *Node) decideFirstSeed(allNacked bool) bool {
	s := &n.seed
	d := bootstrap.DecideFirstSeed(bootstrap.FirstSeedInput{
		Timeout:         n.cfg.SeedNodeTimeout,
		Elapsed:         int64(n.now - s.started),
		AllOthersNacked: allNacked,
		Refusals:        n.refuse.list,
	})
	switch d.Verdict {
	case bootstrap.FormCluster:
		if allNacked {
			n.note("all other seeds answered InitJoinNack; joining myself to form a new cluster")
		} else if n.formsWithLease() {
			// Some seed is silent: it may run a cluster of this ClusterId
			// behind a partition. Under lease-majority its node holds the
			// lease; forming waits for the lease.
			if !n.form.waiting {
				n.askFormingLease(false)
			}
			return false
		} else {
			n.note("no seed answered within seed-node-timeout; joining myself to form a new cluster")
		}
		n.joinTo(n.cfg.Self.Address(), n.cfg.Self.UID)
		return true
	case bootstrap.HeldByRefusal:
		n.notFormingAlone(d.Reason)
		if len(s.remaining) == 0 {
			s.remaining = s.others
		}
	}
	return false
}

func (n *Node) onInitJoin(from m.UniqueAddress) {
	if n.phase != Initialized {
		n.send(InitJoinNack{Header: n.hdr(from)})
		return
	}
	if st := n.selfStatus(); st == m.Down || st == m.Exiting {
		n.send(InitJoinNack{Header: n.hdr(from)}) // a Down or Exiting node is not used for joining
		return
	}
	n.send(InitJoinAck{Header: n.hdr(from)})
}

func (n *Node) onInitJoinAck(from m.UniqueAddress) {
	if n.phase != SeedJoining || !n.seed.active {
		return // already answered by another seed
	}
	n.joinTo(from.Address(), from.UID)
}

func (n *Node) onInitJoinNack(from m.UniqueAddress) {
	s := &n.seed
	if n.phase != SeedJoining || !s.active || !s.first {
		return
	}
	s.remaining = slices.DeleteFunc(slices.Clone(s.remaining), func(a m.Address) bool { return a == from.Address() })
	if len(s.remaining) == 0 {
		n.decideFirstSeed(true)
	}
}

// joinTo is Akka's Join(address): join self to form a cluster, or send Join.
func (n *Node) joinTo(addr m.Address, uid uint64) {
	if !n.state.Gossip.IsEmpty() {
		return
	}
	n.seed.active = false
	if addr == n.cfg.Self.Address() {
		n.becomeInitialized()
		n.joining(n.cfg.Self, n.cfg.Roles, n.cfg.ClusterID)
		return
	}
	n.phase = TryingToJoin
	to := m.UniqueAddress{Host: addr.Host, Port: addr.Port, UID: uid}
	n.join = joinAttempt{with: addr, to: to, deadline: n.now + Instant(n.cfg.RetryUnsuccessfulJoinAfter), resend: n.now + joinResend}
	n.send(Join{Header: n.hdr(to), Roles: n.cfg.Roles, ClusterID: n.cfg.ClusterID})
}

func (n *Node) tickTryingToJoin() {
	if n.now < n.join.deadline {
		if n.now >= n.join.resend {
			n.join.resend = n.now + joinResend
			n.send(Join{Header: n.hdr(n.join.to), Roles: n.cfg.Roles, ClusterID: n.cfg.ClusterID})
		}
		return
	}
	n.note("no Welcome from %v within retry-unsuccessful-join-after; retrying", n.join.with)
	n.joinSeedNodes()
}

func (n *Node) becomeInitialized() {
	n.phase = Initialized
	n.seed.active = false
	n.self.armed = false
}

func (n *Node) onWelcome(from m.UniqueAddress, g m.Gossip) {
	if n.phase != TryingToJoin || !n.state.Gossip.IsEmpty() {
		return
	}
	if from.Address() != n.join.with {
		n.note("ignoring Welcome from %v while joining %v", from, n.join.with)
		return
	}
	if !g.HasMember(n.cfg.Self) {
		return
	}
	n.becomeInitialized()
	n.install(g.WithSeen(n.cfg.Self))
	n.gossipTo(from)
}

// joining handles a Join request (Akka's Joining), including a node coming
// back at a known host:port with a new uid.
func (n *Node) joining(node m.UniqueAddress, roles []string, clusterID string) {
	if st := n.selfStatus(); n.state.Gossip.HasMember(n.cfg.Self) && (st == m.Down || st == m.Exiting) {
		return // use a member that is Up instead
	}
	g := n.state.Gossip
	if local, ok := g.MemberAt(node.Address()); ok {
		if local.Address == node {
			if node != n.cfg.Self {
				n.send(Welcome{Header: n.hdr(node), Gossip: n.state.Gossip}) // lost Welcome, join retried
			}
			return
		}
		// New incarnation at a known address: the old one is dead. Mark it
		// terminated and down it; it is removed by the leader, and the new
		// node is admitted when it retries its join.
		if local.Status != m.Down {
			n.noteKind(NoteNewIncarnation, "new incarnation %v of %v is joining; downing the old one", node, local.Address)
			g = g.WithReachability(g.Reachability.Terminated(n.cfg.Self, local.Address))
			n.updateLatestGossip(g)
			n.downing(local.Address.Address())
		}
		return
	}
	wasEmpty := g.IsEmpty()
	g = g.AddMember(m.NewMember(node, roles, clusterID))
	g = g.AddMember(m.NewMember(n.cfg.Self, n.cfg.Roles, n.cfg.ClusterID))
	n.hb.forget(node)
	n.updateLatestGossip(g)
	if node == n.cfg.Self {
		n.note("joining myself, forming a new cluster")
		if wasEmpty {
			n.leaderActions() // deterministic oldest when bootstrapping
		}
		return
	}
	n.upJoinersOnConvergence() // a joiner is welcomed Up when the leader can say so at once
	n.send(Welcome{Header: n.hdr(node), Gossip: n.state.Gossip})
}

// leaving marks the member at addr Leaving (Cluster.Leave).
func (n *Node) leaving(addr m.Address) {
	mb, ok := n.state.Gossip.MemberAt(addr)
	if !ok || (mb.Status != m.Joining && mb.Status != m.WeaklyUp && mb.Status != m.Up) {
		return
	}
	n.updateLatestGossip(n.state.Gossip.UpdateMember(mb.WithStatus(m.Leaving)))
	n.sendGossip()
}

// downing marks the member at addr Down (Cluster.Down).
func (n *Node) downing(addr m.Address) {
	mb, ok := n.state.Gossip.MemberAt(addr)
	if !ok || mb.Status == m.Down {
		return
	}
	n.updateLatestGossip(n.state.Gossip.MarkAsDown(mb))
	if mb.Address == n.cfg.Self {
		n.sendGossipRandom(5)
	} else {
		n.gossipTo(mb.Address) // STONITH signal to the downed node
	}
}

func (n *Node) armSelfForm() {
	n.self = selfForm{armed: n.cfg.SelfFormAfter > 0, start: n.now}
}

func (n *Node) selfFormInput(anotherAccepts bool) bootstrap.SelfFormInput {
	return bootstrap.SelfFormInput{
		Window:                n.cfg.SelfFormAfter,
		Elapsed:               int64(n.now - n.self.start),
		OwnAddressInSeeds:     bootstrap.InSeeds(n.cfg.Self.Address(), n.cfg.Seeds),
		AnotherSeedAcceptsTCP: anotherAccepts,
		IsMember:              n.phase == Initialized,
		Refusals:              n.refuse.list,
	}
}

func (n *Node) tickSelfForm() {
	if !n.self.armed || n.self.probing || n.form.waiting {
		return
	}
	d := bootstrap.DecideSelfForm(n.selfFormInput(false))
	switch d.Verdict {
	case bootstrap.Disabled:
		n.self.armed = false
	case bootstrap.NeverSelfForm:
		n.self.armed = false
		n.note("self-form fallback inactive: %s", d.Reason)
	case bootstrap.Refused:
		n.self.start = n.now
		n.notFormingAlone(d.Reason)
	case bootstrap.SelfForm, bootstrap.WaitAnotherWindow:
		n.self.probing = true
		n.out = append(n.out, ProbeSeeds{Seeds: bootstrap.OtherSeeds(n.cfg.Self.Address(), n.cfg.Seeds)})
	}
}

func (n *Node) onSeedProbeResult(anyAccepted bool) {
	if !n.self.armed || !n.self.probing {
		return
	}
	n.self.probing = false
	d := bootstrap.DecideSelfForm(n.selfFormInput(anyAccepted))
	switch d.Verdict {
	case bootstrap.SelfForm:
		if n.formsWithLease() {
			if !n.form.waiting {
				n.askFormingLease(true)
			}
			return
		}
		n.noteKind(NoteSelfFormed, "self-form fallback: no membership after %d ms and no other seed reachable; forming a cluster on myself", n.cfg.SelfFormAfter)
		n.self.armed = false
		n.joinTo(n.cfg.Self.Address(), n.cfg.Self.UID)
	case bootstrap.WaitAnotherWindow:
		n.note("self-form fallback: another seed accepts TCP; waiting another window")
		n.self.start = n.now
	case bootstrap.Refused:
		n.self.start = n.now
		n.notFormingAlone(d.Reason)
	default:
		n.self.armed = false
	}
}

// formsWithLease reports whether forming a cluster on this node alone
// while a seed is silent needs the lease: under lease-majority.
func (n *Node) formsWithLease() bool { return n.cfg.Downing.Strategy == LeaseMajority }

func (n *Node) askFormingLease(fallback bool) {
	n.form.waiting, n.form.fallback = true, fallback
	n.noteKind(NoteFormingLease, "lease-majority: acquiring the lease before forming a cluster on myself (a seed is silent and may run this ClusterId behind a partition)")
	n.out = append(n.out, AcquireFormingLease{Owner: n.leaseOwner()})
}

// onFormingLease forms the cluster once the lease is held, unless this
// node found its cluster meanwhile. Refused (another node of the set holds
// it, or the store did not answer), it keeps asking the seeds and starts
// the window again.
func (n *Node) onFormingLease(acquired bool) {
	f := n.form
	n.form.waiting = false
	if !f.waiting || n.phase == Initialized || n.phase == Stopped {
		return // a member meanwhile (the keeper frees the lease once the set is whole)
	}
	if !acquired {
		if bootstrap.NoteDue(f.noted, int64(n.now)) {
			n.form.noted = int64(n.now)
			n.noteKind(NoteFormingHeld, "not forming a cluster on myself: the lease of this ClusterId is held by another node (running behind a partition?) or its store did not answer; asking the seeds again")
		}
		if f.fallback {
			n.self.start = n.now
		} else if n.seed.active {
			n.seed.started = n.now
			n.seed.remaining = n.seed.others
		}
		return
	}
	if f.fallback {
		n.noteKind(NoteSelfFormed, "self-form fallback: no membership after %d ms and no other seed reachable; lease acquired; forming a cluster on myself", n.cfg.SelfFormAfter)
		n.self.armed = false
	} else {
		n.note("no seed answered within seed-node-timeout; lease acquired; joining myself to form a new cluster")
	}
	n.joinTo(n.cfg.Self.Address(), n.cfg.Self.UID)
}
