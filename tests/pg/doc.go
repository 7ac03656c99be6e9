// Package pg runs a real PostgreSQL server for a test, so Config DB code and
// the DB probe can be exercised against a networked database that the test
// stops, kills, freezes and restarts.
//
// Start finds Debian's server binaries (/usr/lib/postgresql/<version>/bin,
// package postgresql; otherwise initdb on PATH), runs initdb into a new
// temporary directory, and starts postgres on 127.0.0.1 at a free port with
// trust authentication and no Unix socket, then creates the database
// Database. When the test runs as root the server runs as the postgres user
// (PostgreSQL refuses root), and the temporary directory belongs to that
// user. Kill, Freeze and Thaw signal the postmaster and every backend (found
// in /proc: PostgreSQL gives each backend its own session).
//
// Invariants:
//
//   - The port and data directory stay the same for the life of a Server:
//     Start after Stop or Kill brings the same database back at the same DSN.
//   - A cleanup registered by Start kills the server (thawing it first) and
//     removes the directory; nothing outlives the test.
//   - Only loopback is used.
//
// Duties of the caller:
//
//  1. Call Server methods from one goroutine at a time; each fails the test
//     on error.
//  2. Run with PostgreSQL installed: scripts/test.sh installs the Debian
//     package postgresql when it is missing; Start fails the test (it does
//     not skip) when the binaries are absent, naming that package.
package pg
