// Package benchsrv holds the servers the subscription benchmark measures.
// Each implementation exposes the same address space: N variables in
// namespace 1 (numeric ids FirstID … FirstID+N-1, Int64 at even offsets,
// Double at odd ones) in one folder under Objects, plus a Rounds counter
// variable (RoundsID) that tells a client how many update rounds the server
// has completed.
//
// The caller runs the update loop (Run): every interval it calls
// Server.UpdateAll, which sets every variable to a new value with a fresh
// SourceTimestamp and lets the server's subscription engine see the change.
package benchsrv
