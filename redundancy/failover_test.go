package redundancy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestPlanFailover(t *testing.T) {
	tests := []struct {
		name    string
		members []MemberView
		cid     string
		want    string // target NodeId; "" when refused
		reason  string // part of the refusal reason
		noMem   bool
	}{
		{
			name: "the oldest Up driver is the target",
			members: []MemberView{
				mv("b", 4053, 2, true, "a", "admin", "driver"),
				mv("a", 4053, 1, true, "a", "admin", "driver"),
			},
			cid: "a", want: "a:4053",
		},
		{
			name: "same host, different ports: the up-number decides, not the address",
			members: []MemberView{
				mv("h", 4053, 7, true, "a", "driver"),
				mv("h", 4054, 3, true, "a", "driver"),
			},
			cid: "a", want: "h:4054",
		},
		{
			name: "equal up-numbers: the lower port of one host",
			members: []MemberView{
				mv("h", 4054, 1, true, "a", "driver"),
				mv("h", 4053, 1, true, "a", "driver"),
			},
			cid: "a", want: "h:4053",
		},
		{
			name: "an older admin-only member is never the target",
			members: []MemberView{
				mv("adm", 1, 1, true, "a", "admin"),
				mv("d1", 1, 2, true, "a", "driver"),
				mv("d2", 1, 3, true, "a", "driver"),
			},
			cid: "a", want: "d1:1",
		},
		{
			name: "other ClusterIds do not count as peers",
			members: []MemberView{
				mv("a1", 1, 1, true, "a", "driver"),
				mv("b1", 1, 2, true, "b", "driver"),
				mv("b2", 1, 3, true, "b", "driver"),
			},
			cid: "a", reason: "only one Up driver member (a1:1): a failover would be a shutdown",
		},
		{
			name: "a Joining or Leaving driver is no peer",
			members: []MemberView{
				mv("a1", 1, 1, true, "a", "driver"),
				mv("a2", 1, 2, false, "a", "driver"),
			},
			cid: "a", reason: "only one Up driver member (a1:1)",
		},
		{
			name: "two incarnations at one NodeId count once",
			members: []MemberView{
				mv("a1", 1, 1, true, "a", "driver"),
				mv("a1", 1, 5, true, "a", "driver"),
			},
			cid: "a", reason: "only one Up driver member (a1:1)",
		},
		{
			name:    "no Up driver member",
			members: []MemberView{mv("adm", 1, 1, true, "a", "admin"), mv("d", 1, 2, false, "a", "driver")},
			cid:     "a", reason: "no Up driver member",
		},
		{
			name:    "unknown ClusterId",
			members: []MemberView{mv("a1", 1, 1, true, "a", "driver"), mv("a2", 1, 2, true, "a", "driver")},
			cid:     "nope", reason: "no member", noMem: true,
		},
		{name: "empty mesh", cid: "a", reason: "no member", noMem: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanFailover(tt.members, tt.cid)
			if tt.want != "" {
				if err != nil || got.NodeID != tt.want {
					t.Fatalf("PlanFailover = %q, %v; want %q", got.NodeID, err, tt.want)
				}
				if p := Elect(tt.members)[tt.cid].Primary; p != got.NodeID {
					t.Fatalf("target %q is not Elect's Primary %q", got.NodeID, p)
				}
				return
			}
			var ref *FailoverRefusedError
			if !errors.As(err, &ref) || !strings.Contains(ref.Reason, tt.reason) || ref.ClusterID != tt.cid {
				t.Fatalf("PlanFailover = %q, %v; want a refusal of %q saying %q", got.NodeID, err, tt.cid, tt.reason)
			}
			if errors.Is(err, ErrNoMember) != tt.noMem {
				t.Fatalf("errors.Is(%v, ErrNoMember) = %v, want %v", err, !tt.noMem, tt.noMem)
			}
			if got.NodeID != "" {
				t.Fatalf("a refusal names target %q", got.NodeID)
			}
		})
	}
}

// TestPlanFailoverParityWithElect: over many generated meshes (statuses,
// up-numbers, roles, several ClusterIds, nodes sharing a host on different
// ports) PlanFailover allows exactly when the ClusterId has two or more Up
// driver members, and then names exactly the node Elect makes Primary.
func TestPlanFailoverParityWithElect(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cids := []string{"a", "b", "c"}
		hosts := []string{"10.0.0.1", "10.0.0.2", "node"}
		n := rapid.IntRange(0, 8).Draw(t, "n")
		var members []MemberView
		used := map[string]bool{}
		for i := range n {
			host := rapid.SampledFrom(hosts).Draw(t, fmt.Sprintf("host%d", i))
			port := rapid.IntRange(4053, 4056).Draw(t, fmt.Sprintf("port%d", i))
			id := fmt.Sprintf("%s:%d", host, port)
			if used[id] {
				continue // membership holds one live incarnation per address
			}
			used[id] = true
			var roles []string
			if rapid.Bool().Draw(t, fmt.Sprintf("driver%d", i)) {
				roles = append(roles, RoleDriver)
			}
			if rapid.Bool().Draw(t, fmt.Sprintf("admin%d", i)) {
				roles = append(roles, "admin")
			}
			members = append(members, MemberView{
				NodeID: id, Host: host, Port: port,
				Up:       rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("status%d", i)) > 0, // Up more often than not
				UpNumber: rapid.IntRange(1, 4).Draw(t, fmt.Sprintf("up%d", i)),
				Roles:    roles, ClusterID: rapid.SampledFrom(cids).Draw(t, fmt.Sprintf("cid%d", i)),
			})
		}
		cid := rapid.SampledFrom(cids).Draw(t, "target cid")
		upDrivers := 0
		for _, m := range members {
			if m.ClusterID == cid && m.Up && m.HasRole(RoleDriver) {
				upDrivers++
			}
		}
		got, err := PlanFailover(members, cid)
		if upDrivers < 2 {
			var ref *FailoverRefusedError
			if !errors.As(err, &ref) {
				t.Fatalf("%d Up driver members: PlanFailover = %q, %v; want a refusal", upDrivers, got.NodeID, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%d Up driver members: refused: %v", upDrivers, err)
		}
		if want := Elect(members)[cid].Primary; got.NodeID != want {
			t.Fatalf("PlanFailover target %q, Elect's Primary %q (members %+v)", got.NodeID, want, members)
		}
		if !got.Up || !got.HasRole(RoleDriver) || got.ClusterID != cid {
			t.Fatalf("target %+v is not an Up driver member of %q", got, cid)
		}
	})
}
