// Package historian owns the alarm historian of one node: the
// store-and-forward chain that writes every alarm transition of its
// ClusterId to the Config DB's alarm_history exactly once, across
// restarts, Config DB outages and failovers.
//
// Data path:
//
//	alarm engine (Primary) → cluster "alerts" topic → every node's adapter
//	→ Historian.Enqueue → LocalDb alarm_sf_events (this node's file)
//	→ drain, only while the Primary gate admits this node
//	→ configdb.DrainAlarmHistory (alarm_history, once per key, fenced by
//	  the gate's redundancy epoch)
//	→ delete from the queue
//
// The idempotency key is (ClusterID, Alarm, TransitionID). Delivery is at
// least once everywhere — the topic may deliver a transition twice, a node
// may die between the insert and the delete, both nodes of a pair hold the
// same rows — and each step is a no-op for a key it has seen: the queue
// keeps one row per key, alarm_history stores one row per key. So every
// transition is stored once, whichever node drains it, however often.
//
// Invariants:
//
//   - Only a node the Gate admits writes to alarm_history; the others
//     report NotPrimary and trim: every TrimEvery they delete the queued
//     rows alarm_history already holds, so a Secondary's queue follows the
//     Primary's progress instead of growing, and holds what the Primary has
//     not delivered when it takes over.
//   - A row leaves the queue only once alarm_history holds its key (the
//     drain's delete after a successful insert, or the trim's delete after
//     a lookup). A Config DB failure leaves every row queued; the drain
//     retries with back-off (DrainEvery doubling up to MaxBackoff), never
//     in a hot loop.
//   - A row the Config DB refuses (configdb.RowsRefusedError: a value too
//     long, a byte it cannot store, a constraint) does not hold up the
//     rows after it: they are delivered, it is retried at the next tick and
//     poisoned after MaxAttempts refusals — kept in the queue, counted in
//     Status.Poisoned, logged, never deleted by the historian.
//   - The drain is stamped with the gate's epoch. A drain the Config DB
//     refuses because a newer Primary's epoch is stored
//     (configdb.StaleEpochError) ends the tick; its rows stay queued,
//     unmarked, and are counted in Status.StaleRefused and logged. The node
//     then drains nothing under an epoch older than the one the refusal
//     named (it queues and trims like a Secondary, GateReason "stale
//     epoch …"), so the trim removes them once the newer Primary — which
//     queued its own copy of every transition from the alerts topic — has
//     stored them. Exactly once holds: nothing is stored twice, nothing
//     leaves a queue before alarm_history holds it.
//   - A full queue (MaxQueue rows) refuses the new event and keeps the old
//     ones; the refusal is returned, logged and counted (Status.Refused).
//     History is never dropped silently.
//   - The queue is the LocalDb file: a restarted process drains what the
//     old one left.
//
// Concurrency: the drain is an actor, named "historian" (ActorName, kind
// "HistorianAdapter"), spawned by Start under Options.Parent — the node's
// supervision tree, which restarts it one for one with back-off — or, with
// no Parent, on a private actor system that Stop shuts down. Its timer
// (DrainEvery) reaches it as messages; each tick's database calls run on a
// goroutine the actor owns, and the tick's end comes back as a message
// tagged with the incarnation and the tick number, so the actor never
// blocks on a database. Ticks never overlap: a timer tick while one runs
// is kept (one, as a ticker's channel would) and run at its end, and the
// tick goroutine holds Historian.tickMu, so a new incarnation's tick waits
// for the old one's. The drain and trim state (back-off, trim position,
// the last gate verdict) is owned by the goroutine holding tickMu.
// Enqueue, Status, Handler and the metrics callback may run on any
// goroutine. Historian.mu guards Status and the start/stop fields; no lock
// is held across a database call except tickMu, which only ticks take.
//
// What survives a restart of the actor, and why: the queue (it is the
// LocalDb file) and Status (the Historian, not the actor, holds it), so
// nothing queued is lost and /api/historian keeps answering. The tick in
// flight is cancelled — its rows stay queued, its end is ignored — and the
// new incarnation reads the queue's size and ticks at once, not one
// DrainEvery later, so a drain resumes as soon as the actor does; the old
// incarnation's timer messages are ignored (generation).
//
// Duties of the caller (the host):
//
//  1. Open the LocalDb and the Config DB (migrated), build one Historian
//     per node with New (Options.Parent: the node's actors.Tree), mount
//     Handler at APIPath, RegisterMetrics, and Start it.
//  2. Feed Gate from the node's Primary gate (gate.Guard's Check at
//     gate.SiteHistorianDrain); it must answer at once.
//  3. Call Enqueue for every transition the node receives on the alerts
//     topic, on every node. Skip ErrOtherCluster; log nothing more for the
//     other errors (Enqueue logs and counts them) and do not retry a
//     refused event in a loop.
//  4. Stop before closing the LocalDb and the Config DB.
package historian
