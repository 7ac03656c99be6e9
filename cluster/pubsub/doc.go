// Package pubsub is otopcua's distributed publish/subscribe: one Mediator
// per node, with Akka.NET's DistributedPubSubMediator semantics reduced to
// what otopcua needs — topics, local subscribers, a gossiped registry, and
// fan-out to every node that has a subscriber. Topics in use:
// TopicRedundancyState ("redundancy-state") and TopicAlerts ("alerts").
//
// How it works:
//
//   - Subscribe adds a local subscriber; the set of topics that have local
//     subscribers is this node's Bucket in the Registry, versioned by this
//     node (the version increases on every change);
//   - mediators gossip the registry: a digest of versions (PubSubStatus) to
//     every peer every GossipInterval, answered by the buckets the sender
//     lacks (PubSubDelta); a changed own bucket is also pushed at once, and
//     a member that comes Up is sent the whole registry. Merge keeps the
//     highest version per node (commutative, associative, idempotent);
//   - buckets are keyed by incarnation (UniqueAddress) and accepted only
//     for members of the current view: a node's entries vanish when it is
//     removed from the membership, a late delta cannot bring them back,
//     and a restarted process at the same address starts a fresh bucket;
//   - Publish wraps the message in a protobuf Any and sends it to every
//     node whose bucket has the topic and that is WeaklyUp, Up, Leaving or
//     Exiting and reachable from this node (Targets), and calls the local
//     subscribers directly. SendTo sends to one node's subscribers only.
//
// What it does not do, on purpose: no buffering, no retry and no replay.
// A subscriber that starts after a publish, a node the registry has not
// reached yet, and an unreachable node miss the message; publishers of
// state (the redundancy snapshot) republish periodically (every 10 s).
//
// Every message carries from/to UniqueAddress and is dropped (and counted
// in Stats) when to is another incarnation at this address — protoactor
// delivers messages queued for a dead process to its successor — or when
// from is an incarnation removed from the cluster.
//
// Caller's duties (package host): start the actors.System and the cluster
// daemon first; Start one Mediator per node with the daemon as Membership;
// make sure every message type published is linked into every node's
// binary (the receiver decodes the Any by its type URL); Stop the mediator
// before the actor system shuts down.
//
// Concurrency: the registry and the subscriber table live on the
// mediator's actor goroutine; handlers run there too (see Handler) and
// must not block. Registry and Stats read copies.
package pubsub
