package node

import (
	"slices"
	"strings"

	"github.com/otopcua/otopcua/cluster/downing"
	m "github.com/otopcua/otopcua/cluster/membership"
)

// downState is the downing provider's bookkeeping: auto-down's unreachable
// timers, and the split-brain resolver's stability deadline, instability
// statistics and lease state (Akka's AutoDown and SplitBrainResolverBase).
type downState struct {
	unreachableSince map[m.UniqueAddress]Instant

	stableDeadline Instant
	firstChange    Instant
	latestChange   Instant
	changeCount    int
	selfAdded      bool

	leaseWaiting   bool
	leaseDecision  downing.Decision
	leaseAcquireAt Instant
	leaseRequested bool
	holdingLease   bool
	releaseAt      Instant
	refusedSince   Instant // first refusal of the lease this decision met
	refused        bool    // refusedSince is set
}

func newDownState() downState {
	return downState{unreachableSince: map[m.UniqueAddress]Instant{}}
}

func (d *downState) resetStable(now Instant, stableAfter int64) {
	d.stableDeadline = now + Instant(stableAfter)
}

func (d *downState) reachabilityChanged(now Instant) {
	if d.changeCount == 0 {
		d.firstChange = now
	}
	d.latestChange = now
	d.changeCount++
}

func (d *downState) resetStats() { d.changeCount = 0 }

// observe feeds the published events to the downing provider.
func (d *downState) observe(n *Node, evs []m.Event) {
	stable := n.cfg.Downing.StableAfter
	self := n.cfg.Self
	for _, ev := range evs {
		u := ev.Member.Address
		switch ev.Kind {
		case m.UnreachableMember, m.MemberDowned:
			if ev.Kind == m.UnreachableMember && ev.Member.Status != m.Down && ev.Member.Status != m.Exiting {
				if _, ok := d.unreachableSince[u]; !ok {
					d.unreachableSince[u] = n.now
				}
			}
			if u != self {
				d.resetStable(n.now, stable)
				d.reachabilityChanged(n.now)
				d.resetStatsIfAllUnreachableDowned(n)
			}
		case m.ReachableMember:
			delete(d.unreachableSince, u)
			d.resetStable(n.now, stable)
			d.reachabilityChanged(n.now)
			d.resetStatsIfAllUnreachableDowned(n)
		case m.MemberUp, m.MemberWeaklyUp:
			if u == self && !d.selfAdded {
				d.selfAdded = true
				// Reachability changes seen before this node was a member
				// (it joined just before a split and never heard it was
				// Up) were not its to decide on: the instability window
				// starts when it can decide. Akka counts them, and at its
				// first tick a lone survivor that joined late downs all.
				d.resetStats()
			}
			if ev.Kind == m.MemberUp {
				d.resetStable(n.now, stable)
			}
		case m.MemberExited:
			d.resetStable(n.now, stable)
		case m.MemberRemoved:
			delete(d.unreachableSince, u)
			d.resetStatsIfAllUnreachableDowned(n)
		}
	}
}

func (d *downState) resetStatsIfAllUnreachableDowned(n *Node) {
	if d.changeCount > 0 && downing.IsAllUnreachableDownOrExiting(downing.ViewOf(n.state)) {
		d.resetStats()
	}
}

// tickDowning runs the configured downing provider (once per leader tick).
func (n *Node) tickDowning() {
	if n.phase != Initialized {
		return
	}
	switch n.cfg.Downing.Strategy {
	case AutoDown:
		n.tickAutoDown()
	case NoDowning:
	default:
		if self, ok := n.state.Gossip.Member(n.cfg.Self); ok && self.Status == m.Down {
			// Downed (by itself or another): it is shutting down and
			// decides nothing more — a lease it took now would down the
			// side that survived.
			return
		}
		n.tickSBR()
	}
}

func (n *Node) tickAutoDown() {
	d := &n.dn
	in := downing.AutoDownInput{IsLeader: n.state.IsLeader(n.cfg.Self), Now: int64(n.now), After: n.cfg.Downing.AutoDownUnreachableAfter}
	for u, since := range d.unreachableSince {
		if mb, ok := n.state.Gossip.Member(u); ok {
			in.Unreachable = append(in.Unreachable, downing.UnreachableSince{Member: mb, Since: int64(since)})
		}
	}
	for _, u := range downing.AutoDown(in) {
		n.note("leader is auto-downing unreachable node %v", u)
		delete(d.unreachableSince, u)
		n.downing(u.Address())
	}
}

