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
//  2. The ServiceLevel is decided in the leaf package servicelevel alone
//     (servicelevel.Of, whose doc comment holds the whole table: health,
//     the legacy role-only mapping before the first DB health reply, the
//     Primary's licence, the drain and test-hook pins, device health);
//     this package only gathers its inputs (Observed.Inputs, and the
//     device counts of this node and its peers).
//  3. BuildSnapshot turns the membership into a Snapshot keyed by the
//     canonical host:port NodeId (never the host alone: two nodes on one
//     host are two entries); SnapshotFromWire refuses anything else.
//  4. AdvanceEpochs / NextEpoch: the ownership epoch of each ClusterId
//     (below); DebounceDeadline: the snapshot debounce; Observed.Inputs:
//     a driver node's input gathering; CountDriverMembers: the gate's
//     driver count.
//  5. DeviceFailover: when a Primary hands its role over because a peer
//     reaches more of its devices (Redundancy:DeviceHealth failover):
//     behind for After, Primary for Hold, no second request within Hold.
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
//     every HealthTick (5 s), snapshot, DB probe change, pin change, probe
//     result about this node and membership event it computes the level
//     (servicelevel.Of) and hands it to the Publisher, the one place that
//     suppresses repeats; the first goes out at Start, even 0. It
//     publishes this node's NodeStatus (ApplicationUri, OPC UA
//     endpoint, level, device counts) at Start, on every change and every
//     HealthTick; with Redundancy:DeviceHealth failover it steps
//     DeviceFailover on every compute and calls HandOver when due; the
//     singleton copies endpoints into the snapshot entries, which is how
//     peers learn whom to probe (package health, PeerProbeSupervisor).
//   - RoleView holds the role of the last snapshot and is the primary
//     gate's Source (gate.Guard): role, driver members, membership,
//     alone by configuration, licence, epoch.
//
// # Actors, and what survives a restart
//
// Both runtimes are protoactor-go actors of the node's supervision tree
// (package actors): a panic restarts the actor after a back-off, and too
// many end the node. Their timers are messages from the injected clock
// (actors.Every; the state actor's debounce is a one-shot clock.AfterFunc
// whose message carries a generation, so a stale firing is ignored).
//
//   - The OpcUaPublishActor is node/opcua-publish (PublishActorName, kind
//     PublishActorKind), spawned by Start under PublishActorOptions.Parent.
//     The PublishActor value is its façade: it subscribes to the topic and
//     to membership once, and the callbacks only send to the actor's PID
//     (unbounded mailbox, never blocking, never dropping). The pins (a
//     manual failover's drain, the test hook) are the caller's
//     (PublishActorOptions.Pin), so a restart keeps them. The façade keeps
//     what else a restart must not lose: the last published level
//     (Level), and what the node learned about itself — its latest
//     snapshot entry with its arrival time and the peers' probe results
//     about it — so that a restart does not drop
//     the node into the stale band (200) until the next snapshot. The
//     peers' NodeStatus is rebuilt from the next ones (every HealthTick).
//     Each incarnation computes at once when it starts (why "start", then
//     "restart"), logs it and advertises its NodeStatus even when the
//     level did not change. With DbProbe set, every compute Asks the DB
//     probe actor (DbHealthQuery, at most DbAskTimeout); no answer counts
//     as the Config DB unreachable.
//   - The RedundancyStateActor (StateActorName, kind StateActorKind) runs
//     in the host as the singleton manager's actor child,
//     node/redundancy-state-manager/redundancy-state (StateActorChild);
//     StateActor wraps it as a singleton Instance for tests and callers
//     without a tree. Each incarnation subscribes to membership and the
//     Tracker itself, rebuilds its epoch book from the Tracker (which every
//     publish feeds, so a restart continues the epochs) and starts with a
//     debounce like a membership event; the snapshot sequence lives in the
//     holder StateActorChild creates once per singleton instance, so it
//     keeps increasing across restarts of the actor.
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
//     and give it to the state actor: singleton.Options{Name:
//     StateActorName, Parent: tree, Child: func() (string, actor.Producer)
//     { return StateActorChild(opts) }}.
//  2. On driver nodes start a PublishActor with Parent: the node's tree
//     (Publisher: the repeat-suppressing, counting publisher in front of
//     the OPC UA server; DbProbe: the DB probe actor's PID; Licence and
//     Pin: the licence and pin sources) and call NotifyDbChanged from the
//     DB probe's and the licence's change callbacks, NotifyPinChanged when
//     a pin changes. On other nodes publish servicelevel.Of of the pins.
//  3. Stop the actors before the pub/sub mediator and the daemon.
package redundancy
