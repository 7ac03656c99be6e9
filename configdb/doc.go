// Package configdb owns the Config DB: the one database every node of a
// redundant otopcua set shares (ConfigDb:Provider, ConfigDb:ConnectionString).
//
// Three providers are accepted: "sqlite" (modernc.org/sqlite, pure Go, the
// embedded default "file:otopcua.db"), "postgres" (pgx) and "sqlserver"
// (go-mssqldb). Everything that differs between their SQL dialects —
// placeholders, column types, auto-increment keys, the migration lock,
// upserts, "insert returning id" and row limits — lives in dialect.go; every
// other statement is written once with $1, $2 … placeholders.
//
// The schema (see Migrate) is versioned in a schema_version table:
//
//   - clusters: id, name, created_at — one row per application cluster.
//   - cluster_nodes: cluster_id, node_id (host:port), application_uri,
//     service_level_base (the operator's stored preference, kept for the
//     admin page and not used by the runtime ServiceLevel), created_at,
//     updated_at.
//   - deployments: cluster_id, version, document (bytes), sha256,
//     created_at — one row per stored version of a cluster's deployment
//     document, keyed by (cluster_id, version); versions count 1, 2, …
//     per cluster (PutDeployment, LatestDeployment, DeploymentVersion).
//   - audit_log: id, at, actor, action, target, detail.
//   - alarm_history (version 3): id, cluster_id, alarm, transition_id —
//     UNIQUE, the idempotency key —, kind, event_time, severity, message,
//     source, value, user_name, comment, active, acked, confirmed, enabled,
//     payload (the event's JSON), inserted_at (the database's clock). One
//     row per alarm transition however often it is delivered
//     (InsertAlarmHistory, AlarmHistory, HasAlarmHistory).
//   - admin_users (version 4): name (the key, 1–64 characters of
//     A-Z a-z 0-9 . _ @ -, compared byte for byte in every dialect), role,
//     password_hash (bcrypt), token_hash (hex SHA-256 of the API token,
//     NULL when none; unique among those set), created_at, updated_at
//     (AddUser, SetUserPassword, SetUserTokenHash, RemoveUser, User,
//     UserByTokenHash, ListUsers, CountUsers). Passwords and tokens
//     themselves are never stored.
//   - cluster_leases (version 5): cluster_id (the key, Node:ClusterId),
//     holder (empty when free), epoch (the fencing token, +1 each time the
//     holder changes), expires_at (microseconds since the Unix epoch on
//     the DATABASE's clock). The shared lease of lease-majority
//     (AcquireLease, ReleaseLease, LeaseHolder; cluster/lease wraps them):
//     a take is one conditional UPDATE whose expiry and expiry test use
//     the database's clock, never a node's.
//   - floating_heartbeats (version 6): cluster_id and node (the key), seq
//     (+1 per heartbeat, across restarts), emitted_at (the sender's clock),
//     observed_at (the DATABASE's clock, microseconds since the Unix
//     epoch), claims, epoch, mac: the shared stream on which the members of
//     a floating address judge each other's liveness
//     (PutFloatingHeartbeat, FloatingHeartbeats).
//   - floating_identities (version 7): the application identity the members
//     of a cluster share on their floating address, its private key sealed
//     under Cluster:Secret (PutFloatingIdentity, FloatingIdentity).
//   - cluster_epochs (version 8): the newest redundancy epoch a Primary
//     drained alarm history with; DrainAlarmHistory refuses an older one.
//
// Invariants:
//
//   - Times are written in UTC with microsecond precision and read back in
//     UTC. They come from the handle's clock (WithClock), except
//     deployments.created_at, which is the database's clock (SQLite keeps
//     milliseconds of it), so that versions written by different machines
//     are stamped by one clock.
//   - A cluster's deployment versions are consecutive and only grow: the
//     next one is assigned in the transaction that stores it, under a lock
//     on the cluster's row.
//   - A released migration step is never edited; a schema change is a new
//     step appended to migrations.
//   - InsertAlarmHistory stores a key at most once (ON CONFLICT DO NOTHING;
//     SQL Server: MERGE WITH (HOLDLOCK)), whichever node or how many nodes
//     call it, and tells a refused row (*RowsRefusedError, the rest of the
//     batch stored) from a failed database (any other error). Every alarm
//     history call handles at most MaxAlarmHistoryBatch rows or keys.
//   - Ping is exactly the probe query SELECT 1 under the caller's deadline;
//     it has no side effect and never retries past that deadline. The
//     deadline also bounds connecting: pgx and modernc.org/sqlite watch the
//     context themselves; for SQL Server, whose driver reads the server's
//     pre-login answer without looking at the context, sqlserver.go expires
//     the socket when the context ends.
//
// Duties of the caller (the host):
//
//  1. Open with the configured provider and connection string; stop start-up
//     when Open fails (the error names the accepted values). Open does not
//     require a networked server to be up.
//  2. Call Migrate before using the helpers; on ErrSchemaNewer stop start-up
//     (a newer otopcua owns the database).
//  3. Probe reachability with Ping under a short deadline (health.DbProbe
//     does this on a timer); never let a Config DB outage stop the node.
//  4. Close on shutdown.
package configdb
