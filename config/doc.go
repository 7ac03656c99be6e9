// Package config owns one node's configuration: the appsettings.json
// sections (Cluster, Node, OpcUa, ConfigDb, LocalDb, Http, Telemetry, Deployment,
// Redundancy), their defaults, how they are loaded and how they are validated.
//
// Loading (Load) layers defaults, one JSON file and OTOPCUA_ environment
// variables with koanf, reads keys case-insensitively as .NET binds them,
// accepts .NET TimeSpan and Go durations (ParseDuration), fills in derived
// defaults and validates.
//
// Invariants:
//
//   - A *Config returned by Load or Default is valid: every key has a value
//     its consumer can use without checking again (ports in range, strategy
//     and roles from the accepted sets, seed addresses that parse, durations
//     greater than 0 where a timer needs one).
//   - Validation never stops at the first problem: a *ValidationError lists
//     every unknown key, wrong type and invalid value, each with the key,
//     the value and what is accepted.
//   - The package has no global state besides the hostname lookup used for
//     the default Cluster:PublicHostname.
//
// Duties of the caller (the host):
//
//  1. Pass os.Environ() to Load so that overrides apply; stop start-up with
//     the error text when Load fails.
//  2. Log Config.Warnings at start-up.
//  3. Treat the returned Config as read-only; it is shared by every part of
//     the node.
package config
