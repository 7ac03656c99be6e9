// Package health owns the node's health surface: the HTTP endpoint
// (/healthz, /readyz, /metrics and any handler the host mounts) and the
// probe actors whose results feed ServiceLevel.
//
// Probe actors (protoactor-go, spawned by Start under the Parent of their
// options — the node's actors.Tree, which restarts a failed actor one for
// one with back-off and lists it in GET /api/actors; with no Parent, on a
// private actor system that Stop shuts down):
//
//   - "db-health-probe", kind DbHealthProbeActor (DbProbe): pings the
//     Config DB every Interval and answers redundancy.DbHealthQuery from
//     memory.
//   - "peer-probe-supervisor", kind PeerProbeSupervisor
//     (PeerProbeSupervisor), with one child per other driver peer,
//     "peer-<NodeId>" (e.g. peer-127.0.0.1:4053), kind PeerOpcUaProbeActor:
//     each sends an OPC UA Hello to its peer every Interval and publishes
//     the wire.OpcUaProbeResult.
//
// Timers reach these actors as messages (actors.Every) and the blocking
// I/O — a DB ping, an OPC UA dial — runs on a goroutine the actor owns,
// its result coming back as a message tagged with the incarnation and
// attempt; a result of an earlier incarnation or a superseded attempt is
// ignored. A Receive never blocks.
//
// What survives a restart, and why:
//
//   - DB probe: the last verdict, held by the DbProbe façade, so Last,
//     Ready and the actor's DbHealthQuery answers keep it, with its AsOf
//     (staleness rules still apply); and a Ping in flight, which the new
//     incarnation adopts rather than overlap (probes never overlap). The
//     new incarnation probes at once, so the verdict is refreshed from its
//     source rather than trusted for one more Interval.
//   - Peer probes: a failed child restarts alone (its siblings and the
//     supervisor keep their incarnations) and probes at once. A failed
//     supervisor restarts with fresh children (protoactor stops them
//     first), rebuilt at once from the latest snapshot the façade keeps and
//     the current membership — it does not wait for the next snapshot.
//     Probing keeps listing the peers meanwhile.
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
