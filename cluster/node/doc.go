// Package node is the membership state machine of one cluster node: Akka.NET's
// cluster core daemon, join processes, heartbeat sender and downing provider
// in one value that performs no I/O and reads no clock.
//
// The driver (a protoactor actor in production, Network in tests) must:
//
//  1. build the Config from settings, Validate it (start-up fails with the
//     error), and create the Node with New;
//  2. call Start once, then Tick at least every 100 ms with the current
//     Instant, and Step every received message with the Instant it arrived;
//  3. carry out the returned effects in order: Send each message (loss is
//     tolerated), Publish events to subscribers, log Notes and
//     FastPathVerdicts, and answer ProbeSeeds, ProbePeer, AcquireLease,
//     AcquireFastPathLease and StartExiting by stepping SeedProbeResult,
//     PeerProbeResult, LeaseResult, FastPathLeaseResult and
//     ExitingCompleted;
//  4. step ConnectionLost when the transport reports a peer's endpoint
//     terminated — and nothing more about the crash fast path: which
//     peers are probed and why (a broken connection, this node's own
//     detector, one second look FastPathRecheckAfter ms after a broken
//     connection whose port still accepted), the verdict (fastpath.Decide,
//     called only here), the unreachable mark and the Down are the node's,
//     and ProvenDead is its record of the ports found refusing;
//  5. on Shutdown, run coordinated shutdown and exit the process — non-zero
//     for ReasonDowned, so the supervisor restarts it.
//
// Every cluster message names the sender's and the receiver's incarnation;
// a message for another uid is dropped and counted (DropStats), because the
// transport may deliver messages queued for a dead process to its successor.
//
// Differences from Akka.NET, all deliberate: gossip targets are drawn by a
// generator seeded with the node's uid (a scenario replays exactly) and the
// gossip-to-random-nodes rounds take the first members; the gossip speed-up
// runs while any reachable member has not seen the view (not only while
// fewer than half have), every SpreadGossipInterval, for at most SpreadFor
// after the view changed, and a gossip that taught a node something (a newer
// version, or more members having seen it) is passed on at once to one
// member that has not seen it; the leader moves Joining members Up as soon as a
// gossip or a Join leaves its view converged, not only at its
// leader-actions tick; join retries back off from JoinRetryFirst to
// JoinRetryMax instead of every second; the min-nr-of-members gate is not
// implemented,
// every non-Joining member is heartbeated (no monitoring ring: clusters are
// small), the failure detector is keyed by incarnation, and the split-brain
// lease is released a fixed time after it was acquired rather than when
// the downed members are removed. The crash fast path (package fastpath)
// and the self-form fallback (package bootstrap) are additions.
package node
