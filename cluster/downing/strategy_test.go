package downing

import (
	"errors"
	"slices"
	"strings"
	"testing"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// The members of Akka.NET's SBR TestAddresses: E is the oldest (up 1), then
// D, C, B; A and F share up 5 (A older by address); G is the youngest.
// tb is what the helpers need from *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

var testMembers = map[string]m.Member{
	"A": tm("a", 5, "role3"),
	"B": tm("b", 4, "role1", "role3"),
	"C": tm("c", 3, "role2"),
	"D": tm("d", 2, "role1", "role2", "role3"),
	"E": tm("e", 1),
	"F": tm("f", 5),
	"G": tm("g", 6),
}

func tm(host string, up int, roles ...string) m.Member {
	mb := m.NewMember(m.UniqueAddress{Host: host, Port: 2552, UID: 1}, roles, "")
	return mb.WithUp(up)
}

// member parses "A", "Aj" (Joining), "Aw" (WeaklyUp), "Al" (Leaving), "Ax"
// (Exiting), "Ad" (Down).
func member(t tb, spec string) m.Member {
	t.Helper()
	base, ok := testMembers[spec[:1]]
	if !ok {
		t.Fatalf("unknown member %q", spec)
	}
	if len(spec) == 1 {
		return base
	}
	switch spec[1:] {
	case "j":
		return m.NewMember(base.Address, base.Roles, "")
	case "w":
		return m.NewMember(base.Address, base.Roles, "").WithStatus(m.WeaklyUp)
	case "l":
		return base.WithStatus(m.Leaving)
	case "x":
		return base.WithStatus(m.Leaving).WithStatus(m.Exiting)
	case "d":
		return base.WithStatus(m.Down)
	}
	t.Fatalf("bad member modifier %q", spec)
	return m.Member{}
}

func addr(t tb, name string) m.UniqueAddress { return member(t, name[:1]).Address }

// sideView builds the view of one side exactly as Akka's
// SplitBrainResolverSpec.StrategySetup.Strategy(side): all members known,
// the side's first member observing every other-side member unreachable,
// the indirectly connected records added, seen by the whole side.
func sideView(t tb, sides [][]m.Member, side int, indirect string) View {
	var all []m.Member
	for _, s := range sides {
		all = append(all, s...)
	}
	here := sides[side]
	var recs []m.Record
	versions := map[m.UniqueAddress]int64{}
	add := func(o, s m.UniqueAddress) {
		recs = append(recs, m.Record{Observer: o, Subject: s, Status: m.Unreachable, Version: 1})
		versions[o] = 1
	}
	for _, pair := range strings.Fields(indirect) {
		o, s, _ := strings.Cut(pair, ">")
		add(addr(t, o), addr(t, s))
	}
	for i, s := range sides {
		if i == side {
			continue
		}
		for _, o := range s {
			add(here[0].Address, o.Address)
		}
	}
	v := View{Self: here[0].Address, Members: all, Reachability: m.NewReachability(recs, versions)}
	for _, r := range recs {
		v.Unreachable = append(v.Unreachable, r.Subject)
	}
	for _, x := range here {
		v.SeenBy = append(v.SeenBy, x.Address)
	}
	return v
}

type sideCheck struct {
	side     int
	decision Decision // 0: not checked
	delay    int64    // lease decisions only
	down     string   // "?" not checked
	reverse  string   // lease decisions: nodes downed when the lease is refused
	wantErr  bool
}

type sbrCase struct {
	name     string
	strategy Strategy
	sides    string // "A C E | B D"
	indirect string // "A>B B>A"
	checks   []sideCheck
}

func names(t tb, us []m.UniqueAddress) string {
	var out []string
	for _, u := range us {
		out = append(out, strings.ToUpper(u.Host))
	}
	return strings.Join(out, " ")
}

func canon(s string) string {
	f := strings.Fields(s)
	for i := range f {
		f[i] = f[i][:1]
	}
	slices.Sort(f)
	return strings.Join(f, " ")
}

func runSBR(t *testing.T, cases []sbrCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sides [][]m.Member
			for _, s := range strings.Split(c.sides, "|") {
				var side []m.Member
				for _, f := range strings.Fields(s) {
					side = append(side, member(t, f))
				}
				sides = append(sides, side)
			}
			for _, chk := range c.checks {
				v := sideView(t, sides, chk.side, c.indirect)
				o := Decide(c.strategy, v)
				if chk.decision != 0 && o.Decision != chk.decision {
					t.Errorf("side %d: decision %v, want %v", chk.side+1, o.Decision, chk.decision)
				}
				if o.Decision.NeedsLease() && o.AcquireDelay != chk.delay {
					t.Errorf("side %d: acquire delay %d, want %d", chk.side+1, o.AcquireDelay, chk.delay)
				}
				down, err := NodesToDown(c.strategy, v, o.Decision)
				if chk.wantErr {
					if !errors.Is(err, ErrDoubleIndirectlyConnected) {
						t.Errorf("side %d: err %v, want ErrDoubleIndirectlyConnected", chk.side+1, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("side %d: %v", chk.side+1, err)
				}
				if chk.down != "?" && names(t, down) != canon(chk.down) {
					t.Errorf("side %d: %v downs [%s], want [%s]", chk.side+1, o.Decision, names(t, down), canon(chk.down))
				}
				if o.Decision.NeedsLease() && chk.reverse != "?" {
					rev, err := NodesToDown(c.strategy, v, o.Decision.Reverse())
					if err != nil || names(t, rev) != canon(chk.reverse) {
						t.Errorf("side %d: reverse %v downs [%s] (err %v), want [%s]", chk.side+1, o.Decision.Reverse(), names(t, rev), err, canon(chk.reverse))
					}
				}
			}
		})
	}
}

