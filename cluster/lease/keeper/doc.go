// Package keeper is the lease keeper's decision core under lease-majority:
// when a node takes, renews and frees the shared lease, and whether its
// Primary is licensed to act (gate.LicenceOf). It performs no I/O, starts
// no goroutine, takes no lock and reads no clock: every input comes with
// the instant it happened, every decision is an Effect.
//
// # The rules
//
//   - Suspect: a peer of the set silent for Config.SuspectAfter (a
//     heartbeat interval plus a quarter of the pause) makes the set look
//     split. The ordinary gap between two heartbeats never does: taking
//     and freeing the lease between heartbeats left it held at the moment
//     a Primary froze, and the survivor could not take it.
//   - Take: a Primary whose set looks split takes the lease, at most every
//     RetryEvery (500 ms), and only on a side that cannot be a minority
//     (a pair's lone Primary, half or more of a larger set); a Primary in
//     the minority of three or more leaves it to the majority's decision.
//   - Renew: a held lease is renewed every TTL/3. A grant licenses until
//     the request's start + TTL − TTL/6, counted on this node's clock.
//   - Free: a lease the keeper took, or the cluster core released, is
//     freed once every peer is heard again within SuspectAfter.
//   - One store call at a time for the keeper's own Take, Renew and
//     Release; the core's and the crash fast path's acquires are made for
//     a caller that waits and are not held back.
//   - Graceful leave: a peer leaving gracefully (Leaving, Exiting) never
//     acts as Primary again, so it splits nothing: it counts as on this
//     node's side for the licence while heard, and for WholeWithin after it
//     was last heard, gone or not; it does not count for taking the lease,
//     so its Primary takes the lease at once (at the next tick) and is
//     licensed by it before the leaver stops counting — never unlicensed on
//     the way, where it used to be from the leave until its lease came.
//   - Licence: licensed while the set is whole (every node an Up driver
//     member, reachable and heard within the pause) and no other node was
//     found holding the lease within a TTL, or while this node's lease is
//     valid. A peer that holds the lease may act as the survivor of a
//     split at once (the crash fast path takes a free lease on a TCP
//     reset, a firewall's as well as a dead process's), long before this
//     node's set stops looking whole;
//     a promotion hold of Config.Hold when this node becomes Primary within
//     DownedMemory of the downing of a peer the fast path did not prove
//     dead.
//   - Woken process: a tick more than a pause after the last one means the
//     process did not run (SIGSTOP, a VM freeze); what it hears in its
//     first moments may have waited in its sockets through the freeze, so
//     for one pause awake it cannot tell whether its set is whole and only
//     the lease licenses it. Before that first tick the gap itself says so.
//     The detection is package woken's Detector, the same the
//     woken-process fence of every strategy uses.
//
// # The driver
//
// The host's lease-keeper actor must:
//
//  1. build the Config, Validate it, create the Keeper with New once it
//     knows its owner, and step Follow when it starts following its set;
//  2. call Tick every 250 ms with the current instant and an Observation
//     read from the membership and the role view at that instant;
//  3. carry out the effects in order: make each Acquire or Release call on
//     the store within TTL/2 and step its AcquireResult or ReleaseResult
//     (Background purposes on a goroutine, the others for the waiting
//     caller); log each Note; on LicenceChanged log it and wake the publish
//     actor;
//  4. step Downed for each downing of a driver peer of its ClusterId,
//     CoreAcquire, CoreRelease and FastPath for the cluster core's and the
//     fast path's requests, and Observed before answering a licence query,
//     which is then Licence(now), a pure function of the state.
//
// A Keeper is not safe for concurrent use: the driver touches it from one
// goroutine or under one lock.
package keeper
