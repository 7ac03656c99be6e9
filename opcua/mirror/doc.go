// Package mirror keeps the OPC UA sessions and subscriptions of one member
// of a redundant set on the other driver members of its ClusterId
// (OpcUa:RedundancySupport HotAndMirrored), so that a client whose server
// dies activates the same session on a survivor and gets every value it
// was owed, once.
//
// # What travels
//
// The member that serves a session (its origin) sends each peer a stream
// of records, in order: the session (id, a hash of its authentication
// token, name, timeout, user and role, the client certificate's
// thumbprint, the server certificate and the last server nonce), each
// subscription and monitored item created (with the origin's ids and
// revised parameters), every other subscription service request as it
// was, the acknowledgements of every Publish request, and every
// NotificationMessage sent to the client. A peer (the replica) applies
// them to its own subscription engine: replica subscriptions that sample
// this member's own copy of the tags, queue what they sample (at least
// Options.QueueSize values per item), publish nothing and whose lifetime
// does not run; each reported message removes from the queues the values
// it carried (subscription.Engine.Reported: equal value and status,
// SourceTimestamps within Options.MatchWindow) and joins the replica's
// retransmission queue. Items on variables of namespace 0 (the Server
// object: ServiceLevel, ServerStatus …) report each member's own state:
// a report there only empties the replica's queue, and a takeover sends
// the survivor's current value.
//
// # Takeover
//
// A client that lost its server opens a secure channel to a survivor (or
// to the floating address, now held by the survivor) and sends
// ActivateSession with its authentication token. uaserver finds the
// session by the token's hash (Lookup) and checks what it would check on
// the serving member: the channel's security, the client certificate, the
// client's signature over the server certificate it was given and the
// mirrored nonce, the user token again (a password is checked here) and
// the same user. The session is then served here (TakenOver): its
// subscriptions are promoted, Republish answers from the copied
// retransmission queue, the next message carries every value sampled here
// after the last one reported, with the next sequence number. The answer
// carries a new nonce: a replayed ActivateSession is refused. The other
// members learn of the takeover and get a snapshot of the session; the
// old server, if it still runs, ends its copy.
//
// # Streams
//
// Records travel in batches (codec.go) numbered per stream; a stream has
// an epoch and begins with a snapshot of every session served here, sent
// one session at a time (live records put the next session off by one
// batch at most, so that a busy member's snapshot still ends). Each batch
// received is acknowledged in the next batch the other way (or one of its
// own). A gap, an invalid batch, or a peer that acknowledged nothing for
// resyncAfter starts a new epoch; until its snapshot arrives, what the
// replica holds of that origin counts as incomplete. A member that
// dropped batches of a sender it did not know as a peer yet asks it for
// a new epoch once it does. A replica counts as a hot standby for an
// origin (Stats, otopcua_mirror_ready) once the origin's snapshot arrived
// whole; until then a takeover is refused and the client falls back to
// Warm, with a log line. A snapshot and the live records around it may
// describe one subscription, item or message twice; the replica applies
// each once.
//
// # Orphans
//
// A session that ends without deleting its subscriptions leaves them
// orphaned, for a TransferSubscriptions of its client, on the origin and
// on every replica. The origin expires its copy after the lifetime and
// the replicas drop theirs with it; if the origin died first, a replica
// drops its copy once the lifetime has passed since. A client that
// transfers an orphan to a session served by a survivor has it served
// there.
//
// # Invariants
//
//   - The serving member never waits for a peer on the network: hooks
//     only queue records; the writer goroutine sends. With Options.Sync a
//     NotificationMessage leaves for the client once every ready peer has
//     acknowledged it, or after AckTimeout; a peer that missed it is not
//     waited for again until it caught up. Without Sync a failover right
//     after a message may deliver its values twice.
//   - A peer holds at most MaxLagBytes unacknowledged; a record that would
//     pass it puts its session back to Warm (counted by reason in
//     Stats.Dropped) and the peers forget that session.
//   - Mirrored state is bounded by the engine's limits (OpcUa:Limits):
//     replica subscriptions and items count against MaxSubscriptions and
//     MaxMonitoredItems of the replica, and a subscription or item the
//     replica refuses is simply not mirrored there.
//   - Records are decoded with every length checked against the bytes
//     present, and OPC UA structures pass uawire.CheckService before
//     gopcua decodes them; an invalid batch is refused whole.
//
// # Known limits
//
// Event items are mirrored, but the events raised while no member served
// the client are not replayed: a client calls ConditionRefresh after a
// failover (Part 9). The value matching cannot tell apart two equal values
// within MatchWindow of each other (a value that changes back and forth
// faster than the window may lose one of its repetitions at a failover).
//
// # Duties of the caller
//
//  1. Create the Member with New, pass it in opcua.Config.Mirror (which
//     calls Attach with the engine and the server's EndSession).
//  2. Carry batches with a Transport that keeps one sender's batches in
//     order, and hand every received batch to Receive with the sender's
//     name.
//  3. Keep the peer list current with SetPeers (the Up driver members of
//     this member's ClusterId, by incarnation).
//  4. Close the Member after the OPC UA server.
package mirror