func both(down string) []sideCheck {
	return []sideCheck{{side: 0, down: down}, {side: 1, down: down}}
}

// Ported from Akka.NET SplitBrainResolverSpec (StaticQuorum_*).
func TestStaticQuorumAkkaSpec(t *testing.T) {
	q3 := StaticQuorum{QuorumSize: 3}
	runSBR(t, []sbrCase{
		{"down unreachable when enough reachable nodes", q3, "A C E | B D", "", both("B D")},
		{"down reachable when not enough reachable nodes", q3, "A B | C D", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "A B"}, {side: 1, decision: DownReachable, down: "C D"}}},
		{"down unreachable when enough reachable nodes with role", StaticQuorum{QuorumSize: 2, Role: "role3"}, "A B C | D E", "", both("D E")},
		{"down all if N > quorum*2-1", q3, "A B C | D E F", "", both("A B C D E F")},
		{"joining not counted", q3, "A B Cj | D E Fj", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "?"}, {side: 1, decision: DownReachable, down: "?"}}},
		{"joining: C became Up", q3, "A B C | D E Fj", "", []sideCheck{
			{side: 0, decision: DownUnreachable, down: "D E F"}, {side: 1, decision: DownReachable, down: "?"}}},
		{"joining: F became Up, C still joining", q3, "A B Cj | D E F", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "?"}, {side: 1, decision: DownUnreachable, down: "?"}}},
		{"joining: both Up, too many", q3, "A B C | D E F", "", []sideCheck{
			{side: 0, decision: DownAll, down: "?"}, {side: 1, decision: DownAll, down: "?"}}},
		{"leaving counted", q3, "A B Cl | D E", "", []sideCheck{
			{side: 0, decision: DownUnreachable, down: "D E"}, {side: 1, decision: DownReachable, down: "D E"}}},
		{"exiting not counted", q3, "A B Cx | D E", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "A B"}, {side: 1, decision: DownReachable, down: "D E"}}},
		// the reference product's 2-node notes: quorum 1 → IsTooManyMembers → DownAll,
		// quorum 2 → the survivor downs itself.
		{"pair with quorum 1 is too many members", StaticQuorum{QuorumSize: 1}, "A | B", "", []sideCheck{
			{side: 0, decision: DownAll, down: "A B"}, {side: 1, decision: DownAll, down: "A B"}}},
		{"pair with quorum 2 downs the survivor", StaticQuorum{QuorumSize: 2}, "A | B", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "A"}, {side: 1, decision: DownReachable, down: "B"}}},
	})
}

