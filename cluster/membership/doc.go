// Package membership holds the values of Akka.NET-style cluster membership
// and the pure functions over them.
//
// A member is identified by a UniqueAddress: host, port and the random uid
// of one process start. A process restarted at the same host:port is a new
// incarnation: a different member. Members move through the statuses of
// CanTransition (Joining → WeaklyUp → Up → Leaving → Exiting → Removed, and
// Down from any live status).
//
// Gossip is the replicated state: members, the seen set, the reachability
// table and a vector clock version. Concurrent gossips Merge by keeping,
// per member, the version with the highest-priority status (Removed > Down
// > Exiting > Leaving > Up > WeaklyUp > Joining), dropping a member that is
// Down or Exiting on one side and absent on the other (it was removed).
//
// State (a gossip plus the viewing node) answers the leader, role leader,
// convergence and oldest questions exactly as Akka.NET 1.5 does;
// LeaderActionsOnConvergence performs the leader's duties and Diff turns
// two views into cluster events.
//
// Invariants (Gossip.CheckInvariants): members are sorted by address and
// unique, never Removed; only members appear in the seen set and as
// reachability observers. Every value here is immutable: methods return new
// values and never modify slices or maps they share.
package membership
