// Package redundancy turns cluster membership and live health into what OPC
// UA clients see of a redundant set: each node's role (Primary, Secondary,
// Detached) within its application ClusterId and its Server.ServiceLevel byte.
//
// # Pure cores
//
// They import no clock and do no I/O; callers gather inputs at one instant
// and pass that instant:
//
//  1. Elect: one Primary per ClusterId, the oldest Up member with role
//     driver.
//  2. ComputeServiceLevel maps Inputs to 0/100/200/240/250 (or the legacy
//     role-only mapping before the first DB health reply); Fresh, ProbeOk
//     and Stale are the 30-second freshness rules.
//  3. BuildSnapshot turns the membership into a Snapshot keyed by the
//     canonical host:port NodeId (never the host alone: two nodes on one
//     host are two entries); SnapshotFromWire refuses anything else.
//  4. AdvanceEpochs / NextEpoch: the ownership epoch of each ClusterId
//     (below); DebounceDeadline: the snapshot debounce; Observed.Inputs:
//     a driver node's input gathering; CountDriverMembers: the gate's
//     driver count.
//
// # Runtime (what runs where)
//
//   - Every node that may host the admin singleton (role admin) subscribes
//     a Tracker to the topic wire.Topic ("redundancy-state") when it
//     starts.
//   - StateActor, the RedundancyStateActor, runs as the cluster singleton
//     of role admin (on the oldest Up admin member). It publishes a
//     RedundancyStateChanged DebounceQuiet (250 ms) after the last
//     membership event (at most DebounceMax after the first) and
//     republishes it every RepublishEvery (10 s): pub/sub does not replay
//     to late subscribers. A node that newly appears in the topic's
//     registry (read every SubscriberPoll, 500 ms) gets a snapshot after
//     the quiet period rather than at the next heartbeat.
//   - PublishActor, the OpcUaPublishActor, runs on every driver node. On
//     every HealthTick (5 s), snapshot, DB probe change, probe result about
//     this node and membership event it computes the level and hands a
//     changed one to the OPC UA server; the first goes out at Start, even
//     0. It publishes this node's NodeStatus (ApplicationUri, OPC UA
//     endpoint, level) at Start, on every change and every HealthTick; the
//     singleton copies endpoints into the snapshot entries, which is how
//     peers learn whom to probe (package health, PeerProbeSupervisor).
//   - RoleView holds the role of the last snapshot for the primary gate.
//
// # Ownership epoch
//
// Each ClusterId carries an epoch that increases whenever its Primary (its
// NodeId or its incarnation) changes — the fencing token of a later
// floating address. It must never go back, also when the singleton moves:
//
//   - a new epoch is max(previous + 1, the clock in Unix milliseconds);
//   - a singleton instance starts from the highest epochs its node's
//     Tracker saw on the topic (the last instance's snapshots), and keeps
//     folding in whatever else it sees, so clocks that disagree between
//     nodes cannot take it back;
//   - a process that saw nothing (the whole cluster restarted) starts from
//     its clock, above every epoch issued before unless the clock went back
//     by more than the time since the last change.
//
// No epoch is stored in the Config DB: the runtime must keep working while
// the database is away.
//
// # Freshness on this node's clock
//
// A driver node counts a snapshot entry and a probe result as fresh from
// when it received them, not from the sender's timestamp, so a sender whose
// clock runs ahead cannot keep stale news alive.
//
// # Duties of the caller (package host)
//
//  1. Subscribe a Tracker to wire.Topic from process start on admin nodes,
//     and give it to every StateActor the singleton manager creates.
//  2. On driver nodes start a PublishActor (Publisher: the repeat-
//     suppressing, counting publisher in front of the OPC UA server) and
//     call NotifyDbChanged from the DB probe's change callback.
//  3. Stop the actors before the pub/sub mediator and the daemon.
package redundancy