// Ported from Akka.NET SplitBrainResolverSpec (KeepMajority_*).
func TestKeepMajorityAkkaSpec(t *testing.T) {
	km := KeepMajority{}
	runSBR(t, []sbrCase{
		{"down minority partition A C E | B D", km, "A C E | B D", "", both("B D")},
		{"down minority partition A B | C D E", km, "A B | C D E", "", both("A B")},
		{"down self when alone B | A C", km, "B | A C", "", both("B")},
		{"keep half with lowest address A B | C D", km, "A B | C D", "", both("C D")},
		{"keep lowest address in two node cluster A | B", km, "A | B", "", []sideCheck{
			{side: 0, decision: DownUnreachable, down: "B"}, {side: 1, decision: DownReachable, down: "B"}}},
		{"down minority partition with role", KeepMajority{Role: "role3"}, "A B | C D E", "", both("C D E")},
		{"keep half with lowest address with role", KeepMajority{Role: "role2"}, "A D E | B C", "", both("A D E")},
		{"down all when no node with role", KeepMajority{Role: "role3"}, "C | E", "", both("C E")},
		{"not count joining node but down it", km, "B D | Aj C", "", both("A C")},
		{"down minority partition and joining node", km, "A Bj | C D E", "", both("A B")},
		{"down each part when split in 3 too small parts", km, "A B | C D | E", "", []sideCheck{
			{side: 0, down: "A B"}, {side: 1, down: "C D"}, {side: 2, down: "E"}}},
		{"edge case membership change: majority side", km, "A B F G | C D E", "", []sideCheck{
			{side: 0, decision: DownUnreachable, down: "C D E"}}},
		{"edge case membership change: F G still joining seen from side 2", km, "A B Fj Gj | C D E", "", []sideCheck{
			{side: 1, decision: DownAll, down: "A B C D E F G"}}},
		{"edge case membership change when equal size: side 1", km, "A B F | C D E", "", []sideCheck{
			{side: 0, decision: DownUnreachable, down: "C D E"}}},
		{"edge case membership change when equal size: side 2", km, "A B Fj | C D E", "", []sideCheck{
			{side: 1, decision: DownAll, down: "A B C D E F"}}},
		{"safe edge case of membership change: side 1", km, "A B | C D E Fj", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "A B"}}},
		{"safe edge case of membership change: side 2", km, "A B | C D E F", "", []sideCheck{
			{side: 1, decision: DownUnreachable, down: "A B"}}},
		{"edge case of leaving/exiting: side 1", km, "Al B Ej | C D", "", []sideCheck{
			{side: 0, decision: DownAll, down: "A B C D E"}}},
		{"edge case of leaving/exiting: side 2", km, "Ax B | C D", "", []sideCheck{
			{side: 1, decision: DownUnreachable, down: "B"}}},
		{"down indirectly connected A B", km, "A B", "A>B B>A", []sideCheck{{side: 0, down: "A B"}}},
		{"down indirectly connected A B, keep C", km, "A B C", "A>B B>A", []sideCheck{{side: 0, down: "A B"}}},
		{"down indirectly connected cycle A B C", km, "A B C", "A>B B>C C>A", []sideCheck{{side: 0, down: "A B C"}}},
		{"down indirectly connected A D, B C", km, "A B C D", "A>D D>A B>C C>B", []sideCheck{{side: 0, down: "A B C D"}}},
		{"down indirectly connected A B C, keep D E", km, "A B C D E", "A>B B>C C>A", []sideCheck{{side: 0, down: "A B C"}}},
		{"down two groups of indirectly connected", km, "A B C D E F G", "B>C C>B E>F F>E", []sideCheck{{side: 0, down: "B C E F"}}},
		{"down indirectly connected detected via seen", km, "A B C", "A>B A>C", []sideCheck{{side: 0, down: "A B C"}}},
		{"down indirectly connected detected via seen, keep E", km, "A B C D E", "B>C C>B A>D", []sideCheck{{side: 0, down: "A B C D"}}},
		{"indirectly connected combined with crashed", km, "A B D E | C", "A>B B>A", []sideCheck{{side: 0, down: "A B C"}}},
		{"indirectly connected with clean partition: side 1", km, "A B C | D E", "B>C C>B", []sideCheck{{side: 0, down: "B C D E"}}},
		{"indirectly connected with clean partition: side 2, not seen", km, "A B C | D E", "", []sideCheck{{side: 1, down: "D E"}}},
		{"indirectly connected with clean partition: side 2, seen before", km, "A B C | D E", "B>C C>B", []sideCheck{{side: 1, down: "B C D E"}}},
		{"indirectly connected on minority side: side 1", km, "A B C | D E F G", "B>C C>B", []sideCheck{{side: 0, down: "A B C"}}},
		{"indirectly connected on minority side: side 2, not seen", km, "A B C | D E F G", "", []sideCheck{{side: 1, down: "A B C"}}},
		{"indirectly connected on minority side: side 2, seen before", km, "A B C | D E F G", "B>C C>B", []sideCheck{{side: 1, down: "A B C"}}},
		{"indirectly connected on majority side: side 1, not seen", km, "A B C | D E F G", "", []sideCheck{{side: 0, down: "A B C"}}},
		{"indirectly connected on majority side: side 1, seen before", km, "A B C | D E F G", "D>E E>D", []sideCheck{{side: 0, down: "A B C D E"}}},
		{"indirectly connected on majority side: side 2", km, "A B C | D E F G", "D>E E>D", []sideCheck{{side: 1, down: "A B C D E"}}},
		{"indirectly connected spanning a clean partition", km, "A B C | D E F G", "B>E E>F F>B", []sideCheck{
			{side: 0, down: "A B C E F"}, {side: 1, down: "A B C E F"}}},
		{"indirectly connected via seen with clean partition: side 1", km, "A B C | D E F G", "", []sideCheck{{side: 0, down: "A B C"}}},
		{"indirectly connected via seen with clean partition: side 2", km, "A B C | D E F G", "D>E G>F", []sideCheck{{side: 1, down: "A B C D E F G"}}},
		{"double DownIndirectlyConnected: minority side fails", km, "A B C | D E F G", "D>E G>F", []sideCheck{
			{side: 0, wantErr: true}, {side: 1, down: "A B C D E F G"}}},
	})
}

