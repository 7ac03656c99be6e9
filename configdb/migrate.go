package configdb

import (
	"context"
	"database/sql"
	"fmt"
)

// migration is one step of the schema. Steps are applied in version order,
// each at most once; a released step is never edited, a change is a new step.
type migration struct {
	version int
	name    string
	stmts   func(d *dialect) []string
	// fill, when set, runs after stmts in the same transaction, for what
	// SQL alone cannot do in every dialect (SQLite has no SHA-256).
	fill func(ctx context.Context, tx *sql.Tx, q *queries) error
}

// migrations is the schema history. SchemaVersion is its last version.
var migrations = []migration{
	{1, "clusters, cluster_nodes, deployments, audit_log", schemaV1, nil},
	{2, "deployments: a version per cluster, sha256, created_at by the database's clock", schemaV2, hashDeployments},
	{3, "alarm_history", schemaV3, nil},
	{4, "admin_users", schemaV4, nil},
	{5, "cluster_leases", schemaV5, nil},
	{6, "floating_heartbeats", schemaV6, nil},
	{7, "floating_identities", schemaV7, nil},
	{8, "cluster_epochs", schemaV8, nil},
}

// SchemaVersion is the schema version this build of otopcua writes.
var SchemaVersion = migrations[len(migrations)-1].version

// schemaVersionTable records the applied steps, one row per version.
func schemaVersionTable(d *dialect) string {
	return d.createIfMissing("schema_version",
		"version INTEGER NOT NULL PRIMARY KEY, name "+d.str+" NOT NULL, applied_at "+d.ts+" NOT NULL")
}

func schemaV1(d *dialect) []string {
	return []string{
		"CREATE TABLE clusters (" +
			"id " + d.str + " NOT NULL PRIMARY KEY, " +
			"name " + d.str + " NOT NULL, " +
			"created_at " + d.ts + " NOT NULL)",
		"CREATE TABLE cluster_nodes (" +
			"cluster_id " + d.str + " NOT NULL REFERENCES clusters (id), " +
			"node_id " + d.str + " NOT NULL, " +
			"application_uri " + d.text + " NOT NULL, " +
			"service_level_base INTEGER NOT NULL DEFAULT 0, " +
			"created_at " + d.ts + " NOT NULL, " +
			"updated_at " + d.ts + " NOT NULL, " +
			"PRIMARY KEY (cluster_id, node_id))",
		"CREATE TABLE deployments (" +
			"id " + d.ident + ", " +
			"cluster_id " + d.str + " NOT NULL REFERENCES clusters (id), " +
			"artifact " + d.blob + " NOT NULL, " +
			"created_at " + d.ts + " NOT NULL)",
		"CREATE INDEX deployments_cluster ON deployments (cluster_id, id)",
		"CREATE TABLE audit_log (" +
			"id " + d.ident + ", " +
			"at " + d.ts + " NOT NULL, " +
			"actor " + d.str + " NOT NULL, " +
			"action " + d.str + " NOT NULL, " +
			"target " + d.text + " NOT NULL, " +
			"detail " + d.text + " NOT NULL)",
		"CREATE INDEX audit_log_at ON audit_log (at)",
	}
}

// schemaV2 rebuilds deployments keyed by (cluster_id, version): the
// version counts 1, 2, … per cluster (existing rows are numbered in id
// order), the document keeps its bytes, sha256 is its lower-case hex digest
// (filled in by hashDeployments for copied rows) and created_at is written
// from the database's clock.
func schemaV2(d *dialect) []string {
	stmts := []string{
		"CREATE TABLE deployments_v2 (" +
			"cluster_id " + d.str + " NOT NULL REFERENCES clusters (id), " +
			"version BIGINT NOT NULL CHECK (version >= 1), " +
			"document " + d.blob + " NOT NULL, " +
			"sha256 VARCHAR(64) NOT NULL, " +
			"created_at " + d.ts + " NOT NULL, " +
			"PRIMARY KEY (cluster_id, version))",
		"INSERT INTO deployments_v2 (cluster_id, version, document, sha256, created_at) " +
			"SELECT cluster_id, ROW_NUMBER() OVER (PARTITION BY cluster_id ORDER BY id), artifact, '', created_at FROM deployments",
		"DROP TABLE deployments",
	}
	return append(stmts, d.renameTable("deployments_v2", "deployments")...)
}

