// Package telemetry owns the node's structured logs (log/slog) and its
// metrics (OpenTelemetry instruments exported in Prometheus format on
// /metrics).
//
// Invariants:
//
//   - Every metric named in the design exists from start-up: the known
//     attribute combinations of each counter are recorded with a zero add
//     when Metrics is built, so a scrape shows them at 0 before the first
//     event (an OTel counter without any recorded point is not exported).
//   - Metrics owns its own prometheus.Registry (OTel exporter, Go runtime
//     and process collectors); nothing registers on the global default
//     registry.
//   - All Metrics methods are safe for concurrent use and never block on
//     I/O; they may be called from actors.
//
// Duties of the caller (the host):
//
//  1. Build one logger with NewLogger from Telemetry:LogLevel and
//     Telemetry:LogFormat and pass it down; give it to the actor system too.
//  2. Build one Metrics (NewMetrics, or NopMetrics when
//     Telemetry:MetricsEnabled is false), hand Handler to the HTTP server
//     and Meter to packages that add their own instruments.
//  3. Call Shutdown on the way out.
package telemetry
