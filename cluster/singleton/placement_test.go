package singleton

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	m "github.com/otopcua/otopcua/cluster/membership"
)

func ua(host string, uid uint64) m.UniqueAddress {
	return m.UniqueAddress{Host: host, Port: 2552, UID: uid}
}

// mem is a member with an up-number (up 0: never Up) and a status.
func mem(u m.UniqueAddress, up int, s m.Status, roles ...string) m.Member {
	mb := m.NewMember(u, roles, "")
	if up == 0 {
		if s == m.Down {
			mb = mb.WithStatus(m.Down)
		}
		return mb
	}
	mb = mb.WithUp(up)
	switch s {
	case m.Leaving:
		mb = mb.WithStatus(m.Leaving)
	case m.Exiting:
		mb = mb.WithStatus(m.Leaving).WithStatus(m.Exiting)
	case m.Down:
		mb = mb.WithStatus(m.Down)
	}
	return mb
}

func state(self m.UniqueAddress, ms ...m.Member) m.State {
	return m.State{Gossip: m.NewGossip(ms...), Self: self}
}

var (
	na = ua("a", 1)
	nb = ua("b", 2)
	nc = ua("c", 3)
)

func TestPlacementTable(t *testing.T) {
	cases := []struct {
		name string
		ms   []m.Member
		role string
		want m.UniqueAddress // zero: none
	}{
		{"oldest Up", []m.Member{mem(na, 1, m.Up, "admin"), mem(nb, 2, m.Up, "admin")}, "admin", na},
		{"lower up-number wins over address", []m.Member{mem(na, 2, m.Up, "admin"), mem(nb, 1, m.Up, "admin")}, "admin", nb},
		{"tie broken by address", []m.Member{mem(nb, 1, m.Up, "admin"), mem(na, 1, m.Up, "admin")}, "admin", na},
		{"role filter", []m.Member{mem(na, 1, m.Up, "driver"), mem(nb, 2, m.Up, "admin")}, "admin", nb},
		{"empty role: any member", []m.Member{mem(na, 1, m.Up, "driver"), mem(nb, 2, m.Up)}, "", na},
		{"Leaving keeps it", []m.Member{mem(na, 1, m.Leaving, "admin"), mem(nb, 2, m.Up, "admin")}, "admin", na},
		{"Exiting hands it over", []m.Member{mem(na, 1, m.Exiting, "admin"), mem(nb, 2, m.Up, "admin")}, "admin", nb},
		{"Down loses it", []m.Member{mem(na, 1, m.Down, "admin"), mem(nb, 2, m.Up, "admin")}, "admin", nb},
		{"Joining has no age", []m.Member{mem(na, 0, m.Joining, "admin")}, "admin", m.UniqueAddress{}},
		{"nobody with the role", []m.Member{mem(na, 1, m.Up, "driver")}, "admin", m.UniqueAddress{}},
	}
	for _, tc := range cases {
		got, ok := Placement(state(nc, tc.ms...), tc.role)
		if ok != !tc.want.IsZero() || (ok && got.Address != tc.want) {
			t.Errorf("%s: Placement = %v,%v want %v", tc.name, got.Address, ok, tc.want)
		}
	}
}

func TestPlacementIgnoresReachability(t *testing.T) {
	st := state(nb, mem(na, 1, m.Up, "admin"), mem(nb, 2, m.Up, "admin"))
	st.Gossip = st.Gossip.WithReachability(st.Gossip.Reachability.Unreachable(nb, na))
	if p, _ := Placement(st, "admin"); p.Address != na {
		t.Fatalf("an unreachable oldest that is not downed must keep the singleton, got %v", p.Address)
	}
}

func TestJudgePrevious(t *testing.T) {
	up := state(nb, mem(na, 1, m.Up, "admin"), mem(nb, 2, m.Up, "admin"))
	exiting := state(nb, mem(na, 1, m.Exiting, "admin"), mem(nb, 2, m.Up, "admin"))
	down := state(nb, mem(na, 1, m.Down, "admin"), mem(nb, 2, m.Up, "admin"))
	downUnreachable := down
	downUnreachable.Gossip = down.Gossip.WithReachability(down.Gossip.Reachability.Unreachable(nb, na))
	upUnreachable := up
	upUnreachable.Gossip = up.Gossip.WithReachability(up.Gossip.Reachability.Unreachable(nb, na))
	removed := state(nb, mem(nb, 2, m.Up, "admin"))
	cases := []struct {
		name string
		st   m.State
		want Previous
	}{
		{"Up", up, PreviousMayRun},
		{"unreachable, not downed", upUnreachable, PreviousMayRun},
		{"Exiting", exiting, PreviousMayRun},
		{"Down, reachable", down, PreviousGoneAfterTimeout},
		{"Down, unreachable", downUnreachable, PreviousGone},
		{"removed", removed, PreviousGone},
	}
	for _, tc := range cases {
		if got := JudgePrevious(tc.st, na); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFormerHolder(t *testing.T) {
	d := ua("d", 4)
	st := state(nc, mem(na, 1, m.Exiting, "admin"), mem(nb, 2, m.Down, "admin"), mem(nc, 3, m.Up, "admin"), mem(d, 4, m.Exiting, "admin"))
	if h := formerHolders(st, "admin"); !slices.Equal(h, []m.UniqueAddress{na, nb}) {
		t.Fatalf("former holders %v: want the older Exiting/Down members a and b, oldest first", h)
	}
	st = state(nc, mem(na, 1, m.Exiting, "driver"), mem(nc, 3, m.Up, "admin"), mem(d, 4, m.Exiting, "admin"))
	if h := formerHolders(st, "admin"); len(h) != 0 {
		t.Fatalf("younger or other-role members cannot hold it: got %v", h)
	}
}

// TestPlacementMatchesBruteForce: Placement is the first of the Up or
// Leaving members with the role sorted by (up-number, address).
func TestPlacementMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(t, "n")
		statuses := []m.Status{m.Joining, m.Up, m.Leaving, m.Exiting, m.Down}
		var ms []m.Member
		for i := range n {
			u := ua(string(rune('a'+i)), uint64(i+1))
			s := rapid.SampledFrom(statuses).Draw(t, "status")
			up := 0
			if s != m.Joining {
				up = rapid.IntRange(1, 4).Draw(t, "up") // ties on purpose
			}
			var roles []string
			if rapid.Bool().Draw(t, "admin") {
				roles = append(roles, "admin")
			}
			ms = append(ms, mem(u, up, s, roles...))
		}
		got, ok := Placement(state(ua("z", 99), ms...), "admin")
		var cand []m.Member
		for _, mb := range ms {
			if (mb.Status == m.Up || mb.Status == m.Leaving) && slices.Contains(mb.Roles, "admin") {
				cand = append(cand, mb)
			}
		}
		slices.SortFunc(cand, func(x, y m.Member) int {
			if x.UpNumber != y.UpNumber {
				return x.UpNumber - y.UpNumber
			}
			return x.Address.Address().Compare(y.Address.Address())
		})
		if len(cand) == 0 {
			if ok {
				t.Fatalf("placement %v with no candidate", got)
			}
			return
		}
		if !ok || got.Address != cand[0].Address {
			t.Fatalf("placement %v,%v want %v", got.Address, ok, cand[0].Address)
		}
	})
}
