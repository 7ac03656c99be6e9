// Package localdb owns the node's own SQLite file, the LocalDb
// (LocalDb:Path, default otopcua-local.db; modernc.org/sqlite). Unlike the
// Config DB it is never shared: each node of a redundant pair has its own.
//
// It holds two things:
//
//   - The boot cache (the reference's Phase 1): the last deployment artifact
//     the node applied, per ClusterId, so that a node whose Config DB is
//     down at start-up boots from it instead of coming up empty. It is a
//     fallback for that one failure, not a data path: a new deployment still
//     needs the Config DB.
//   - The alarm store-and-forward queue (Phase 2): alarm history events
//     waiting to be written to the Config DB's alarm_history by the
//     Primary's drain (package historian owns the queue's policy; this
//     package only stores the rows). It survives a restart of the process
//     and an outage of the Config DB.
//
// Schema (version SchemaVersion, recorded in schema_version; the file is
// marked with PRAGMA application_id "otld"):
//
//   - deployment_artifacts: cluster_id, version, chunk_index, data — the
//     document cut into chunks of ChunkSize (64 KiB).
//   - deployment_pointer: cluster_id (key), version, sha256 (hex), chunk_count,
//     size, applied_at — which version is the artifact, and how to check it.
//   - alarm_sf_events (version 2): seq (queue order, never reused),
//     cluster_id, alarm, transition_id — UNIQUE, the idempotency key —,
//     payload (the event as JSON), enqueued_at, attempts, last_error,
//     poisoned.
//   - Version 3 (pair replication): hlc (the sortable text of an
//     hlc.Stamp) and origin (the writing node) on every row of the three
//     tables above; replication_tombstones (tbl, key, hlc, origin), the
//     deletes of those tables, kept for DefaultTombstoneTTL (24 h) and then
//     dropped by CompactTombstones; replication_cursors (peer, tbl, hlc), the
//     last stamp applied from each peer per table.
//
// A newer schema version is refused (ErrSchemaNewer) rather than guessed at.
//
// Replication (package replication moves the bytes; this package owns the
// rules): Changes lists a table's rows and tombstones after a stamp, in
// stamp order, bounded; ApplyRemoteFrom applies a peer's batch in one
// transaction, last writer wins per row key, and records the peer's cursor
// in the same transaction. A batch holding a change for an unknown table,
// a malformed change, a stamp more than the maximum skew (60 s) ahead of
// this node's clock, or a pointer whose chunks are not all here is refused
// whole. A replicated pointer never moves a cluster back to an older
// version, and the chunks a node's pointer names stay until its pointer
// moves on, so the node can boot from its cache at every point of a sync.
//
// Invariants:
//
//   - A save is one transaction: the chunks, then the pointer, then the delete
//     of the ClusterId's other versions' chunks. The pointer changes only when
//     the whole transaction commits, so a crash or an error mid-save leaves
//     the previous artifact loadable; after a commit only the pointed-to
//     version's chunks remain.
//   - LoadArtifact returns a document only when chunks 0 … chunk_count-1 are
//     all there and no other, and the size and SHA-256 match the pointer; it
//     never returns part of a document. Anything else is ErrCorrupt, saying
//     what is wrong. It reads one snapshot, so a save by another connection or
//     process is seen whole or not at all.
//   - Open writes only to a file that is new or already an otopcua LocalDb of
//     an older or the current schema; a file of something else (not SQLite, or
//     another SQLite database such as the Config DB) is refused with
//     ErrNotDatabase and left untouched. A file at the current schema is only
//     read by Open, so a read-only file opens and loads.
//   - The queue holds each key at most once: EnqueueEvent of a key already
//     queued changes nothing. Rows leave the queue only by DeleteEvents and
//     DeleteEventsByKey; a refused delivery (MarkFailed) keeps the row, and
//     a poisoned row stays until it is deleted. EnqueueEvent's limit is
//     checked in the transaction that inserts, so it holds across
//     connections; a full queue refuses the new row and keeps the old ones.
//   - Every local write stamps its rows with the DB's HLC inside its write
//     transaction, so stamp order is commit order: a peer that has read up
//     to a stamp has read every local row stamped before it. (Rows applied
//     from a peer keep their origin's stamps; that is exact for a pair,
//     where the only peer is the origin.)
//   - applied_at and enqueued_at come from the injected clock, stored in UTC
//     to the microsecond.
//   - There is no Go lock: SQLite serialises writers (BEGIN IMMEDIATE, 5 s busy
//     timeout), also across processes, so a restarted node's process may open
//     the file while the old one still has it.
//
// Duties of the caller (the host):
//
//  1. Open at start-up. An Open error names the path and what to do: log it
//     and run without the cache — never stop the node for it. Never delete the
//     file on an error; the operator moves it aside (otopcua then starts an
//     empty cache). Keep LocalDb:Path on a local disk: WAL mode needs shared
//     memory, which network file systems do not provide.
//  2. After applying a deployment fetched from the Config DB, SaveArtifact its
//     ClusterId, version and the document bytes as stored there — what the
//     node runs, not merely what it fetched. A save error is logged; it does
//     not undo the apply.
//  3. When the Config DB fetch fails at start-up, LoadArtifact(Node:ClusterId)
//     and apply it, log that the node runs from the cache and report the
//     source as "cache". ErrNoArtifact means there is nothing to boot from;
//     ErrCorrupt means the cache must not be used — report either, apply
//     nothing from it, and keep polling the Config DB.
//  4. Validate a loaded document like one from the Config DB: the cache
//     vouches for the bytes, not for what a newer or older otopcua thinks of
//     them.
//  5. Switch to the Config DB's copy once it answers again (and SaveArtifact
//     it when it is newer than the cached one).
//  6. Leave the alarm queue to package historian: it enqueues every
//     transition on every node, drains only on the Primary and trims on the
//     others.
//  7. Close on shutdown.
package localdb
