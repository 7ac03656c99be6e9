// Package uaserver is otopcua's OPC UA service layer: it accepts opc.tcp
// connections, runs the Hello/Acknowledge handshake and the secure channel
// (security policy None, mode None) with gopcua's uacp and uasc packages,
// and implements the session, discovery, attribute, view and method
// services over a NodeStore. Subscription services are delegated to the
// subscription engine.
//
// It does not use gopcua's server package, which serves every request of
// every session on one goroutine, handshakes serially in its accept loop,
// never expires sessions, answers with wrong RequestHandles and has no
// recover().
//
// # Concurrency
//
//   - One goroutine accepts connections. Each connection gets its own
//     goroutine for the handshake (bounded by Config.HandshakeTimeout), so a
//     silent TCP client never delays another.
//   - Each secure channel has a reader goroutine that decodes requests and a
//     worker goroutine that handles them in arrival order. Channels never
//     wait on each other. Publish is handed to the engine, which answers it
//     later from its own goroutines; the worker goes on at once.
//   - Every handler runs under recover(): a panic answers a ServiceFault
//     BadInternalError, is logged with its stack, and the channel keeps
//     serving. A panic while decoding a message closes only that channel.
//   - Every response carries the request's RequestHandle and a Timestamp.
//
// # Sessions
//
// A session ends on CloseSession or when no request arrived for its
// revised timeout (Config.Clock); the engine is then told through
// SessionClosed. Closing the secure channel does not end the session
// (Part 4 §5.6): the client reconnects and re-activates it, possibly on a
// new channel. Until ActivateSession a request answers
// BadSessionNotActivated; an unknown authentication token answers
// BadSessionIdInvalid; a request for a session bound to another channel
// answers BadSecureChannelIdInvalid. Only anonymous identities are accepted
// while security None is the only policy.
//
// # Duties of the caller
//
//  1. Give New a NodeStore that honours its contract (concurrency-safe,
//     non-blocking, never panics on client input) and the engine.
//  2. Register handler overrides with Handle before Start.
//  3. Call Close before closing the engine; Close ends every session
//     (engine.SessionClosed(id, true)) and waits for running handlers, which
//     must therefore honour their context.
//
// # Known limits
//
// Only security None exists. Renewing a secure channel token happens inside
// uasc.SecureChannel.Receive, which rewrites channel state without the lock
// its senders take; harmless with policy None, but a renewal concurrent with
// a response write is a data race in gopcua. Responses larger than the
// client's MaxMessageSize are not refused with BadResponseTooLarge.
package uaserver