// schemaV3 adds alarm_history: one row per alarm transition, stored once
// per key (cluster_id, alarm, transition_id) however often it is delivered.
// cluster_id does not reference clusters: a history row must never be
// refused because a clusters row is missing. The severity check is the
// OPC UA range; inserted_at is the database's clock.
func schemaV3(d *dialect) []string {
	return []string{
		"CREATE TABLE alarm_history (" +
			"id " + d.ident + ", " +
			"cluster_id " + d.str + " NOT NULL, " +
			"alarm " + d.str + " NOT NULL, " +
			"transition_id " + d.str + " NOT NULL, " +
			"kind " + d.str + " NOT NULL, " +
			"event_time " + d.ts + " NOT NULL, " +
			"severity INTEGER NOT NULL CHECK (severity >= 0 AND severity <= 1000), " +
			"message " + d.medium + " NOT NULL, " +
			"source " + d.str + " NOT NULL, " +
			"value " + d.medium + " NOT NULL, " +
			"user_name " + d.str + " NOT NULL, " +
			"comment " + d.medium + " NOT NULL, " +
			"active " + d.boolean + " NOT NULL, " +
			"acked " + d.boolean + " NOT NULL, " +
			"confirmed " + d.boolean + " NOT NULL, " +
			"enabled " + d.boolean + " NOT NULL, " +
			"payload " + d.text + " NOT NULL, " +
			"inserted_at " + d.ts + " NOT NULL, " +
			"CONSTRAINT alarm_history_key UNIQUE (cluster_id, alarm, transition_id))",
		"CREATE INDEX alarm_history_time ON alarm_history (cluster_id, event_time)",
	}
}

// schemaV4 adds admin_users: the users of the admin pages and API. name is
// the key, compared byte for byte; role is one of admin.Roles (checked by
// the caller, so that a new role needs no migration); password_hash is a
// bcrypt hash; token_hash is the lower-case hex SHA-256 of the user's API
// token, NULL when the user has none, and unique among those set (a
// filtered index: every dialect allows many NULLs in it). created_at and
// updated_at come from the handle's clock, as in cluster_nodes.
func schemaV4(d *dialect) []string {
	return []string{
		"CREATE TABLE admin_users (" +
			"name " + d.name + " NOT NULL PRIMARY KEY, " +
			"role " + d.str + " NOT NULL, " +
			"password_hash " + d.str + " NOT NULL, " +
			"token_hash CHAR(64) NULL, " +
			"created_at " + d.ts + " NOT NULL, " +
			"updated_at " + d.ts + " NOT NULL)",
		"CREATE UNIQUE INDEX admin_users_token ON admin_users (token_hash) WHERE token_hash IS NOT NULL",
	}
}

// schemaV5 adds cluster_leases: the lease-majority lease of each cluster
// (AcquireLease). holder is the owner holding it (” when free), compared
// byte for byte; epoch is the fencing token, raised by 1 each time the
// holder changes; expires_at is microseconds since the Unix epoch on the
// DATABASE's clock (dialect.dbNowMicros), never a node's. cluster_id does
// not reference clusters: the lease must work before the cluster row is
// written.
func schemaV5(d *dialect) []string {
	return []string{
		"CREATE TABLE cluster_leases (" +
			"cluster_id " + d.key + " NOT NULL PRIMARY KEY, " +
			"holder " + d.key + " NOT NULL, " +
			"epoch BIGINT NOT NULL, " +
			"expires_at BIGINT NOT NULL)",
	}
}

// schemaV6 adds floating_heartbeats: the shared stream that judges the
// liveness of the members holding a floating address (PutFloatingHeartbeat).
// One row per (cluster, node), overwritten by each heartbeat: seq rises by
// 1 on every write (across the node's restarts), observed_at is
// microseconds since the Unix epoch on the DATABASE's clock, emitted_at the
// same on the sender's clock (shown as skew, never used in a decision);
// claims, draining, healthy and licensed are the sender's own view of its
// hold and its eligibility.
func schemaV6(d *dialect) []string {
	return []string{
		"CREATE TABLE floating_heartbeats (" +
			"cluster_id " + d.key + " NOT NULL, " +
			"node " + d.key + " NOT NULL, " +
			"seq BIGINT NOT NULL, " +
			"emitted_at BIGINT NOT NULL, " +
			"observed_at BIGINT NOT NULL, " +
			"claims INTEGER NOT NULL, " +
			"draining INTEGER NOT NULL, " +
			"healthy INTEGER NOT NULL, " +
			"licensed INTEGER NOT NULL, " +
			"epoch BIGINT NOT NULL, " +
			"mac " + d.key + " NOT NULL, " +
			"PRIMARY KEY (cluster_id, node))",
	}
}