// Ported from Akka.NET SplitBrainResolverSpec (KeepOldest_*), plus the
// two-node pathology the reference product documents.
func TestKeepOldestAkkaSpec(t *testing.T) {
	ko := KeepOldest{DownIfAlone: true}
	runSBR(t, []sbrCase{
		{"keep partition with oldest", ko, "A E | B C D", "", both("B C D")},
		{"keep partition with oldest with role", KeepOldest{DownIfAlone: true, Role: "role2"}, "A E | B C D", "", both("A E")},
		{"keep partition with oldest unless alone", ko, "E | A B C D", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "E"}, {side: 1, decision: DownUnreachable, down: "E"}}},
		{"keep partition with oldest in two nodes cluster", ko, "B | A", "", []sideCheck{
			{side: 0, decision: DownUnreachable, down: "A"},
			// THE PATHOLOGY: A is alone and the oldest (B) is on the other
			// side; the rescue branch needs this side to have >= 2 members,
			// so A downs itself.
			{side: 1, decision: DownReachable, down: "A"}}},
		{"keep one single oldest", ko, "A", "", []sideCheck{{side: 0, down: ""}}},
		{"keep oldest even when alone when down-if-alone off", KeepOldest{}, "E | A B C D", "", both("A B C D")},
		{"leaving/exiting edge case scenario 1: side 1", ko, "A B D | C Ex", "", []sideCheck{
			{side: 0, decision: DownUnreachable, down: "C"}}},
		{"leaving/exiting edge case scenario 1: side 2", ko, "A B D | C El", "", []sideCheck{
			{side: 1, decision: DownAll, down: "A B C D E"}}},
		{"leaving/exiting edge case scenario 2", ko, "A El | B C D", "", []sideCheck{
			{side: 0, decision: DownAll, down: "?"}, {side: 1, decision: DownReachable, down: "?"}}},
		{"leaving/exiting edge case scenario 3", ko, "A E | Bl Cl D", "", both("B C D")},
		{"leaving/exiting unless alone scenario 1", ko, "Dl E | A B C", "", []sideCheck{
			{side: 0, decision: DownAll, down: "?"}, {side: 1, decision: DownReachable, down: "?"}}},
		{"leaving/exiting unless alone scenario 4", ko, "E | A B Cl", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "?"}, {side: 1, decision: DownUnreachable, down: "?"}}},
		{"leaving/exiting unless alone scenario 3", ko, "E | A Bl Cl Dl", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "?"}, {side: 1, decision: DownAll, down: "?"}}},
		{"DownReachable on both sides when oldest exiting is alone: side 1", ko, "D Ex | A B C", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "?"}}},
		{"DownReachable on both sides when oldest leaving is alone: side 2", ko, "D El | A B C", "", []sideCheck{
			{side: 1, decision: DownReachable, down: "?"}}},
		{"one single oldest exiting: side 1", ko, "A | Bx", "", []sideCheck{{side: 0, decision: DownUnreachable, down: "?"}}},
		{"one single oldest leaving: side 2", ko, "A | Bl", "", []sideCheck{{side: 1, decision: DownAll, down: "?"}}},
		{"joining/up edge case unless alone", ko, "Aj E | B C D", "", []sideCheck{
			{side: 0, decision: DownReachable, down: "?"}, {side: 1, decision: DownAll, down: "?"}}},
		{"joining/up edge case with down-if-alone off", KeepOldest{}, "Aj E | B C D", "", []sideCheck{
			{side: 0, decision: DownUnreachable, down: "?"}, {side: 1, decision: DownReachable, down: "?"}}},
		{"down indirectly connected A B, keep C", ko, "A B C", "A>B B>A", []sideCheck{{side: 0, down: "A B"}}},
		{"indirectly connected on younger side: side 1", ko, "A B C | D E F G", "B>C C>B", []sideCheck{{side: 0, down: "A B C"}}},
		{"indirectly connected on younger side: side 2, not seen", ko, "A B C | D E F G", "", []sideCheck{{side: 1, down: "A B C"}}},
		{"indirectly connected on younger side: side 2, seen before", ko, "A B C | D E F G", "B>C C>B", []sideCheck{{side: 1, down: "A B C"}}},
		{"indirectly connected on oldest side: side 1, not seen", ko, "A B C | D E F G", "", []sideCheck{{side: 0, down: "A B C"}}},
		{"indirectly connected on oldest side: side 1, seen before", ko, "A B C | D E F G", "D>E E>D", []sideCheck{{side: 0, down: "A B C D E"}}},
		{"indirectly connected on oldest side: side 2", ko, "A B C | D E F G", "D>E E>D", []sideCheck{{side: 1, down: "A B C D E"}}},
		// down-if-alone rescue works from 3 nodes: two survivors down the lone oldest
		{"three nodes: lone oldest downs itself, the two keep going", ko, "A C | E", "", []sideCheck{
			{side: 0, decision: DownUnreachable, down: "E"}, {side: 1, decision: DownReachable, down: "E"}}},
	})
}

