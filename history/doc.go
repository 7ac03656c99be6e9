// Package history is otopcua's process history: what a node's drivers
// read, recorded on the node itself, so that HistoryRead of tag values
// can answer for any time the node (or, through back-fill, its peer) was
// recording.
//
// Store is the embedded archive: an LSM key-value store (Pebble) in the
// node's data directory, per tag a head of recent samples and older
// samples in compact blocks (package history/block, a few bytes a sample).
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
package history
