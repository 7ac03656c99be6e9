// Package daemon runs one node's cluster membership on protoactor-go: the
// daemon actor (named Name in every process) owns a cluster/node.Node,
// ticks it every 100 ms from an injected clock, steps every received
// message into it and carries out its effects. It is the driver described
// in package node's documentation.
//
// What it does with each input and effect:
//
//   - received wire messages are decoded and validated (cluster/wire) and
//     dropped, and counted in Stats, when invalid, addressed to another
//     incarnation (a message queued for a dead process and delivered to its
//     successor at the same address), sent by a removed incarnation
//     (quarantine: protoactor's own block list is not enforced), or a
//     Leave/Down from a node that is not a member;
//   - a join handshake message from a node whose cluster protocol
//     generation this node does not work with (Options.Protocol,
//     wire.Generations) is refused: one log line naming both generations
//     and docs/releases.md, a JoinRefused back so that the sender logs why,
//     and the refusal stepped into the core, which then never forms a
//     cluster of its own; every handshake message sent carries
//     Options.Protocol;
//   - Send goes through a Transport: RemoteTransport hands messages to
//     protoactor's remote, the PID host:port/Name, behind a dial gate — a
//     peer that is dead or never reached gets a plain TCP connect first, so
//     protoactor never starts its blocking 2 s reconnect schedule towards
//     a dead address and reaches a restarted peer as soon as it listens;
//   - protoactor's EndpointTerminatedEvent (≈ 2 ms after a peer process
//     dies) becomes node.ConnectionLost for the member at that address;
//   - ProbePeer runs the crash fast path's connects (Node.CrashFastPath,
//     Cluster:DownOnConnectionRefused): up to 3 TCP connects within
//     300 ms on a goroutine, Refused / Timeout / Accepted stepped back as
//     node.PeerProbeResult. The core owns the rest — when to probe (a
//     broken connection, its own detector's suspicion, a second look
//     300 ms after a broken connection whose port still accepted), the
//     verdict (FastPathVerdict, logged), the immediate unreachable mark,
//     and the leader's immediate Down (node.DownNow; under lease-majority
//     after AcquireFastPathLease) instead of waiting for
//     auto-down-unreachable-after. Silence (timeouts) still goes through
//     the phi detector and the full downing window. The daemon keeps no
//     fast-path state; ProvenDead reads the core's record;
//   - ProbeSeeds, AcquireLease/ReleaseLease and StartExiting run on
//     goroutines and step their results back; Publish goes to Subscribe's
//     callbacks and to the operator log (the Log constants); Shutdown
//     closes Done after a short linger, with a Result.
//
// Caller's duties (package host): start the actors.System first; Start the
// daemon; read Snapshot/Info/Subscribe; on SIGTERM call Leave and wait for
// Done (bounded); when Done closes without a requested leave, run
// coordinated shutdown and exit non-zero so the supervisor restarts the
// process; finally Stop the daemon and shut the actor system down —
// non-gracefully when DeadPeers is not empty.
//
// Concurrency: all node state lives on the actor goroutine. Snapshot,
// Info and Stats read copies and never wait for the actor; subscribers are
// called on one event goroutine, in order, and must not block.
package daemon
