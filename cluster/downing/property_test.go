package downing

import (
	"fmt"
	"testing"

	m "github.com/otopcua/otopcua/cluster/membership"
	"pgregory.net/rapid"
)

// genSplit draws a cluster of 1..9 members (consistent view on both sides)
// and a clean partition into two non-empty sides.
func genSplit(t *rapid.T) [][]m.Member {
	n := rapid.IntRange(2, 9).Draw(t, "n")
	var sides [2][]m.Member
	for i := 0; i < n; i++ {
		h := fmt.Sprintf("n%d", i)
		st := rapid.SampledFrom([]m.Status{m.Up, m.Up, m.Up, m.Joining, m.WeaklyUp, m.Leaving, m.Exiting, m.Down}).Draw(t, "status-"+h)
		mb := m.Member{
			Address:  m.UniqueAddress{Host: h, Port: 2552, UID: uint64(i + 1)},
			Status:   st,
			UpNumber: rapid.IntRange(1, 9).Draw(t, "up-"+h),
		}
		if st == m.Joining || st == m.WeaklyUp {
			mb.UpNumber = m.NotUp
		}
		if rapid.Bool().Draw(t, "role-"+h) {
			mb.Roles = []string{"driver"}
		}
		side := rapid.IntRange(0, 1).Draw(t, "side-"+h)
		sides[side] = append(sides[side], mb)
	}
	if len(sides[0]) == 0 || len(sides[1]) == 0 {
		t.Skip("one side empty")
	}
	return sides[:]
}

// survivors are the members of side still able to serve after the side
// acted on its own decision: not downed, and Joining..Leaving.
func survivors(t *rapid.T, s Strategy, sides [][]m.Member, side int) []m.UniqueAddress {
	v := sideView(t, sides, side, "")
	down, err := NodesToDown(s, v, Decide(s, v).Decision)
	if err != nil {
		t.Fatalf("side %d: %v", side, err)
	}
	gone := toSet(down)
	var out []m.UniqueAddress
	for _, x := range sides[side] {
		switch x.Status {
		case m.Joining, m.WeaklyUp, m.Up, m.Leaving:
			if !gone[x.Address] {
				out = append(out, x.Address)
			}
		}
	}
	return out
}

// Each side of a clean partition runs the strategy on its own view; at most
// one side may keep any member.
func TestPropAtMostOneSideSurvives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sides := genSplit(t)
		role := rapid.SampledFrom([]string{"", "driver"}).Draw(t, "role")
		strategies := []Strategy{
			KeepMajority{Role: role},
			KeepOldest{DownIfAlone: true, Role: role},
			KeepOldest{DownIfAlone: false, Role: role},
			StaticQuorum{QuorumSize: rapid.IntRange(1, 5).Draw(t, "quorum"), Role: role},
		}
		for _, s := range strategies {
			s0, s1 := survivors(t, s, sides, 0), survivors(t, s, sides, 1)
			if len(s0) > 0 && len(s1) > 0 {
				t.Fatalf("%s%+v: both sides keep members: %v and %v\nsides %v", s.Name(), s, s0, s1, sides)
			}
		}
	})
}

// The keep-oldest survivor is the side holding the oldest member, except
// the down-if-alone rescue (oldest alone against ≥ 2).
func TestPropKeepOldestKeepsTheOldestSide(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sides := genSplit(t)
		s := KeepOldest{DownIfAlone: false}
		var all []m.Member
		for _, side := range sides {
			for _, x := range side {
				if x.Status == m.Up || x.Status == m.Leaving {
					all = append(all, x)
				}
			}
		}
		if len(all) == 0 {
			t.Skip("no Up member")
		}
		// members that could be Up or Exiting elsewhere trigger DownAll; skip those
		for _, side := range sides {
			for _, x := range side {
				if x.Status == m.Leaving || x.Status == m.Joining || x.Status == m.WeaklyUp {
					t.Skip("membership change in flight")
				}
			}
		}
		oldest, _ := m.Oldest(all, "")
		for i := range sides {
			here := false
			for _, x := range sides[i] {
				here = here || x.Address == oldest.Address
			}
			if got := len(survivors(t, s, sides, i)) > 0; got != here {
				t.Fatalf("side %d holds oldest=%v but survives=%v", i, here, got)
			}
		}
	})
}
