package host

import (
	"log/slog"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/telemetry"
)

// newGuard is the node's one Primary gate, handed to every site (writes,
// alarm methods and emits, the historian drain): it decides on the
// RoleView's inputs, counts denials in primary_gate_denied and logs each
// site's verdict when it changes.
func newGuard(view *redundancy.RoleView, metrics *telemetry.Metrics, logger *slog.Logger) *gate.Guard {
	return gate.NewGuard(view, metrics, logger.With("component", "gate"))
}

// aloneByConfiguration reports whether this node is a single-node set by
// configuration: no OpcUa:PeerApplicationUris and no Cluster:SeedNodes
// but its own address (an empty list is its own address after loading).
// Such a node has no driver peer to wait for, so the gate services it
// before it has formed its cluster; any other node waits to be a member.
func aloneByConfiguration(cfg *config.Config) bool { return cfg.SingleNode() }
