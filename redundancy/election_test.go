package redundancy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

func mv(id string, port, up int, isUp bool, cluster string, roles ...string) MemberView {
	return MemberView{NodeID: fmt.Sprintf("%s:%d", id, port), Host: id, Port: port, Up: isUp, UpNumber: up, Roles: roles, ClusterID: cluster}
}

func TestElect(t *testing.T) {
	tests := []struct {
		name    string
		members []MemberView
		want    map[string]string // ClusterId → Primary
		roles   map[string]Role
	}{
		{
			name: "oldest driver wins even with the higher address",
			members: []MemberView{
				mv("10.0.0.2", 4053, 1, true, "a", "admin", "driver"),
				mv("10.0.0.1", 4053, 2, true, "a", "admin", "driver"),
			},
			want:  map[string]string{"a": "10.0.0.2:4053"},
			roles: map[string]Role{"10.0.0.2:4053": RolePrimary, "10.0.0.1:4053": RoleSecondary},
		},
		{
			name: "one Primary per ClusterId",
			members: []MemberView{
				mv("c1", 1, 1, true, "main", "admin", "driver"),
				mv("c2", 1, 2, true, "main", "admin", "driver"),
				mv("a1", 1, 3, true, "site-a", "driver"),
				mv("a2", 1, 4, true, "site-a", "driver"),
				mv("b2", 1, 5, true, "site-b", "driver"),
				mv("b1", 1, 6, true, "site-b", "driver"),
			},
			want: map[string]string{"main": "c1:1", "site-a": "a1:1", "site-b": "b2:1"},
		},
		{
			name: "members without driver are Detached and never Primary",
			members: []MemberView{
				mv("adm", 1, 1, true, "a", "admin"),
				mv("drv", 1, 2, true, "a", "driver"),
			},
			want:  map[string]string{"a": "drv:1"},
			roles: map[string]Role{"adm:1": RoleDetached, "drv:1": RolePrimary},
		},
		{
			name: "a Leaving oldest is no longer Primary",
			members: []MemberView{
				mv("old", 1, 1, false, "a", "driver"),
				mv("new", 1, 2, true, "a", "driver"),
			},
			want:  map[string]string{"a": "new:1"},
			roles: map[string]Role{"old:1": RoleSecondary, "new:1": RolePrimary},
		},
		{
			name:    "no Up driver: no Primary",
			members: []MemberView{mv("j", 1, 0, false, "a", "driver"), mv("adm", 1, 1, true, "a", "admin")},
			want:    map[string]string{"a": ""},
			roles:   map[string]Role{"j:1": RoleSecondary, "adm:1": RoleDetached},
		},
		{
			name: "equal up-numbers: lower address, then lower port",
			members: []MemberView{
				mv("h", 2, 1, true, "a", "driver"),
				mv("h", 1, 1, true, "a", "driver"),
			},
			want: map[string]string{"a": "h:1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Elect(tt.members)
			for cid, want := range tt.want {
				if got[cid].Primary != want {
					t.Fatalf("Primary of %s = %q, want %q", cid, got[cid].Primary, want)
				}
			}
			for id, want := range tt.roles {
				for _, e := range got {
					if r, ok := e.Roles[id]; ok && r != want {
						t.Fatalf("role of %s = %v, want %v", id, r, want)
					}
				}
			}
		})
	}
}

// TestElectIsPureInAge checks the election against a brute-force statement
// of the rule, for random member sets in random orders.
func TestElectIsPureInAge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 8).Draw(t, "n")
		members := make([]MemberView, n)
		for i := range members {
			roles := []string{}
			if rapid.Bool().Draw(t, "driver") {
				roles = append(roles, RoleDriver)
			}
			members[i] = MemberView{
				NodeID:    fmt.Sprintf("h%d:%d", i, 4000+i),
				Host:      fmt.Sprintf("h%d", rapid.IntRange(0, 2).Draw(t, "host")),
				Port:      4000 + i,
				Up:        rapid.Bool().Draw(t, "up"),
				UpNumber:  rapid.IntRange(0, 4).Draw(t, "upNumber"),
				Roles:     roles,
				ClusterID: rapid.SampledFrom([]string{"x", "y"}).Draw(t, "cluster"),
			}
		}
		got := Elect(members)
		shuffled := append([]MemberView(nil), members...)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		again := Elect(shuffled)
		for cid, e := range got {
			if again[cid].Primary != e.Primary {
				t.Fatalf("order changed the Primary of %s: %q vs %q", cid, e.Primary, again[cid].Primary)
			}
			// Brute force: no eligible member is strictly older than the Primary.
			primaries := 0
			for _, m := range members {
				if m.ClusterID != cid {
					continue
				}
				if e.Roles[m.NodeID] == RolePrimary {
					primaries++
				}
				eligible := m.Up && m.HasRole(RoleDriver)
				if e.Primary == "" && eligible {
					t.Fatalf("%s has an eligible member %s but no Primary", cid, m.NodeID)
				}
				if e.Primary != "" && eligible && m.NodeID != e.Primary {
					var p MemberView
					for _, c := range members {
						if c.NodeID == e.Primary {
							p = c
						}
					}
					if older(m, p) {
						t.Fatalf("%s is older than Primary %s", m.NodeID, p.NodeID)
					}
				}
			}
			if (e.Primary != "") != (primaries == 1) {
				t.Fatalf("%s: %d members with role Primary, Primary %q", cid, primaries, e.Primary)
			}
		}
	})
}
