package host

import (
	"log/slog"
	"sync"
	"time"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/redundancy"
)

// newerEpochs answers the alarm historian's report that the Config DB
// refused its drain because a newer redundancy epoch is stored.
//
// That happens to the Primary that comes out of a split: the other side's
// Primary was issued an epoch on its own clock during the split, drained
// with it, and then rejoined as Secondary (or went away) while this node
// kept its role and its older epoch — and the fence would refuse it until
// the Primary changed again, leaving alarm_history without the transitions
// of that whole time. When this node is the Primary of its set and no
// other Primary can act — the set is whole again (every node an Up driver
// member this node holds reachable), or under lease-majority it holds the
// lease — it folds the stored epoch into its node's epoch book; the
// redundancy-state singleton's next publish (at most
// redundancy.RepublishEvery later) then issues this Primary a new epoch
// above it and the drain resumes. While the split lasts it does nothing:
// the fence keeps the two Primaries' drains apart.
//
// The singleton runs on the oldest admin node; in a pair whose nodes carry
// both roles (the default) that is the Primary itself.
type newerEpochs struct {
	cluster  string
	expected int // this node and OpcUa:PeerApplicationUris
	view     *redundancy.RoleView
	d        interface{ Snapshot() membership.State }
	tracker  *redundancy.Tracker
	keeper   *leaseKeeper // nil without a shared lease
	log      *slog.Logger

	mu     sync.Mutex
	noted  time.Time // the last "stays fenced" line; mu must be held
	raised uint64    // the highest epoch folded in; mu must be held
}

func newNewerEpochs(cfg *config.Config, view *redundancy.RoleView, d interface{ Snapshot() membership.State }, tracker *redundancy.Tracker, keeper *leaseKeeper, log *slog.Logger) *newerEpochs {
	if view == nil || d == nil || tracker == nil {
		return nil
	}
	return &newerEpochs{cluster: cfg.Node.ClusterId, expected: 1 + len(cfg.OpcUa.PeerApplicationUris),
		view: view, d: d, tracker: tracker, keeper: keeper, log: log}
}

// stored is historian.Options.OnNewerEpoch.
func (n *newerEpochs) stored(newest uint64) {
	if n.view.Role() != redundancy.RolePrimary {
		return
	}
	whole := setWhole(n.d.Snapshot(), n.cluster, n.expected)
	leased := n.keeper != nil && n.keeper.Holder() == n.keeper.owner()
	n.mu.Lock()
	defer n.mu.Unlock()
	if !whole && !leased {
		if time.Since(n.noted) >= time.Minute {
			n.noted = time.Now()
			n.log.Warn("alarm history: a Primary of another side of a split stored a newer epoch; this Primary drains again once its set is whole",
				"newest", newest)
		}
		return
	}
	if newest <= n.raised {
		return // folded in already; the singleton's next publish issues the new epoch
	}
	n.raised = newest
	n.tracker.ObserveEpochs(redundancy.EpochBook{n.cluster: {Epoch: newest}})
	n.log.Warn("alarm history: a Primary of another side of a split stored a newer epoch; this node, Primary of its set, takes a new epoch above it",
		"newest", newest, "whole", whole, "lease", leased)
}

// setWhole reports whether expected driver nodes of cluster, this one
// included, are Up members that st.Self holds reachable.
func setWhole(st membership.State, cluster string, expected int) bool {
	n := 0
	for _, m := range st.Gossip.Members {
		if m.ClusterID != cluster || !m.HasRole(config.RoleDriver) || m.Status != membership.Up {
			continue
		}
		if m.Address == st.Self || st.Gossip.Reachability.StatusFrom(st.Self, m.Address) == membership.Reachable {
			n++
		}
	}
	return n >= expected
}
