// Package memtrim gives back, once a node has started, the memory that only
// its start-up needed.
//
// A node's resident set after start-up is two thirds pages of its own
// executable: package initialisers, the start-up of every part and the
// first cluster round touch code and read-only data all over a 60 MB
// binary, and the kernel maps each touched page together with its
// neighbours (fault-around, 64 kB). Those pages are the page cache's, shared
// and clean; an idle node runs a small part of them again. Release asks the
// kernel to drop the executable's read-only mappings from this process
// (madvise MADV_DONTNEED): the pages stay in the page cache, and a page the
// node touches again is mapped back by a minor fault (no disk read while
// the page cache holds it). It also returns the free heap that start-up
// left (runtime/debug.FreeOSMemory).
//
// Nothing else changes: no data lives in those mappings (they are read-only
// and private), so a later access sees the same bytes.
//
// Caller's duty: call Release once, after start-up, from any goroutine; it
// takes a few milliseconds (one garbage collection). It is safe to call
// again; each call costs the minor faults that map back what the process
// then uses.
package memtrim
