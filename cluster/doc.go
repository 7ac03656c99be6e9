// Package cluster is the root of otopcua's Akka.NET-style cluster
// membership. The decision cores are pure (no clock, no I/O, no goroutines)
// and live in sub-packages:
//
//   - membership: unique addresses, members and statuses, vector clocks, the
//     reachability table, gossip merge, convergence, leader, oldest and the
//     leader's actions; cluster events as a diff of two views.
//   - phi: the phi-accrual failure detector.
//   - downing: auto-down and the split-brain resolver strategies
//     (keep-majority, keep-oldest, static-quorum, lease-majority), plus the
//     Lease interface.
//   - bootstrap: the self-form fallback decision.
//   - fastpath: the crash fast-path decision (refused TCP probes).
//   - node: the membership state machine of one node (Step/Tick → effects)
//     that combines them, and an in-memory network to drive several nodes
//     in tests.
//
// The actor layer wraps node.Node: it owns the clock and the protoactor
// remote, feeds messages and ticks in and carries out the effects.
package cluster
