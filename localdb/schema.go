package localdb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// SchemaVersion is the schema version this build of otopcua writes.
const SchemaVersion = 3

// applicationID marks a file as an otopcua LocalDb (PRAGMA application_id,
// bytes 68–71 of the SQLite header): the ASCII text "otld".
const applicationID = 0x6f746c64

// migration is one step of the schema. Steps are applied in version order,
// each at most once; a released step is never edited, a change is a new step.
type migration struct {
	version int
	name    string
	stmts   []string
	// fn, when set, runs inside the step's transaction after stmts.
	fn func(ctx context.Context, db *DB, tx *sql.Tx) error
}

// migrations is the schema history; its last version is SchemaVersion.
//
// Version 2 adds alarm_sf_events, the alarm store-and-forward buffer (the
// reference's Phase 2): history events the historian enqueued and the
// Primary-only drain has not yet written to the Config DB alarm_history,
// each with its idempotency key (cluster_id, alarm, transition_id).
//
// Version 3 prepares pair replication: an HLC stamp (hlc, the sortable text
// of hlc.Stamp) and the writing node (origin) on every replicated row —
// deployment_artifacts, deployment_pointer and alarm_sf_events — with an
// index on hlc each; replication_tombstones, the deletes of those tables
// (kept for a TTL, then compacted); and replication_cursors, the last stamp
// applied from each peer per table. Rows written before version 3 are
// stamped by the step itself (stampExisting), one stamp each.
var migrations = []migration{
	{1, "deployment_artifacts, deployment_pointer", []string{
		"CREATE TABLE deployment_artifacts (" +
			"cluster_id TEXT NOT NULL, " +
			"version INTEGER NOT NULL, " +
			"chunk_index INTEGER NOT NULL, " +
			"data BLOB NOT NULL, " +
			"PRIMARY KEY (cluster_id, version, chunk_index)) STRICT",
		"CREATE TABLE deployment_pointer (" +
			"cluster_id TEXT NOT NULL PRIMARY KEY, " +
			"version INTEGER NOT NULL, " +
			"sha256 TEXT NOT NULL, " + // lowercase hex of the whole document
			"chunk_count INTEGER NOT NULL, " +
			"size INTEGER NOT NULL, " + // bytes of the whole document
			"applied_at TEXT NOT NULL) STRICT", // timeLayout, UTC
	}, nil},
	{2, "alarm_sf_events", []string{
		// seq is the queue order: AUTOINCREMENT never reuses a number, so
		// a row enqueued later always sorts after every row ever enqueued
		// before it, even after the newest rows were deleted.
		"CREATE TABLE alarm_sf_events (" +
			"seq INTEGER PRIMARY KEY AUTOINCREMENT, " +
			"cluster_id TEXT NOT NULL, " +
			"alarm TEXT NOT NULL, " +
			"transition_id TEXT NOT NULL, " +
			"payload TEXT NOT NULL CHECK (json_valid(payload)), " + // the event as JSON
			"enqueued_at TEXT NOT NULL, " + // timeLayout, UTC
			"attempts INTEGER NOT NULL DEFAULT 0, " + // failed deliveries of this row
			"last_error TEXT NOT NULL DEFAULT '', " +
			"poisoned INTEGER NOT NULL DEFAULT 0 CHECK (poisoned IN (0, 1)), " +
			"UNIQUE (cluster_id, alarm, transition_id)) STRICT",
		// The drain's PeekEvents and the depth count read this index only.
		"CREATE INDEX alarm_sf_events_pending ON alarm_sf_events (poisoned, seq)",
	}, nil},
	{3, "replication stamps, replication_tombstones, replication_cursors", []string{
		"ALTER TABLE deployment_artifacts ADD COLUMN hlc TEXT NOT NULL DEFAULT ''",
		"ALTER TABLE deployment_artifacts ADD COLUMN origin TEXT NOT NULL DEFAULT ''",
		"ALTER TABLE deployment_pointer ADD COLUMN hlc TEXT NOT NULL DEFAULT ''",
		"ALTER TABLE deployment_pointer ADD COLUMN origin TEXT NOT NULL DEFAULT ''",
		"ALTER TABLE alarm_sf_events ADD COLUMN hlc TEXT NOT NULL DEFAULT ''",
		"ALTER TABLE alarm_sf_events ADD COLUMN origin TEXT NOT NULL DEFAULT ''",
		"CREATE INDEX deployment_artifacts_hlc ON deployment_artifacts (hlc)",
		"CREATE INDEX deployment_pointer_hlc ON deployment_pointer (hlc)",
		"CREATE INDEX alarm_sf_events_hlc ON alarm_sf_events (hlc)",
		// key is the row's key as a JSON array, e.g. ["site-a",3,0].
		"CREATE TABLE replication_tombstones (" +
			"tbl TEXT NOT NULL, " +
			"key TEXT NOT NULL, " +
			"hlc TEXT NOT NULL, " +
			"origin TEXT NOT NULL, " +
			"PRIMARY KEY (tbl, key)) STRICT",
		"CREATE INDEX replication_tombstones_hlc ON replication_tombstones (tbl, hlc)",
		"CREATE TABLE replication_cursors (" +
			"peer TEXT NOT NULL, " +
			"tbl TEXT NOT NULL, " +
			"hlc TEXT NOT NULL, " +
			"PRIMARY KEY (peer, tbl)) STRICT",
	}, stampExisting},
}

