// Package history is otopcua's process history: what a node's drivers
// read, recorded on the node itself, so that HistoryRead of tag values
// can answer for any time the node (or, through back-fill, its peer) was
// recording.
//
// Store is the embedded archive: an LSM key-value store (Pebble) in the
// node's data directory holding each tag's samples in compact blocks
// (package history/block, a few bytes a sample), and each tag's open head
// of recent samples in memory, made durable by a journal of the recorder's
// batches beside it (one synced record a batch; journal.go) until the
// head is packed. Store.Shrink enforces a size limit (History:MaxSizeMiB)
// by removing the oldest blocks.
// Pebble was chosen over SQLite, which otopcua uses elsewhere, from
// bench/historystore's measurements (docs/benchmarks.md, "History
// store"): SQLite through the pure-Go driver recorded 30,000–63,000
// samples a second on the reference machine, fewer than a node polling
// 10,000 tags every 100 ms produces, where Pebble recorded 460,000 to over
// a million; with blocks it holds 6.5 bytes a sample against SQLite's
// 16.6–29.2.
//
// A sample's identity is its tag and its time (the source timestamp): the
// store holds one sample per identity, and of two candidates it keeps the
// one that sorts first by (status, value bits), so that two stores that
// were given the same samples in any order hold the same history. This
// is what lets the two nodes of a pair exchange what they recorded and
// converge.
//
// Backfiller fills a node's gaps from its peer (Peer: the host serves and
// asks over LocalDb replication's port). A Gap runs from a tag's last
// sample stored before this process began recording it (Start) to its
// first own sample at or after Start (End); the pure parts — NewGap,
// Gap.Window, Gap.Advance, Lag, CheckSlice — decide what to ask and
// what a peer's answer may hold. Invariants:
//
//  1. Nothing at or after Start is back-filled before End is known, and
//     the recorder records nothing of the tag older than Start
//     (Recorder.StartAt): the first sample at or after Start is the
//     node's own, so End is found in the store.
//  2. A gap is stored (PutGaps) before the slices it asks for, and moved
//     forward only after a slice is written (synced): a crash resumes it.
//  3. A slice is at most BackfillOptions.Slice samples, asked within a
//     deadline; a peer's answer outside the window, out of order or over
//     the count is refused whole.
//
// Duties of the caller (the host): call Backfiller.Begin for the tags
// whose recording starts, then Recorder.StartAt with its start, then
// Recorder.Apply; give it the peers (SetPeers); run Run beside the
// recorder's Run and stop both before closing the store.
package history