// Ported from Akka.NET SplitBrainResolverSpec (DownAllNodes_*, LeaseMajority_*).
func TestLeaseMajorityAndDownAllAkkaSpec(t *testing.T) {
	lm := LeaseMajority{AcquireLeaseDelayForMinority: 2000}
	runSBR(t, []sbrCase{
		{"down all", DownAllNodes{}, "A B C | D E", "", both("A B C D E")},
		{"AcquireLeaseAndDownUnreachable, DownReachable as reverse", lm, "A C E | B D", "", []sideCheck{
			{side: 0, decision: AcquireLeaseAndDownUnreachable, delay: 0, down: "B D", reverse: "A C E"},
			{side: 1, decision: AcquireLeaseAndDownUnreachable, delay: 2000, down: "A C E", reverse: "B D"}}},
		// Akka delays the half without the lowest address (A D E, side 0);
		// in otopcua an even split has no minority: both halves try at
		// once, and the lease the keeper took for the half with the
		// Primary decides (a frozen Primary took none).
		{"even split: both halves try at once (Akka: the lowest address's)", LeaseMajority{Role: "role2", AcquireLeaseDelayForMinority: 2000}, "A D E | B C", "", []sideCheck{
			{side: 0, decision: AcquireLeaseAndDownUnreachable, delay: 0, down: "B C", reverse: "A D E"},
			{side: 1, decision: AcquireLeaseAndDownUnreachable, delay: 0, down: "A D E", reverse: "B C"}}},
		{"a pair's even split: the survivor of a frozen oldest tries at once", lm, "A | B", "", []sideCheck{
			{side: 0, decision: AcquireLeaseAndDownUnreachable, delay: 0, down: "B", reverse: "A"},
			{side: 1, decision: AcquireLeaseAndDownUnreachable, delay: 0, down: "A", reverse: "B"}}},
		{"a strict minority still waits", lm, "A B C | D", "", []sideCheck{
			{side: 0, decision: AcquireLeaseAndDownUnreachable, delay: 0, down: "D", reverse: "A B C"},
			{side: 1, decision: AcquireLeaseAndDownUnreachable, delay: 2000, down: "A B C", reverse: "D"}}},
		{"down indirectly connected A B, keep C", lm, "A B C", "A>B B>A", []sideCheck{
			{side: 0, decision: AcquireLeaseAndDownIndirectlyConnected, down: "A B", reverse: "A B C"}}},
		{"indirectly connected with clean partition: side 1", lm, "A B C | D E", "B>C C>B", []sideCheck{
			{side: 0, decision: AcquireLeaseAndDownIndirectlyConnected, down: "B C D E", reverse: "A B C"}}},
		{"indirectly connected with clean partition: side 2, not seen", lm, "A B C | D E", "", []sideCheck{
			{side: 1, decision: AcquireLeaseAndDownUnreachable, delay: 2000, down: "A B C", reverse: "D E"}}},
		{"indirectly connected with clean partition: side 2, seen before", lm, "A B C | D E", "B>C C>B", []sideCheck{
			{side: 1, decision: AcquireLeaseAndDownIndirectlyConnected, down: "A B C", reverse: "B C D E"}}},
		{"indirectly connected leaving and down with clean partition", lm, "A B C D | El Fd", "E>F", []sideCheck{
			{side: 0, down: "E", reverse: "?"}, {side: 1, down: "A B C D E", reverse: "?"}}},
	})
}

