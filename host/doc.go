// Package host wires one otopcua node: the cluster transport and
// membership daemon, the OPC UA server with its redundancy surface, the
// HTTP endpoints (/healthz, /readyz, /metrics, /api/cluster/members) and
// telemetry.
//
// Run is called by `otopcua host` with a configuration that has already
// been loaded and validated. It returns nil after a graceful stop (ctx
// cancelled: the node leaves the cluster first), an *ExitError with
// ExitRestart when the cluster ended this node's membership (downed,
// removed, or left on request), and another error when a part cannot start
// or fails.
//
// Start-up order: the cluster transport (a used Cluster:Port fails here,
// before anything listens or joins), the OPC UA server, the membership
// daemon (joins at once), then HTTP. Exit codes as seen by `otopcua host`:
// 0 after SIGTERM/SIGINT (graceful leave, at most LeaveTimeout), 1 when a
// part fails, 2 for an invalid configuration, ExitRestart (3) when the
// cluster ended this node's membership.
package host