const createSchemaVersion = "CREATE TABLE IF NOT EXISTS schema_version (" +
	"version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT"

// queryer is *sql.DB or *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// fileState is what migrate learns about a file before touching it.
type fileState struct {
	appID   int64
	tables  []string // user tables, sorted
	version int      // 0: no schema_version table
}

func readState(ctx context.Context, q queryer) (fileState, error) {
	var s fileState
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&s.appID); err != nil {
		return s, fmt.Errorf("read application_id: %w", err)
	}
	rows, err := q.QueryContext(ctx,
		"SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
	if err != nil {
		return s, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	hasVersion := false
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return s, fmt.Errorf("list tables: %w", err)
		}
		s.tables = append(s.tables, name)
		hasVersion = hasVersion || name == "schema_version"
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("list tables: %w", err)
	}
	if hasVersion {
		var v sql.NullInt64
		if err := q.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_version").Scan(&v); err != nil {
			return s, fmt.Errorf("read schema_version: %w", err)
		}
		s.version = int(v.Int64)
	}
	return s, nil
}

// check refuses a file that is not ours or newer than latest, the last
// version this build knows. It reports whether steps need applying.
func (s fileState) check(abs string, latest int) (needsSteps bool, err error) {
	switch {
	case s.appID != applicationID && s.appID != 0:
		return false, notDatabase(abs, fmt.Sprintf("its SQLite application_id is %#x, an otopcua LocalDb's is %#x", s.appID, applicationID))
	case s.appID == 0 && len(s.tables) > 0:
		return false, notDatabase(abs, fmt.Sprintf("it is an SQLite database of something else (tables %s); "+
			"is LocalDb:Path pointing at the Config DB? Each node needs its own LocalDb file", strings.Join(s.tables, ", ")))
	case s.version > latest:
		return false, fmt.Errorf("%w: %s is at schema version %d, this otopcua knows up to %d: "+
			"run the newer otopcua, or move the file aside to start an empty cache", ErrSchemaNewer, abs, s.version, latest)
	}
	return s.version < latest, nil
}

// migrate brings a new or older file to the last version of steps (Open
// passes migrations). A file already there is only read, so a read-only
// file opens. The steps run in one IMMEDIATE transaction that re-reads the
// state first, so a second process opening the same file at once waits,
// then finds nothing to do; a failed step rolls every step back.
func (db *DB) migrate(ctx context.Context, steps []migration) error {
	latest := steps[len(steps)-1].version
	needs, err := db.needsSteps(ctx, latest)
	if err != nil || !needs {
		return err
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return db.writeError("create the schema", err)
	}
	defer func() { _ = tx.Rollback() }() // ends the transaction on every return before Commit
	s, err := readState(ctx, tx)
	if err != nil {
		return db.stateError(err)
	}
	if needs, err = s.check(db.path, latest); err != nil || !needs {
		return err
	}
	from := s.version
	if err := db.applySteps(ctx, tx, from, steps); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return db.writeError("create the schema", err)
	}
	if from == 0 {
		db.log.Info("localdb: created the schema", "schema_version", latest)
	} else {
		db.log.Info("localdb: upgraded the schema", "from", from, "schema_version", latest)
	}
	return nil
}

// needsSteps checks the file in a read transaction: one snapshot, so that a
// migration another process commits meanwhile is seen whole or not at all.
func (db *DB) needsSteps(ctx context.Context, latest int) (bool, error) {
	tx, err := db.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, db.stateError(err)
	}
	defer func() { _ = tx.Rollback() }()
	s, err := readState(ctx, tx)
	if err != nil {
		return false, db.stateError(err)
	}
	return s.check(db.path, latest)
}

// applySteps runs every step after version from inside tx.
func (db *DB) applySteps(ctx context.Context, tx *sql.Tx, from int, steps []migration) error {
	stmts := []string{fmt.Sprintf("PRAGMA application_id = %d", applicationID), createSchemaVersion}
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return db.writeError("create the schema", err)
		}
	}
	for _, m := range steps {
		if m.version <= from {
			continue
		}
		for _, stmt := range m.stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return db.writeError(fmt.Sprintf("apply schema version %d (%s)", m.version, m.name), err)
			}
		}
		if m.fn != nil {
			if err := m.fn(ctx, db, tx); err != nil {
				return db.writeError(fmt.Sprintf("apply schema version %d (%s)", m.version, m.name), err)
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
			m.version, m.name, db.now().Format(timeLayout)); err != nil {
			return db.writeError(fmt.Sprintf("record schema version %d", m.version), err)
		}
	}
	return nil
}

// stateError explains a failure to read what the file holds.
func (db *DB) stateError(err error) error {
	if damaged(err) {
		return notDatabase(db.path, "SQLite cannot read it: "+err.Error())
	}
	return fmt.Errorf("localdb: %s: %w", db.path, err)
}
