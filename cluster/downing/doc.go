// Package downing holds the pure downing decisions of the cluster: the
// auto-down rule and the split-brain resolver strategies of Akka.NET 1.5
// (keep-majority, keep-oldest with down-if-alone, static-quorum,
// lease-majority, down-all), including the detection of indirectly
// connected nodes.
//
// Everything here is a function over an explicit snapshot (View,
// AutoDownInput): no clock, no I/O. The caller owns timing:
//
//  1. Track, per unreachable member, when it became unreachable, and call
//     AutoDown on every tick (auto-down), or
//  2. for a split-brain strategy, wait until membership and reachability have
//     been stable for stable-after, and only on the leader call Resolve;
//  3. for a lease decision (Outcome.Decision.NeedsLease), wait
//     Outcome.AcquireDelay, acquire the Lease, and down Resolution.Down on
//     success or NodesToDown(Decision.Reverse()) on failure;
//  4. down this node last, since being downed shuts it down.
//
// Invariants: a decision only ever names members that are Joining, WeaklyUp,
// Up or Leaving; run on both sides of a clean partition, keep-majority,
// keep-oldest and static-quorum never leave members Up on both sides
// (property-tested). Akka's exact behaviour is kept even where it hurts: a
// two-node keep-oldest cluster whose oldest crashes downs the survivor too.
package downing
