// Package host wires one otopcua node: the cluster transport and
// membership daemon, the OPC UA server with its redundancy surface, the
// HTTP endpoints (/healthz, /readyz, /metrics, /api/cluster/members) and
// telemetry. It holds no policy of its own beyond the order of its parts;
// the decisions live in the packages it wires.
//
// Run is called by `otopcua host` with a configuration that has already
// been loaded and validated. It returns nil after a graceful stop (ctx
// cancelled: the node leaves the cluster first), an *ExitError with
// ExitRestart when the cluster ended this node's membership (downed,
// removed, or left on request), and another error when a part cannot start
// or fails.
//
// # Parts
//
// Run starts the parts of wiring.partList in order through parts, which
// records each part's stop; the first start that fails stops what started,
// and the end of the run stops them all, in reverse start order, but for
// the Config DB (see below). Start order:
//
//  1. telemetry (the metrics provider);
//  2. cluster transport: the actor system and its remote listen on
//     Cluster:Port first, so that a used port fails here, before anything
//     else listens or joins;
//  3. supervision tree;
//  4. Config DB (ConfigDb:Provider and ConnectionString, opened and
//     migrated; the SQLite default "file:otopcua.db" lands in the working
//     directory; an unreachable networked database does not stop start-up,
//     its migration is retried in the background);
//  5. OPC UA security (the admin users, which also check UserName tokens);
//  6. the session mirror (OpcUa:RedundancySupport HotAndMirrored, mirror.go:
//     named by this process's incarnation, drawn before anything starts),
//     OPC UA server, its metrics, the ServiceLevel publisher, the floating
//     address's executor (Redundancy:FloatingAddress, when set: a leftover
//     address from this node's previous run is removed here, before the
//     endpoint opens), then the OPC UA endpoint (listens);
//  7. lease (Cluster:Lease, when set);
//  8. membership daemon (joins at once), node info;
//  9. redundancy runtime, the session mirror's binding (its batches over
//     the mediator, its peers from membership), data plane, then the
//     mirror opens to its peers' sessions (their items sample the tags of
//     the deployment the data plane just applied);
//  10. manual failover (receiver, admin panel watcher, admin backend),
//     RequestServerStateChange, the floating address's loop (its stop
//     releases the address this node holds);
//  11. HTTP (Http:Port, when set).
//
// Stop order: HTTP, data plane, the mirror's binding, redundancy runtime,
// OPC UA server, the session mirror, supervision tree, the membership daemon with the actor system (the
// cluster transport's stop: gracefully unless a peer is dead), Config DB,
// telemetry. The Config DB opens after the transport but closes after it:
// the actors and the daemon's lease use it until the system stops. Before
// the stop, the ending does its part (ending, exitcode.go): after SIGTERM
// or an actor that failed past its restart limit the node hands its
// floating address over (when it holds it) and leaves the cluster first, so its singleton hands over while everything still runs;
// a manual failover drains and leaves; each ending but SIGTERM starts the
// termination watchdog with its exit code before the stop.
//
// The redundancy runtime (redundancy.go) is parts of its own: the pub/sub
// mediator; by role admin, a Tracker of the topic redundancy-state and the
// cluster singleton "redundancy-state" running the RedundancyStateActor;
// the role view (the Primary gate's inputs; alone by configuration, see
// gate.go); the woken-process fence (woken.go, every strategy: a node
// whose loop did not run for longer than the acceptable heartbeat pause
// acts on nothing and shows 100 at most until it has heard every peer);
// the lease keeper; the DB probe (every 5 s); by role driver, the
// OpcUaPublishActor, which computes servicelevel.Of (the drain and
// test-hook pins of levels.go among its inputs) and hands every level to
// the repeat-suppressing publisher that counts
// otopcua.redundancy.service_level_change, then to the deferred publisher
// of Server.ServiceLevel; and the PeerProbeSupervisor. A node without the
// driver role publishes servicelevel.Of of its pins alone (0 unless the
// test hook names a level). The runtime stops after the
// graceful leave (its singleton hands over during the leave), before the
// daemon and the actor system, the mediator last. The data plane
// (dataplane.go) likewise: the Primary gate's Guard and the write router,
// driver host, LocalDb (closed after
// the driver host), LocalDb replication, alarms, deployment follower.
//
// # HTTP routes and exit codes
//
// routeTable (routes.go) is every route of Http:Port beside the probes and
// /metrics, with its guard: anyone, test hook, signed in (the admin
// package's session or API token), or viewer: the read reports
// (/api/cluster/*, /api/actors, /api/deployment, /alerts, /api/localdb,
// /api/historian) need a session or an API token of role Viewer or above,
// and are open to anyone only with Http:AnonymousRead. exitCode (exitcode.go) is the exit-code
// policy, as seen by `otopcua host`: 0 after SIGTERM/SIGINT (graceful
// leave, at most LeaveTimeout) or a manual failover, 1 when a part fails,
// 2 for an invalid configuration, ExitRestart (3) when the cluster ended
// this node's membership.
//
// With OTOPCUA_TEST_HOOKS=1 (EnvTestHooks), POST /debug/service-level pins
// the ServiceLevel from start-up (255 until it names a level) until
// ?level=runtime hands it back to the runtime. With the test hooks on,
// OTOPCUA_TEST_MUTATION names test-only mutations that break one guarantee
// each (package internal/mutation), for the chaos run's checker.
package host
