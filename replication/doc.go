// Package replication copies the replicated LocalDb tables
// (deployment_artifacts, deployment_pointer, alarm_sf_events) between the
// two nodes of a redundant pair over gRPC, both ways.
//
// Each node serves its LocalDb (Pull: the changes of one table after a
// stamp, bounded to MaxBatchChanges and 4 MiB) and pulls from every peer
// what it lacks, resuming from the cursor localdb keeps per peer and table,
// so a restart or an outage costs only the missing rows. The merge rules
// (last writer wins by HLC stamp, tombstones, pointer never back, chunks
// before pointer, whole-batch refusal) live in package localdb; this
// package only moves bytes and keeps status.
//
// Invariants:
//
//  1. Fail closed: a request without the shared key, or with another one
//     (compared in constant time), is refused with codes.Unauthenticated
//     when its HEADERS arrive (Replicator.admit, gRPC's tap handle),
//     before the stream exists and before any of its message is read or
//     allocated for; a peer that cannot prove it holds the key (HMAC of a
//     fresh nonce, answered by the unary interceptor Replicator.prove) is
//     not believed. Either way nothing crosses: no row is served to or
//     applied from it. Each refusal is counted by reason and logged at
//     most once per peer address and reason per minute.
//  2. The served port holds little for any client (serverOptions): a
//     request over maxRequestBytes (the largest Pull) is refused from its
//     length prefix; streams per connection, header size, flow-control
//     windows, pings, idle and old connections are bounded.
//  3. A malformed message (fuzzed: FuzzDecode) is refused whole; nothing
//     of it is applied.
//  4. A batch is applied in one LocalDb transaction with its cursor; a
//     crash leaves the batch applied whole or not at all.
//
// Rows applied from a peer keep their stamps and are served on, so each
// change goes back once to its origin, which skips it (not newer).
//
// Duties of the caller (the host):
//
//  1. Start only when config.LocalDbReplication is On; pass its Listen,
//     Peers and APIKey.
//  2. Mount Handler at APIPath and call RegisterMetrics once.
//  3. Call Local.CompactTombstones now and then (e.g. hourly).
//  4. Stop before closing the LocalDb.
//
// Lock: Replicator.mu guards the key and the status maps; nothing is
// called while it is held (no I/O under the lock).
//
// Why goroutines and not actors: each peer loop is a gRPC client stream
// (socket I/O with its own back-off), and the server side is gRPC's; the
// host owns both and stops them before the LocalDb closes. State that
// matters (the cursors) is in the LocalDb, not in the loops.
package replication