// schemaV7 adds floating_identities: the application identity the members
// of a cluster present on their floating address, one row per cluster
// (PutFloatingIdentity). sealed_key is the private key encrypted by the
// writer with a key derived from Cluster:Secret; created_at is
// microseconds since the Unix epoch on the writer's clock.
func schemaV7(d *dialect) []string {
	return []string{
		"CREATE TABLE floating_identities (" +
			"cluster_id " + d.key + " NOT NULL PRIMARY KEY, " +
			"application_uri " + d.text + " NOT NULL, " +
			"certificate " + d.blob + " NOT NULL, " +
			"sealed_key " + d.blob + " NOT NULL, " +
			"created_at BIGINT NOT NULL)",
	}
}

// hashDeployments fills in the sha256 of the rows schemaV2 copied.
func hashDeployments(ctx context.Context, tx *sql.Tx, q *queries) error {
	type key struct {
		cluster string
		version int64
	}
	rows, err := tx.QueryContext(ctx, q.unhashedDeployments)
	if err != nil {
		return err
	}
	var keys []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.cluster, &k.version); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// One row at a time: SQL Server allows no second statement while a
	// result set is open on the connection.
	for _, k := range keys {
		var doc []byte
		if err := tx.QueryRowContext(ctx, q.deploymentDocument, k.cluster, k.version).Scan(&doc); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, q.setDeploymentHash, sha256Hex(doc), k.cluster, k.version); err != nil {
			return err
		}
	}
	return nil
}

// Migrate brings the schema to SchemaVersion. It is idempotent, and safe
// when several nodes call it at once: everything runs in one transaction
// that first takes the dialect's migration lock (SQLite: BEGIN IMMEDIATE,
// PostgreSQL: pg_advisory_xact_lock, SQL Server: sp_getapplock), so the
// second node waits, then finds nothing left to do. A failed step rolls the
// whole call back. A database already at a newer version than this build
// knows returns ErrSchemaNewer and is left untouched.
func (db *DB) Migrate(ctx context.Context) error {
	return db.migrate(ctx, migrations)
}

// migrate applies the steps of list that the database lacks.
func (db *DB) migrate(ctx context.Context, list []migration) (err error) {
	latest := list[len(list)-1].version
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("configdb: migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if db.d.lockStmt != "" {
		if _, err := tx.ExecContext(ctx, db.d.lockStmt); err != nil {
			return fmt.Errorf("configdb: migrate: take the migration lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, schemaVersionTable(db.d)); err != nil {
		return fmt.Errorf("configdb: migrate: create schema_version: %w", err)
	}
	current, err := currentVersion(ctx, tx)
	if err != nil {
		return err
	}
	if current > latest {
		return fmt.Errorf("%w: the database is at version %d, this otopcua knows up to %d", ErrSchemaNewer, current, latest)
	}
	for _, m := range list {
		if m.version <= current {
			continue
		}
		for _, stmt := range m.stmts(db.d) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("configdb: migrate to version %d (%s): %w", m.version, m.name, err)
			}
		}
		if m.fill != nil {
			if err := m.fill(ctx, tx, db.q); err != nil {
				return fmt.Errorf("configdb: migrate to version %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, db.q.insertVersion, m.version, m.name, db.now()); err != nil {
			return fmt.Errorf("configdb: migrate: record version %d: %w", m.version, err)
		}
	}
	if db.noAlarmKey {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE alarm_history DROP CONSTRAINT IF EXISTS alarm_history_key"); err != nil {
			return fmt.Errorf("configdb: migrate: drop the alarm_history key (test mutation): %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("configdb: migrate: commit: %w", err)
	}
	return nil
}

// Version returns the schema version recorded in the database: 0 when it
// was never migrated.
func (db *DB) Version(ctx context.Context) (int, error) {
	var n int
	if err := db.sql.QueryRowContext(ctx, db.q.tableExists, "schema_version").Scan(&n); err != nil {
		return 0, fmt.Errorf("configdb: schema version: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	return currentVersion(ctx, db.sql)
}

// queryRower is *sql.DB or *sql.Tx.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func currentVersion(ctx context.Context, q queryRower) (int, error) {
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("configdb: read schema_version: %w", err)
	}
	return int(v.Int64), nil
}

// schemaV8 adds cluster_epochs: the newest redundancy epoch a Primary of
// each cluster drained alarm history with (DrainAlarmHistory), the fence
// that refuses a drain stamped with an older one.
func schemaV8(d *dialect) []string {
	return []string{
		"CREATE TABLE cluster_epochs (" +
			"cluster_id " + d.key + " NOT NULL PRIMARY KEY, " +
			"epoch BIGINT NOT NULL)",
	}
}
