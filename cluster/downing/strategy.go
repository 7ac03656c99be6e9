package downing

import (
	"errors"
	"fmt"
	"slices"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// Decision is what a split-brain strategy resolved to do (Akka's SBR
// decisions).
type Decision uint8

// Decisions.
const (
	// DownUnreachable downs the unreachable side: this side survives.
	DownUnreachable Decision = iota + 1
	// DownReachable downs this side, including this node.
	DownReachable
	// DownAll downs every member: no side may safely survive.
	DownAll
	// DownIndirectlyConnected downs the nodes seen unreachable through some
	// links but still connected through others, plus whatever the plain
	// decision downs once their observations are discounted.
	DownIndirectlyConnected
	// ReverseDownIndirectlyConnected is lease-majority's fallback when the
	// lease was not acquired: down the indirectly connected and this side.
	ReverseDownIndirectlyConnected
	// AcquireLeaseAndDownUnreachable: acquire the lease, then
	// DownUnreachable; if the lease is refused, DownReachable.
	AcquireLeaseAndDownUnreachable
	// AcquireLeaseAndDownIndirectlyConnected: acquire the lease, then
	// DownIndirectlyConnected; if refused, ReverseDownIndirectlyConnected.
	AcquireLeaseAndDownIndirectlyConnected
)

var decisionNames = map[Decision]string{
	DownUnreachable: "DownUnreachable", DownReachable: "DownReachable", DownAll: "DownAll",
	DownIndirectlyConnected: "DownIndirectlyConnected", ReverseDownIndirectlyConnected: "ReverseDownIndirectlyConnected",
	AcquireLeaseAndDownUnreachable:         "AcquireLeaseAndDownUnreachable",
	AcquireLeaseAndDownIndirectlyConnected: "AcquireLeaseAndDownIndirectlyConnected",
}

func (d Decision) String() string {
	if s, ok := decisionNames[d]; ok {
		return s
	}
	return fmt.Sprintf("Decision(%d)", d)
}

// IsIndirectlyConnected reports whether d is one of the indirectly
// connected decisions.
func (d Decision) IsIndirectlyConnected() bool {
	return d == DownIndirectlyConnected || d == ReverseDownIndirectlyConnected || d == AcquireLeaseAndDownIndirectlyConnected
}

// NeedsLease reports whether d must acquire the lease before acting.
func (d Decision) NeedsLease() bool {
	return d == AcquireLeaseAndDownUnreachable || d == AcquireLeaseAndDownIndirectlyConnected
}

// Reverse is the decision taken when the lease could not be acquired.
func (d Decision) Reverse() Decision {
	switch d {
	case AcquireLeaseAndDownUnreachable:
		return DownReachable
	case AcquireLeaseAndDownIndirectlyConnected:
		return ReverseDownIndirectlyConnected
	}
	panic(fmt.Sprintf("downing: invariant violated: %v has no reverse decision", d))
}

// Outcome is a strategy's decision plus, for lease decisions, how long to
// wait before trying to acquire the lease (ms; the minority waits).
type Outcome struct {
	Decision     Decision
	AcquireDelay int64
}

// Strategy is one split-brain resolver strategy. The set is closed:
// KeepMajority, KeepOldest, StaticQuorum, LeaseMajority, DownAllNodes.
type Strategy interface {
	// Name is the configuration name, e.g. "keep-oldest".
	Name() string
	decide(w *view) Outcome
	role() string
	byAge() bool
}

// ErrDoubleIndirectlyConnected is returned by NodesToDown when discounting
// the indirectly connected observations still yields an indirectly
// connected decision; the resolver then downs all (as Akka does).
var ErrDoubleIndirectlyConnected = errors.New("downing: double DownIndirectlyConnected decision")

// Decide runs the strategy on a view.
func Decide(s Strategy, v View) Outcome { return s.decide(newView(v, s.role(), s.byAge())) }

// NodesToDown is the set of members decision d downs in view v, sorted.
// Only Joining, WeaklyUp, Up and Leaving members are ever returned.
func NodesToDown(s Strategy, v View, d Decision) ([]m.UniqueAddress, error) {
	w := newView(v, s.role(), s.byAge())
	set, err := nodesToDown(s, w, d)
	return sortedKeys(set), err
}

// Resolution is the result of Resolve.
type Resolution struct {
	Outcome Outcome
	// Down lists the members to down if the decision is acted on now (for
	// lease decisions: the nodes downed once the lease is held).
	Down []m.UniqueAddress
	// Fallback is set when the decision could not be computed
	// (ErrDoubleIndirectlyConnected) and Down is the DownAll set instead.
	Fallback error
}

// Resolve decides and computes the nodes to down, falling back to DownAll
// when the decision cannot be computed (Akka's ActOnDecision).
func Resolve(s Strategy, v View) Resolution {
	o := Decide(s, v)
	down, err := NodesToDown(s, v, o.Decision)
	if err != nil {
		down, _ = NodesToDown(s, v, DownAll)
		return Resolution{Outcome: o, Down: down, Fallback: err}
	}
	return Resolution{Outcome: o, Down: down}
}

func nodesToDown(s Strategy, w *view, d Decision) (map[m.UniqueAddress]bool, error) {
	downable := w.downable()
	out := map[m.UniqueAddress]bool{}
	switch d {
	case DownUnreachable, AcquireLeaseAndDownUnreachable:
		for u := range downable {
			if w.unreachable[u] {
				out[u] = true
			}
		}
	case DownReachable:
		for u := range downable {
			if !w.unreachable[u] {
				out[u] = true
			}
		}
	case DownAll:
		return downable, nil
	case DownIndirectlyConnected, AcquireLeaseAndDownIndirectlyConnected:
		extra, err := additionalWhenIndirectlyConnected(s, w, downable)
		if err != nil {
			return nil, err
		}
		ic := w.indirectlyConnected()
		for u := range downable {
			if ic[u] || extra[u] {
				out[u] = true
			}
		}
	case ReverseDownIndirectlyConnected:
		ic := w.indirectlyConnected()
		for u := range downable {
			if ic[u] || !w.unreachable[u] {
				out[u] = true
			}
		}
	default:
		panic(fmt.Sprintf("downing: invariant violated: unknown decision %v", d))
	}
	return out, nil
}

// additionalWhenIndirectlyConnected re-decides with the observations between
// indirectly connected nodes (and from detected unreachable islands)
// removed, so a clean partition or crash combined with indirect connections
// is also resolved (Akka's AdditionalNodesToDownWhenIndirectlyConnected).
func additionalWhenIndirectlyConnected(s Strategy, w *view, downable map[m.UniqueAddress]bool) (map[m.UniqueAddress]bool, error) {
	ic := w.indirectlyConnected()
	plain := false
	for u := range w.unreachable {
		if !ic[u] {
			plain = true
		}
	}
	if !plain {
		return nil, nil
	}
	cycles, seen := w.fromCycles(), w.fromSeen()
	prune := pruneUnreachableIslands(w)
	filtered := w.reach.FilterRecords(func(r m.Record) bool {
		return downable[r.Observer] && downable[r.Subject] && !prune[r.Observer] &&
			!((cycles[r.Observer] && cycles[r.Subject]) || (seen[r.Observer] && seen[r.Subject]))
	})
	w2 := *w
	w2.reach = filtered
	w2.unreachable = toSet(filtered.AllUnreachableOrTerminated())
	d := s.decide(&w2)
	if d.Decision.IsIndirectlyConnected() {
		return nil, fmt.Errorf("%w: after discounting indirect links the decision is still %v", ErrDoubleIndirectlyConnected, d.Decision)
	}
	return nodesToDown(s, &w2, d.Decision)
}

// pruneUnreachableIslands finds unreachable observers that every reachable
// member also holds unreachable: a detached island, not an indirect link.
func pruneUnreachableIslands(w *view) map[m.UniqueAddress]bool {
	var reachable []m.UniqueAddress
	for _, x := range w.all {
		if !w.unreachable[x.Address] {
			reachable = append(reachable, x.Address)
		}
	}
	recs := w.reach.Records()
	out := map[m.UniqueAddress]bool{}
	for _, r := range recs {
		if !w.unreachable[r.Observer] {
			continue
		}
		island := r.Observer
		observers := map[m.UniqueAddress]bool{}
		for _, r2 := range recs {
			if r2.Subject == island && slices.Contains(reachable, r2.Observer) {
				observers[r2.Observer] = true
			}
		}
		if len(observers) == len(reachable) {
			out[island] = true
		}
	}
	return out
}

func sortedKeys(s map[m.UniqueAddress]bool) []m.UniqueAddress {
	out := make([]m.UniqueAddress, 0, len(s))
	for u := range s {
		out = append(out, u)
	}
	slices.SortFunc(out, m.UniqueAddress.Compare)
	return out
}

// KeepMajority keeps the side holding the majority of members (with Role, if
// set) by the last known membership; equal halves keep the side holding the
// lowest address. Joining members on the other side are counted as possibly
// Up, and Leaving members on this side as possibly Exiting, and if that
// flips the outcome everything is downed.
type KeepMajority struct {
	Role string
}

// Name implements Strategy.
func (KeepMajority) Name() string   { return "keep-majority" }
func (s KeepMajority) role() string { return s.Role }
func (KeepMajority) byAge() bool    { return false }
func (s KeepMajority) decide(w *view) Outcome {
	if len(w.indirectlyConnected()) > 0 {
		return Outcome{Decision: DownIndirectlyConnected}
	}
	ms := w.membersWithRole(false, false)
	if len(ms) == 0 {
		return Outcome{Decision: DownAll}
	}
	d := majority(w, len(w.reachableWithRole(false, false)), len(w.unreachableWithRole(false, false)), ms[0])
	if d != DownUnreachable {
		return Outcome{Decision: d}
	}
	// edge case: membership changes racing the partition
	ms2 := w.membersWithRole(false, true)
	if len(ms2) == 0 {
		return Outcome{Decision: DownAll}
	}
	if majority(w, len(w.reachableWithRole(false, true)), len(w.unreachableWithRole(true, false)), ms2[0]) != DownUnreachable {
		return Outcome{Decision: DownAll}
	}
	return Outcome{Decision: DownUnreachable}
}

func majority(w *view, thisSide, otherSide int, lowest m.Member) Decision {
	switch {
	case thisSide == otherSide:
		if w.isUnreachable(lowest) {
			return DownReachable
		}
		return DownUnreachable
	case thisSide > otherSide:
		return DownUnreachable
	default:
		return DownReachable
	}
}

// KeepOldest keeps the side holding the oldest member (with Role, if set).
// With DownIfAlone, an oldest that is alone against two or more others is
// downed instead and the others survive. Akka 1.5's rule is kept exactly:
// the rescue needs the surviving side to hold at least two members, so in a
// 1-vs-1 split where the oldest is on the other side, this node downs
// ITSELF (DownReachable) — a two-node cluster loses both nodes when the
// oldest crashes.
type KeepOldest struct {
	DownIfAlone bool
	Role        string
}

// Name implements Strategy.
func (KeepOldest) Name() string   { return "keep-oldest" }
func (s KeepOldest) role() string { return s.Role }
func (KeepOldest) byAge() bool    { return true }
func (s KeepOldest) decide(w *view) Outcome {
	if len(w.indirectlyConnected()) > 0 {
		return Outcome{Decision: DownIndirectlyConnected}
	}
	ms := w.membersWithRole(false, false)
	if len(ms) == 0 {
		return Outcome{Decision: DownAll}
	}
	d := s.oldestDecision(!w.isUnreachable(ms[0]), len(w.reachableWithRole(false, false)), len(w.unreachableWithRole(false, false)))
	if d != DownUnreachable {
		return Outcome{Decision: d}
	}
	// edge case: Leaving here may be Exiting there; with DownIfAlone,
	// Joining/WeaklyUp may be Up on the other side and flip the alone test
	ms2 := w.membersWithRole(false, true)
	if len(ms2) == 0 {
		return Outcome{Decision: DownAll}
	}
	up := s.DownIfAlone
	if s.oldestDecision(!w.isUnreachable(ms2[0]), len(w.reachableWithRole(up, true)), len(w.unreachableWithRole(up, true))) != DownUnreachable {
		return Outcome{Decision: DownAll}
	}
	return Outcome{Decision: DownUnreachable}
}

func (s KeepOldest) oldestDecision(oldestHere bool, thisSide, otherSide int) Decision {
	if oldestHere {
		if s.DownIfAlone && thisSide == 1 && otherSide >= 2 {
			return DownReachable
		}
		return DownUnreachable
	}
	if s.DownIfAlone && otherSide == 1 && thisSide >= 2 {
		return DownUnreachable
	}
	return DownReachable
}

// StaticQuorum keeps a side only if it still holds at least QuorumSize
// members (with Role, if set). With more than QuorumSize*2-1 members both
// sides could hold a quorum, so the decision is DownAll (Akka's
// IsTooManyMembers).
type StaticQuorum struct {
	QuorumSize int
	Role       string
}

// Name implements Strategy.
func (StaticQuorum) Name() string   { return "static-quorum" }
func (s StaticQuorum) role() string { return s.Role }
func (StaticQuorum) byAge() bool    { return false }

// IsTooManyMembers reports whether the view holds more than QuorumSize*2-1
// members with the role.
func (s StaticQuorum) IsTooManyMembers(v View) bool {
	return s.tooMany(newView(v, s.Role, false))
}

func (s StaticQuorum) tooMany(w *view) bool {
	return len(w.membersWithRole(false, false)) > s.QuorumSize*2-1
}

func (s StaticQuorum) decide(w *view) Outcome {
	switch {
	case s.tooMany(w):
		return Outcome{Decision: DownAll}
	case len(w.indirectlyConnected()) > 0:
		return Outcome{Decision: DownIndirectlyConnected}
	case len(w.membersWithRole(false, false))-len(w.unreachableWithRole(false, false)) >= s.QuorumSize:
		return Outcome{Decision: DownUnreachable}
	default:
		return Outcome{Decision: DownReachable}
	}
}

// LeaseMajority keeps the side that acquires the lease. The minority side
// (by KeepMajority's counting) waits AcquireLeaseDelayForMinority ms
// before trying, so the majority normally wins. An even split has no
// minority: both sides try at once. Akka delays the half without the
// lowest address; otopcua's lease keeper has already taken the lease for
// the half with the Primary (the oldest driver) a heartbeat interval and a
// quarter of the pause into the silence, seconds before any decision, so
// the other half's immediate attempt is refused when that Primary lives
// (a partition: it downs itself) and granted when it is frozen or dead —
// the lease store tells a freeze from a partition, and a delay would only
// lengthen the take-over from a frozen Primary.
type LeaseMajority struct {
	Role string
	// AcquireLeaseDelayForMinority in ms; Akka's default is 2000.
	AcquireLeaseDelayForMinority int64
}

// Name implements Strategy.
func (LeaseMajority) Name() string   { return "lease-majority" }
func (s LeaseMajority) role() string { return s.Role }
func (LeaseMajority) byAge() bool    { return false }
func (s LeaseMajority) decide(w *view) Outcome {
	if len(w.indirectlyConnected()) > 0 {
		return Outcome{Decision: AcquireLeaseAndDownIndirectlyConnected}
	}
	var delay int64
	if s.inMinority(w) {
		delay = s.AcquireLeaseDelayForMinority
	}
	return Outcome{Decision: AcquireLeaseAndDownUnreachable, AcquireDelay: delay}
}

func (s LeaseMajority) inMinority(w *view) bool {
	ms := w.membersWithRole(false, false)
	if len(ms) == 0 {
		return false
	}
	unreachable := len(w.unreachableWithRole(false, false))
	switch {
	case unreachable*2 <= len(ms):
		// An even split is no minority (see LeaseMajority): the lease
		// keeper's early take orders it.
		return false
	default:
		return true
	}
}

// DownAllNodes downs every member on any split.
type DownAllNodes struct{}

// Name implements Strategy.
func (DownAllNodes) Name() string         { return "down-all" }
func (DownAllNodes) role() string         { return "" }
func (DownAllNodes) byAge() bool          { return false }
func (DownAllNodes) decide(*view) Outcome { return Outcome{Decision: DownAll} }

// IsAllUnreachableDownOrExiting reports whether every unreachable member of
// the view is already Down or Exiting (nothing left to decide).
func IsAllUnreachableDownOrExiting(v View) bool {
	return newView(v, "", false).isAllUnreachableDownOrExiting()
}

// TickInput is the split-brain resolver's snapshot at one tick.
type TickInput struct {
	View View
	// IsLeader: this node is the leader among the reachable members.
	IsLeader bool
	// SelfAdded: this node has been Up (or WeaklyUp); before that it takes
	// no decision.
	SelfAdded bool
	// Stable: membership and reachability have not changed for
	// stable-after.
	Stable bool
}

// Tick returns the resolution to act on, and true, when this node is
// responsible for deciding (leader, added), there are unreachable members,
// and the view has been stable; otherwise false (Akka's SBR OnTick).
func Tick(s Strategy, in TickInput) (Resolution, bool) {
	if !in.IsLeader || !in.SelfAdded || !in.Stable || len(in.View.Unreachable) == 0 {
		return Resolution{}, false
	}
	return Resolve(s, in.View), true
}