func TestResolveFallsBackToDownAll(t *testing.T) {
	sides := [][]m.Member{
		{member(t, "A"), member(t, "B"), member(t, "C")},
		{member(t, "D"), member(t, "E"), member(t, "F"), member(t, "G")},
	}
	v := sideView(t, sides, 0, "D>E G>F")
	r := Resolve(KeepMajority{}, v)
	if !errors.Is(r.Fallback, ErrDoubleIndirectlyConnected) {
		t.Fatalf("fallback = %v, want ErrDoubleIndirectlyConnected", r.Fallback)
	}
	if got := names(t, r.Down); got != "A B C D E F G" {
		t.Fatalf("down = %s, want all", got)
	}
}

// Ported from Akka.NET SplitBrainResolverSpec.TestCollectAndFilter.
func TestViewCollectAndFilter(t *testing.T) {
	for _, byAge := range []bool{false, true} {
		sides := [][]m.Member{
			{member(t, "Aw"), member(t, "B"), member(t, "Cj")},
			{member(t, "D"), member(t, "El"), member(t, "Fd"), member(t, "Gx")},
		}
		str := func(ms []m.Member) string {
			var out []string
			for _, x := range ms {
				out = append(out, strings.ToUpper(x.Address.Host))
			}
			slices.Sort(out)
			return strings.Join(out, " ")
		}
		w1 := newView(sideView(t, sides, 0, ""), "", byAge)
		checks := []struct{ got, want string }{
			{str(w1.membersWithRole(false, false)), "B D E"},
			{str(w1.membersWithRole(true, false)), "A B C D E"},
			{str(w1.membersWithRole(false, true)), "B D"},
			{str(w1.membersWithRole(true, true)), "A B C D"},
			{str(w1.reachableWithRole(false, false)), "B"},
			{str(w1.reachableWithRole(true, false)), "A B C"},
			{str(w1.reachableWithRole(true, true)), "A B C"},
			{str(w1.unreachableWithRole(false, false)), "D E"},
			{str(w1.unreachableWithRole(true, false)), "D E"},
			{str(w1.unreachableWithRole(false, true)), "D"},
		}
		w2 := newView(sideView(t, sides, 1, ""), "", byAge)
		checks = append(checks, []struct{ got, want string }{
			{str(w2.unreachableWithRole(false, false)), "B"},
			{str(w2.unreachableWithRole(true, false)), "A B C"},
			{str(w2.unreachableWithRole(true, true)), "A B C"},
			{str(w2.reachableWithRole(false, false)), "D E"},
			{str(w2.reachableWithRole(false, true)), "D"},
		}...)
		for i, c := range checks {
			if c.got != c.want {
				t.Errorf("byAge=%v check %d: got [%s], want [%s]", byAge, i, c.got, c.want)
			}
		}
		if !w1.unreachable[member(t, "F").Address] || w2.unreachable[member(t, "F").Address] {
			t.Errorf("byAge=%v: F must be unreachable from side 1 only", byAge)
		}
	}
}

