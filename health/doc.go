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
//
// Duties of the caller (the host):
//
//  1. Build the server with NewHTTPServer, mount extra handlers with Handle,
//     then Start it; stop start-up when Start fails (the error names the
//     address, and wraps ErrAddrInUse when the port is taken).
//  2. Pass a readiness function that is safe for concurrent use and returns
//     quickly (it runs on HTTP request goroutines).
//  3. Call Shutdown during coordinated shutdown.
package health
