// Package floating moves a floating service address to the Primary of a
// ClusterId, so that a client that knows one endpoint URL follows the
// Primary through a failover without being redundancy-aware.
//
// The package holds the provider-agnostic contract: the verbs, the intent
// a decision produces, the plan a planner makes of it, the executor that
// applies a plan for one provider (linux, aws, oci, azure) and the
// observation an executor makes of who really holds the address. Every
// action carries the ownership epoch (the redundancy epoch of the
// ClusterId); an executor refuses a plan older than the last epoch it
// applied, so a stale owner's late action is fenced.
//
// # Eligibility and the owner (Decide)
//
// A member is eligible while
//
//	eligible(m) = ¬Draining ∧ Healthy ∧ (¬LicenceRequired ∨ Licensed) ∧ fresh(m)
//	fresh(m)    = Heartbeat ≠ 0 ∧ Heartbeat + HeartbeatTTL + PromotionHold > StreamMax
//
// and the desired owner is the member the redundancy snapshot names
// Primary, if it is eligible; when that Primary is draining (a planned
// failover or a leave), its Successor — the member the election picks
// next — if that one is eligible, so the address moves before the old
// Primary leaves; otherwise nobody ("" — also when a view names two
// Primaries). The ownership epoch is the redundancy epoch. Decide then
// gives the verb of the node Self, from who really holds the address:
//
//	holder            Self is owner                         Self is not owner
//	self              none                                  release
//	nobody            seize                                 none
//	member H          reassign if H's last heartbeat         none
//	                  claims nothing (it released);
//	                  else, AutoFailover on: reassign if H
//	                  is Gone (crash: at once) or stale on
//	                  the stream; else wait
//	foreign           wait (conflict: never fought over)    none (conflict reported)
//
// With AutoFailover off, a holder that did not release keeps the address:
// only a planned failover or a drain moves it. A drained holder releases
// at once (a drain is cooperative: no hold).
//
// # The stream (Stream)
//
// Liveness is judged on one shared stream, never on a node's wall clock:
// each member writes a heartbeat row to the Config DB every
// HeartbeatInterval, and the Config DB server stamps each row with its own
// clock (ObservedAt). Every member reads the same rows with the same
// stamps, so every member computes the same staleness and the same owner;
// a member's clock running ±10 s off changes its EmittedAt (shown by
// Skews, for otopcua doctor) and no decision. The stream's "now" is the
// largest ObservedAt seen (StreamMax), never clamped to a local clock: if
// the stream stalls, its time stops and nobody is declared stale ("no
// failure declared without observation"); a member that still writes
// keeps the time moving. The Config DB is the store both nodes of a pair
// already share (the lease store's clock under lease-majority); the
// cluster's gossip is not used because each node timestamps gossip with
// its own clock and the two sides of a partition see different gossip.
// PromotionHold on top of HeartbeatTTL absorbs a short gap and flapping.
// One limit: when the stream resumes after a stall longer than TTL + Hold,
// the first rows to arrive move its time at once, and a live member whose
// row comes later looks stale until it does (at most one
// HeartbeatInterval); a new owner in that window may reassign from it,
// which the ownership epoch then fences.
//
// # The caller's duties (the node's floating-address loop)
//
//  1. Feed every heartbeat row of the ClusterId into Stream.Observe before
//     each Decide, and read the rows again after a pause of the process
//     (a woken node's old Stream would find itself fresh). A row's Seq
//     grows across the sender's restarts (the row's serial number).
//  2. Build the View from the redundancy snapshot and Stream.Fill; Holder
//     from the executor's last Observe.
//  3. Before a seize or reassign, store a heartbeat with Claims true and
//     run the plan only once the Config DB has stored it (no stored claim,
//     no seize): so a holder whose last heartbeat claims nothing cannot be
//     holding the address, and "it released" is safe to act on. After a
//     release, store a heartbeat with Claims false.
//  4. Run the reconcile loop every ReconcileInterval: Drift on a fresh
//     Observation; a reassign it proposes runs only when Decide agrees.
package floating
