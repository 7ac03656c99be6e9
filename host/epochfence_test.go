package host

import (
	"log/slog"
	"testing"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/redundancy"
)

// TestNewerEpochsFoldsOnlyForAPrimaryNoOtherCanRival: the epoch the
// Config DB named when it refused the drain is folded into the node's
// epoch book (so that the singleton issues this Primary a new epoch above
// it) only when this node is the Primary and no other Primary can act:
// its set whole again, or under lease-majority the lease held by it. In a
// split the fence keeps the two Primaries' drains apart.
func TestNewerEpochsFoldsOnlyForAPrimaryNoOtherCanRival(t *testing.T) {
	whole := stateOf(nodeA, mem(nodeA, membership.Up, 1, "site", "driver"), mem(nodeB, membership.Up, 2, "site", "driver"))
	split := stateOf(nodeA, mem(nodeA, membership.Up, 1, "site", "driver"), mem(nodeB, membership.Up, 2, "site", "driver"))
	split.Gossip = split.Gossip.WithReachability(split.Gossip.Reachability.Unreachable(nodeA, nodeB))
	alone := stateOf(nodeA, mem(nodeA, membership.Up, 1, "site", "driver"))
	otherCluster := stateOf(nodeA, mem(nodeA, membership.Up, 1, "site", "driver"), mem(nodeB, membership.Up, 2, "line", "driver"))
	for _, tc := range []struct {
		name   string
		st     membership.State
		role   redundancy.Role
		leased bool
		folded bool
	}{
		{"Primary of a whole set", whole, redundancy.RolePrimary, false, true},
		{"Secondary of a whole set", whole, redundancy.RoleSecondary, false, false},
		{"Primary, peer unreachable", split, redundancy.RolePrimary, false, false},
		{"Primary, peer downed and gone", alone, redundancy.RolePrimary, false, false},
		{"Primary, the peer a member of another ClusterId", otherCluster, redundancy.RolePrimary, false, false},
		{"Primary, peer unreachable, lease held", split, redundancy.RolePrimary, true, true},
		{"Primary, peer gone, lease held", alone, redundancy.RolePrimary, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := &keeperMembers{st: tc.st}
			cfg := config.Default()
			cfg.Node.ClusterId = "site"
			cfg.OpcUa.PeerApplicationUris = []string{"urn:b"}
			view := redundancy.NewRoleView(ms, "site")
			view.SetRole(tc.role, 7)
			tracker := redundancy.NewTracker()
			var k *leaseKeeper
			if tc.leased {
				r := newKeeperRig(t)
				if !r.k.Acquire(nodeA.String()) {
					t.Fatal("the rig's keeper did not take the lease")
				}
				k = r.k
			}
			n := newNewerEpochs(cfg, view, ms, tracker, k, slog.New(slog.DiscardHandler))
			n.stored(1_000_000)
			got := tracker.Epochs()["site"].Epoch
			if want := map[bool]uint64{true: 1_000_000, false: 0}[tc.folded]; got != want {
				t.Fatalf("epoch book holds %d for site, want %d", got, want)
			}
		})
	}
}
