// Package modbus is the Modbus TCP driver (drivers.Driver) on
// github.com/simonvetter/modbus's client: holding and input registers,
// coils and discrete inputs of one device (one unit id), read in as few
// requests as the protocol allows and written one tag at a time.
//
// # Reading
//
// New plans the reads once with the pure function Plan: per table, the tags
// by address are merged into one request while the unused addresses
// between two tags are at most 8 (DefaultLimits.MaxGap) and the request
// stays within 125 registers or 2000 coils / discrete inputs; a tag is never
// split across requests. Decode maps each answer back to its tags' values.
// A poll sends the requests in order on the one connection.
//
// Values: bool for coils and discrete inputs; int16, uint16 (one register),
// int32, uint32, float32 (two), float64 (four) for registers. Bytes within a
// register are big-endian (the protocol's order); the word order of 32- and
// 64-bit values is "big" (the most significant register first, the
// default) or "little" (the least significant first, all words reversed).
// A scaled tag (scale or offset set) reads raw × scale + offset as float64;
// a write applies the inverse, rounds to the nearest integer for an integer
// register type and refuses a value that does not fit.
//
// A device may refuse a merged request because a gap is an address it does
// not have (exception 02): the driver then splits that request at its gaps
// for the life of the driver (SplitAtGaps) and reads the parts at once, so
// only the tags at an address the device truly lacks go Bad.
//
// # Connection
//
// One TCP connection per device, opened by the first Read (or Connect).
// A connect runs on its own goroutine; a Read or Write waits for it at most
// the request timeout, and Close never waits for it. A request that gets
// no usable answer (refused, reset, timed out, malformed) drops the
// connection; the next connect waits drivers.Backoff(failures) on the
// injected clock (100 ms doubling to 5 s), counted from the failure, and
// failures start again at 0 once the device answers a request (a device
// that accepts connections but answers garbage keeps backing off). A
// Modbus exception is an answer and keeps the connection.
//
// Health reports whether the last connect opened a connection (ConnectOK)
// and the run of polls that read no value (a poll reads a value when one
// of its requests returns values), so that drivers.Condition shows a
// device that accepts connections and never answers as degraded rather
// than flickering between connected and disconnected.
//
// See locksordering.txt for the locks.
package modbus
