// Package forward sends a client's write or condition method that arrives
// on a non-Primary node to the Primary of its ClusterId
// (OpcUa:WriteMode: forward), executes it there exactly once and returns
// its result to the client.
//
// # Pieces
//
//   - Route (pure): what a site does with one request — execute here,
//     send, or refuse — from the session's rights, this node's gate
//     decision, the site and the write mode. Its table is on Route.
//   - EpochOK (pure): the Primary refuses a request stamped with a newer
//     redundancy epoch than its own (it is the stale one).
//   - Cache: the Primary's idempotency cache, a value over explicit
//     instants, bounded in keys and time.
//   - Handler: the Primary's side. Serve answers a known key from the
//     cache first, then refuses without executing (the sender's in-flight
//     limit, the rights again under this node's OpcUa:Authorization, the
//     gate, the epoch), then executes once and remembers the result.
//   - Sender: the forwarding node's side. Forward resolves the Primary,
//     sends, and asks again until OpcUa:WriteTimeout; Transport carries
//     the requests (MemTransport in memory).
//
// # Exactly once
//
// A Key (sending node, process nonce, session, request handle, operation)
// names one client request across every attempt. The Handler remembers a
// key from its execution until TTL after it finished, so every retry to
// the node that executed it gets the first result — also after that node
// lost the Primary role, since the cache is asked before the gate.
//
// A new Primary cannot know whether the old one executed a request it
// received and never answered (it died mid-write). The Sender therefore
// never re-sends a request whose outcome is unknown to another node: it
// asks only the node that has it until the timeout and then answers
// BadTimeout. It moves to another Primary only after a refusal that proves
// nothing executed (not Primary, stale epoch, too many in flight) or a
// transport error that proves nothing was delivered. The rule for the
// client, per request: Good — executed once; StatusNotPrimary
// (BadInvalidState), BadTooManyOperations, BadResourceUnavailable,
// BadUserAccessDenied — executed nowhere; BadTimeout — unknown, executed
// at most once (read the value back). A device's own error is returned as
// a direct write returns it.
//
// # Bounds
//
// The Sender forwards at most MaxInFlight requests at once and the Handler
// executes at most PerSender requests of one sending node at once; beyond
// either a request is refused with BadTooManyOperations, never queued.
// Each request carries its remaining budget and the Primary executes
// within it (capped by MaxBudget). A hostile client on a Secondary can
// therefore hold at most PerSender of the Primary's executions and cannot
// queue work behind the Primary's own clients, whose writes do not pass
// through the Handler.
//
// Duties of the caller:
//
//  1. Check the session's right before routing (a Viewer's request is
//     refused on its own node and never sent), then call Route.
//  2. On Send, build the Request with a Key unique to the client's
//     operation and the session's user and role, and return the
//     Response's Status to the client.
//  3. On the Primary, serve every forwarded request through one Handler
//     whose Executor runs the same path as a local request and raises the
//     AuditWriteUpdateEvent naming the sending node; the sending node
//     raises its own naming the Primary.
//  4. Name nodes in Transport by their unique address (incarnation
//     included), and deliver one sender's requests in order.
package forward
