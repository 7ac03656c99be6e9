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
// before anything listens or joins), the Config DB (ConfigDb:Provider and
// ConnectionString, opened and migrated; the SQLite default
// "file:otopcua.db" lands in the working directory; an unreachable
// networked database does not stop start-up, its migration is retried in
// the background), the OPC UA server, the membership daemon (joins at
// once), the redundancy runtime, then HTTP.
//
// The redundancy runtime (redundancy.go): the DB probe (every 5 s), the
// pub/sub mediator, and by role — admin: a Tracker of the topic
// redundancy-state and the cluster singleton "redundancy-state" running the
// RedundancyStateActor; driver: the OpcUaPublishActor, which computes
// servicelevel.Of (reading the drain and test-hook pins of levels.go among
// its inputs) and hands every level to the repeat-suppressing publisher
// that counts otopcua.redundancy.service_level_change, then to the
// deferred publisher of Server.ServiceLevel, and the PeerProbeSupervisor.
// A node without the driver role publishes servicelevel.Of of its pins
// alone (0 unless the test hook names a level). The runtime stops
// after the graceful leave (its singleton hands over during the leave),
// before the daemon and the actor system.
//
// With OTOPCUA_TEST_HOOKS=1 (EnvTestHooks), POST /debug/service-level owns
// the ServiceLevel from start-up (the test-hook pin, 255 until it names a
// level) until ?level=runtime. Exit codes as seen by `otopcua host`:
// 0 after SIGTERM/SIGINT (graceful leave, at most LeaveTimeout), 1 when a
// part fails, 2 for an invalid configuration, ExitRestart (3) when the
// cluster ended this node's membership.
package host