func TestAutoDown(t *testing.T) {
	b := member(t, "B")
	downed := member(t, "C").WithStatus(m.Down)
	exiting := member(t, "D").WithStatus(m.Leaving).WithStatus(m.Exiting)
	unreach := []UnreachableSince{{Member: b, Since: 1000}, {Member: downed, Since: 0}, {Member: exiting, Since: 0}}
	cases := []struct {
		name   string
		leader bool
		now    int64
		want   string
	}{
		{"leader before the timeout", true, 15_999, ""},
		{"leader at the timeout", true, 16_000, "B"},
		{"non-leader never downs", false, 60_000, ""},
	}
	for _, c := range cases {
		got := AutoDown(AutoDownInput{IsLeader: c.leader, Now: c.now, After: DefaultAutoDownUnreachableAfter, Unreachable: unreach})
		if names(t, got) != c.want {
			t.Errorf("%s: downs [%s], want [%s]", c.name, names(t, got), c.want)
		}
	}
}

func TestMemLease(t *testing.T) {
	var l MemLease
	if !l.Acquire("a") || !l.Acquire("a") {
		t.Fatal("a must acquire a free lease, and again while holding it")
	}
	if l.Acquire("b") {
		t.Fatal("b acquired a lease held by a")
	}
	if l.Release("b") || !l.Release("a") || l.Holder() != "" {
		t.Fatal("only the holder releases")
	}
	if !l.Acquire("b") || l.Holder() != "b" {
		t.Fatal("b must acquire the released lease")
	}
}

func TestTickOnlyWhenResponsibleAndStable(t *testing.T) {
	sides := [][]m.Member{{member(t, "A"), member(t, "C"), member(t, "E")}, {member(t, "B"), member(t, "D")}}
	v := sideView(t, sides, 0, "")
	full := TickInput{View: v, IsLeader: true, SelfAdded: true, Stable: true}
	if r, ok := Tick(KeepMajority{}, full); !ok || names(t, r.Down) != "B D" {
		t.Fatalf("responsible, stable: %v %v", r.Down, ok)
	}
	for _, in := range []TickInput{
		{View: v, IsLeader: false, SelfAdded: true, Stable: true},
		{View: v, IsLeader: true, SelfAdded: false, Stable: true},
		{View: v, IsLeader: true, SelfAdded: true, Stable: false},
		{View: View{Self: v.Self, Members: v.Members}, IsLeader: true, SelfAdded: true, Stable: true},
	} {
		if _, ok := Tick(KeepMajority{}, in); ok {
			t.Fatalf("must not decide: %+v", in)
		}
	}
}
