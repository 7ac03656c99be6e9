// Package uaclient is otopcua's lean OPC UA client transport: one secure
// channel over gopcua's uacp transport, framed with gopcua's uasc message
// types, with security policy None or (Options.Security) Basic256Sha256,
// Aes128_Sha256_RsaOaep or Aes256_Sha256_RsaPss in Sign or SignAndEncrypt
// mode — the primitives are gopcua's uapolicy, the chunk layout
// opcua/chunksec, shared with otopcua's server — sessions activated
// anonymously or with a UserName token (the password encrypted for the
// server certificate, never sent in clear text), plus a decoder for
// PublishResponse bodies that reads only what the subscription benchmark
// needs. The failover client (opcua/client) and the benchmarks build on it.
//
// Every response passes uawire.CheckService before gopcua decodes it: a
// hostile or broken server cannot make the client allocate more than the
// bytes it sent.
//
// It exists because gopcua's own client keeps a single Publish request in
// flight and decodes every notification by reflection (about 1 µs per
// monitored item), which on a shared two-core machine would make the client,
// not the server, the bottleneck.
//
// Invariants:
//  1. Every request has a deadline; Request returns ErrTimeout (never
//     blocks) when the answer does not come in time, and ErrClosed once the
//     connection is gone.
//  2. One goroutine reads the socket; any number may send (writes are
//     serialised by a mutex, chunk sequence numbers assigned under it).
//  3. On a secured channel every chunk sent is signed (and encrypted) with
//     the current token, every chunk received is verified (and decrypted)
//     and its sequence number must follow the previous one; a chunk that
//     fails closes the channel with an error wrapping ErrSecurity. The
//     token is renewed after RenewFraction of its revised lifetime; the
//     previous token stays valid for what the server sends until it
//     switches.
//  4. Lock order: wmu (writes) before tmu (tokens).
//
// Duties of the caller: decide whether the server certificate given in
// Security.ServerCertificate is trusted (the Channel only checks that the
// server proves it holds its key); Close the Channel when done; decode a Reply's body
// (ua.DecodeService or DecodePublish) on its own goroutine.
package uaclient
