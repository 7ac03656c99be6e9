// Package health owns the node's health surface: the HTTP endpoint
// (/healthz, /readyz, /metrics and any handler the host mounts) and, in
// later work, the probe actors (DbHealthProbeActor, PeerProbeSupervisor and
// PeerOpcUaProbeActor) whose results feed ServiceLevel.
//
// HTTP semantics:
//
//   - /healthz answers 200 "ok" as long as the process serves HTTP: a
//     supervisor or load balancer uses it for liveness only.
//   - /readyz answers 200 when the host's readiness function returns nil,
//     otherwise 503 with the returned reason; it is evaluated on every
//     request, never cached.
//   - /metrics is the Prometheus handler given to NewHTTPServer.
//   - No single client can hold the server (HTTPOptions, from Http:*): a
//     request must arrive whole within ReadTimeout (its headers within
//     min(5 s, ReadTimeout)), a response must be written within
//     WriteTimeout, headers are capped at 64 KiB, and a body above
//     MaxBodyBytes is answered 413 — at once when Content-Length declares
//     it, when the read passes the limit for a chunked body.
//
// Duties of the caller (the host):
//
//  1. Build the server with NewHTTPServer, mount extra handlers with Handle,
//     then Start it; stop start-up when Start fails (the error names the
//     address, and wraps ErrAddrInUse when the port is taken).
//  2. Pass a readiness function that is safe for concurrent use and returns
//     quickly (it runs on HTTP request goroutines).
//  3. Call Shutdown during coordinated shutdown.
//  4. A mounted handler that streams extends its own write deadline with
//     http.ResponseController; a handler that reads a body treats
//     *http.MaxBytesError as "too large" (the client gets 413 either way).
package health