func (n *Node) tickSBR() {
	d := &n.dn
	if d.leaseWaiting {
		// Ticks are ignored while waiting for the lease (Akka's
		// WaitingForLease), the instability check included: the decision
		// taken stands until the lease answers.
		if !d.leaseRequested && n.now >= d.leaseAcquireAt {
			d.leaseRequested = true
			n.out = append(n.out, AcquireLease{Owner: n.leaseOwner()})
		}
		return
	}
	if d.changeCount > 0 {
		if du := n.cfg.downAllWhenUnstable(); du > 0 && int64(n.now-d.firstChange) > n.cfg.Downing.StableAfter+du {
			n.note("SBR detected instability and will down all nodes")
			n.actOnDecision(downing.DownAll)
		} else if du == 0 && int64(n.now-d.latestChange) > 2*n.cfg.Downing.StableAfter {
			d.resetStats()
		}
	}
	if d.holdingLease && d.releaseAt != 0 && n.now >= d.releaseAt {
		d.holdingLease = false
		d.releaseAt = 0
		n.out = append(n.out, ReleaseLease{Owner: n.leaseOwner()})
	}
	if downing.IsAllUnreachableDownOrExiting(downing.ViewOf(n.state)) {
		// Nothing left to decide: the unreachable members are already
		// Down or Exiting and wait for their removal.
		return
	}
	res, act := downing.Tick(n.cfg.strategy(), downing.TickInput{
		View:      downing.ViewOf(n.state),
		IsLeader:  n.state.IsLeader(n.cfg.Self),
		SelfAdded: d.selfAdded,
		Stable:    n.now >= d.stableDeadline,
	})
	if !act {
		return
	}
	o := res.Outcome
	if !o.Decision.NeedsLease() {
		n.actOnDecision(o.Decision)
		return
	}
	if d.holdingLease {
		n.actOnDecision(o.Decision)
		return
	}
	d.leaseWaiting, d.leaseDecision, d.leaseRequested = true, o.Decision, false
	d.leaseAcquireAt = n.now + Instant(o.AcquireDelay)
	if o.AcquireDelay == 0 {
		d.leaseRequested = true
		n.out = append(n.out, AcquireLease{Owner: n.leaseOwner()})
	} else {
		n.note("SBR is in the minority; trying to acquire the lease in %d ms", o.AcquireDelay)
	}
}

func (n *Node) leaseOwner() string { return n.cfg.Self.String() }

func (n *Node) onLeaseResult(acquired bool) {
	d := &n.dn
	if !d.leaseWaiting || n.phase != Initialized {
		if acquired && n.phase == Stopped {
			n.out = append(n.out, ReleaseLease{Owner: n.leaseOwner()})
		}
		return
	}
	if !acquired && n.retryLease() {
		return
	}
	d.leaseWaiting, d.refused = false, false
	if acquired {
		n.note("SBR acquired the lease for %v", d.leaseDecision)
		d.holdingLease = true
		d.releaseAt = n.now + Instant(n.cfg.Downing.ReleaseLeaseAfter)
		n.actOnDecision(d.leaseDecision)
		return
	}
	n.note("SBR could not acquire the lease; reversing %v to %v", d.leaseDecision, d.leaseDecision.Reverse())
	n.actOnDecision(d.leaseDecision.Reverse())
}

// retryLease schedules another attempt at a refused lease while the
// decision's LeaseRetryFor window lasts: a frozen holder's lease lapses
// within its TTL, a live holder's never does. It reports false once the
// window is over (or there is none): the decision is reversed.
func (n *Node) retryLease() bool {
	d := &n.dn
	window := n.cfg.Downing.LeaseRetryFor
	if window <= 0 {
		return false
	}
	if !d.refused {
		d.refused, d.refusedSince = true, n.now
		n.note("SBR could not acquire the lease for %v; trying again every %d ms for %d ms: a holder that stopped renewing loses it by then",
			d.leaseDecision, n.cfg.Downing.LeaseRetryEvery, window)
	}
	if int64(n.now-d.refusedSince) >= window {
		return false
	}
	if len(downing.ViewOf(n.state).Unreachable) == 0 {
		// Healed while refused (the holder's keeper frees the lease once
		// its set is whole): nothing to decide any more, and a lease
		// taken now would down a reachable member.
		n.note("SBR dropped %v: every member is reachable again", d.leaseDecision)
		d.leaseWaiting, d.refused = false, false
		return true
	}
	d.leaseRequested = false
	d.leaseAcquireAt = n.now + Instant(n.cfg.Downing.LeaseRetryEvery)
	return true
}

// actOnDecision downs the decision's nodes, this node last (Akka's
// ActOnDecision); a decision that cannot be computed downs all.
func (n *Node) actOnDecision(dec downing.Decision) {
	view := downing.ViewOf(n.state)
	st := n.cfg.strategy()
	nodes, err := downing.NodesToDown(st, view, dec)
	if err != nil {
		n.note("SBR %v: %v; downing all instead", dec, err)
		nodes, _ = downing.NodesToDown(st, view, downing.DownAll)
	}
	var names []string
	for _, u := range nodes {
		names = append(names, u.String())
	}
	self := slices.Contains(nodes, n.cfg.Self)
	suffix := ""
	if self {
		suffix = " including myself"
	}
	n.note("SBR took decision %v and is downing [%s]%s, [%d] unreachable of [%d] members",
		dec, strings.Join(names, ", "), suffix, len(view.Unreachable), len(view.Members))
	if len(nodes) == 0 {
		return
	}
	for _, u := range nodes {
		if u != n.cfg.Self {
			n.downing(u.Address())
		}
	}
	if self {
		n.downing(n.cfg.Self.Address())
	}
	n.dn.resetStats()
	n.dn.resetStable(n.now, n.cfg.Downing.StableAfter)
}
