package downing

import (
	"slices"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// View is the snapshot a split-brain strategy decides on: what one node
// knows when it has to act. It mirrors the state Akka's DowningStrategy
// accumulates from cluster events.
type View struct {
	// Self is the deciding node.
	Self m.UniqueAddress
	// Members are all current members (any status but Removed), including
	// Joining and WeaklyUp ones.
	Members []m.Member
	// Unreachable is the set of members this node considers unreachable:
	// every member some observer holds Unreachable/Terminated, plus Down
	// members (Akka treats MemberDowned like UnreachableMember), never Self.
	Unreachable []m.UniqueAddress
	// Reachability is the gossip's reachability table; only its Unreachable
	// and Terminated records are used (to find indirectly connected nodes).
	Reachability m.Reachability
	// SeenBy is the set of members that have seen the current gossip.
	SeenBy []m.UniqueAddress
}

// ViewOf builds the View of a node from its gossip.
func ViewOf(st m.State) View {
	g := st.Gossip
	var unreach []m.UniqueAddress
	for _, u := range g.Reachability.AllUnreachableOrTerminated() {
		if u != st.Self && g.HasMember(u) {
			unreach = append(unreach, u)
		}
	}
	for _, mb := range g.Members {
		if mb.Status == m.Down && mb.Address != st.Self {
			unreach = append(unreach, mb.Address)
		}
	}
	return View{Self: st.Self, Members: g.Members, Unreachable: unreach, Reachability: g.Reachability, SeenBy: g.Seen}
}

// view is the working form of a View for one strategy: sorted members, sets,
// the role filter and the member ordering (address, or age for keep-oldest).
type view struct {
	all         []m.Member
	unreachable map[m.UniqueAddress]bool
	reach       m.Reachability
	seenBy      map[m.UniqueAddress]bool
	role        string
	byAge       bool
}

func newView(v View, role string, byAge bool) *view {
	w := &view{
		all:         slices.Clone(v.Members),
		unreachable: toSet(v.Unreachable),
		reach: v.Reachability.FilterRecords(func(r m.Record) bool {
			return r.Status == m.Unreachable || r.Status == m.Terminated
		}),
		seenBy: toSet(v.SeenBy),
		role:   role,
		byAge:  byAge,
	}
	w.all = slices.DeleteFunc(w.all, func(x m.Member) bool { return x.Status == m.Removed })
	slices.SortFunc(w.all, w.compare)
	return w
}

func (w *view) compare(a, b m.Member) int {
	if w.byAge {
		return m.CompareByAge(a, b)
	}
	return m.CompareByAddress(a, b)
}

func toSet(us []m.UniqueAddress) map[m.UniqueAddress]bool {
	s := make(map[m.UniqueAddress]bool, len(us))
	for _, u := range us {
		s[u] = true
	}
	return s
}

func (w *view) isUnreachable(x m.Member) bool { return w.unreachable[x.Address] }

// members is Akka's GetMembers: all but Joining/WeaklyUp (unless
// includingPossiblyUp), Leaving (if excludingPossiblyExiting), Down and
// Exiting; in the view's order.
func (w *view) members(includingPossiblyUp, excludingPossiblyExiting bool) []m.Member {
	var out []m.Member
	for _, x := range w.all {
		switch {
		case !includingPossiblyUp && (x.Status == m.Joining || x.Status == m.WeaklyUp):
		case excludingPossiblyExiting && x.Status == m.Leaving:
		case x.Status == m.Down || x.Status == m.Exiting:
		default:
			out = append(out, x)
		}
	}
	return out
}

func (w *view) withRole(ms []m.Member) []m.Member {
	if w.role == "" {
		return ms
	}
	var out []m.Member
	for _, x := range ms {
		if x.HasRole(w.role) {
			out = append(out, x)
		}
	}
	return out
}

func (w *view) membersWithRole(up, exiting bool) []m.Member {
	return w.withRole(w.members(up, exiting))
}

func (w *view) reachableWithRole(up, exiting bool) []m.Member {
	var out []m.Member
	for _, x := range w.membersWithRole(up, exiting) {
		if !w.isUnreachable(x) {
			out = append(out, x)
		}
	}
	return out
}

func (w *view) unreachableWithRole(up, exiting bool) []m.Member {
	var out []m.Member
	for _, x := range w.membersWithRole(up, exiting) {
		if w.isUnreachable(x) {
			out = append(out, x)
		}
	}
	return out
}

// indirectly connected: observers that are themselves unreachable (a cycle
// in the unreachability graph), and both ends of any record whose subject
// has seen the current gossip (it is unreachable yet talks to us through a
// third party).
func (w *view) fromCycles() map[m.UniqueAddress]bool {
	subjects := toSet(w.reach.AllUnreachableOrTerminated())
	out := map[m.UniqueAddress]bool{}
	for _, o := range w.reach.AllObservers() {
		if subjects[o] {
			out[o] = true
		}
	}
	return out
}

func (w *view) fromSeen() map[m.UniqueAddress]bool {
	out := map[m.UniqueAddress]bool{}
	for _, r := range w.reach.Records() {
		if w.seenBy[r.Subject] {
			out[r.Observer] = true
			out[r.Subject] = true
		}
	}
	return out
}

func (w *view) indirectlyConnected() map[m.UniqueAddress]bool {
	out := w.fromCycles()
	for u := range w.fromSeen() {
		out[u] = true
	}
	return out
}

func (w *view) isAllUnreachableDownOrExiting() bool {
	for _, x := range w.all {
		if w.isUnreachable(x) && x.Status != m.Down && x.Status != m.Exiting {
			return false
		}
	}
	return true
}

// downable is every member that may still be downed: Joining, WeaklyUp, Up,
// Leaving.
func (w *view) downable() map[m.UniqueAddress]bool {
	out := map[m.UniqueAddress]bool{}
	for _, x := range w.all {
		switch x.Status {
		case m.Joining, m.WeaklyUp, m.Up, m.Leaving:
			out[x.Address] = true
		}
	}
	return out
}
