package localdb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/otopcua/otopcua/localdb/hlc"
)

// Replication limits.
const (
	// MaxChanges is the most changes Changes returns and ApplyRemote takes
	// in one call.
	MaxChanges = 1000
	// MaxChangesBytes bounds the row bytes Changes returns in one call (at
	// least one change is always returned), so an encoded batch stays under
	// the sync protocol's 4 MiB.
	MaxChangesBytes = 3 << 20
	// DefaultTombstoneTTL is how long a delete is kept for a peer that was
	// down before CompactTombstones forgets it.
	DefaultTombstoneTTL = 24 * time.Hour
)

// Sentinel errors ApplyRemote wraps; the batch is refused whole.
var (
	// ErrUnknownTable: a change names a table that is not replicated.
	ErrUnknownTable = errors.New("localdb: change for a table that is not replicated")
	// ErrMalformedChange: a change's key, row or stamp is not well formed.
	ErrMalformedChange = errors.New("localdb: malformed replicated change")
	// ErrChunksMissing: a pointer arrived before (all) the chunks of its
	// version, or they do not match its size and SHA-256.
	ErrChunksMissing = errors.New("localdb: replicated pointer names chunks this node does not hold")
)

// Change is one replicated row change: the row as it is at Stamp, or its
// delete (a tombstone).
type Change struct {
	// Table is one of ReplicatedTables.
	Table string
	// Key is the row's key as a JSON array: [cluster_id, version,
	// chunk_index] for deployment_artifacts, [cluster_id] for
	// deployment_pointer, [cluster_id, alarm, transition_id] for
	// alarm_sf_events.
	Key string
	// Stamp orders the change; its Node is the origin.
	Stamp hlc.Stamp
	// Deleted marks a tombstone; Row is then empty.
	Deleted bool
	// Row is the row's columns as a JSON object (see the *Row types).
	Row []byte
}

// ArtifactRow is a deployment_artifacts row in a Change.
type ArtifactRow struct {
	ClusterID  string `json:"cluster_id"`
	Version    int64  `json:"version"`
	ChunkIndex int64  `json:"chunk_index"`
	Data       []byte `json:"data"`
}

// PointerRow is a deployment_pointer row in a Change.
type PointerRow struct {
	ClusterID  string `json:"cluster_id"`
	Version    int64  `json:"version"`
	SHA256     string `json:"sha256"`
	ChunkCount int64  `json:"chunk_count"`
	Size       int64  `json:"size"`
	AppliedAt  string `json:"applied_at"`
}

// EventRow is an alarm_sf_events row in a Change. seq is local to each node
// and not replicated.
type EventRow struct {
	ClusterID    string `json:"cluster_id"`
	Alarm        string `json:"alarm"`
	TransitionID string `json:"transition_id"`
	Payload      string `json:"payload"`
	EnqueuedAt   string `json:"enqueued_at"`
	Attempts     int64  `json:"attempts"`
	LastError    string `json:"last_error"`
	Poisoned     bool   `json:"poisoned"`
}

func jsonKey(parts ...any) string {
	b, err := json.Marshal(parts)
	if err != nil {
		panic("localdb: a key of strings and integers always encodes: " + err.Error())
	}
	return string(b)
}

func artifactKey(cluster string, version, chunk int64) string {
	return jsonKey(cluster, version, chunk)
}
func pointerKey(cluster string) string { return jsonKey(cluster) }
func (k EventKey) text() string        { return jsonKey(k.ClusterID, k.Alarm, k.TransitionID) }

// strictJSON decodes exactly one JSON value of b into v: no unknown fields,
// nothing after it.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("data after the JSON value")
	}
	return nil
}

// afterText is the bound for "hlc > ?": the zero stamp means every row.
func afterText(after hlc.Stamp) string {
	if after.IsZero() {
		return ""
	}
	return after.String()
}

// Changes returns the changes of table stamped after after, rows and
// tombstones in stamp order: at most limit (1..MaxChanges) and, past the
// first, no more than MaxChangesBytes of row data. more reports whether
// the table holds changes after the last one returned (read in the same
// snapshot, so a puller needs no second call to know).
func (db *DB) Changes(ctx context.Context, table string, after hlc.Stamp, limit int) (cs []Change, more bool, err error) {
	if tableOrder(table) < 0 {
		return nil, false, fmt.Errorf("%w: %q (replicated are %v)", ErrUnknownTable, table, replicatedTables)
	}
	if limit < 1 || limit > MaxChanges {
		return nil, false, fmt.Errorf("localdb: changes batch of %d: accepted values are 1 to %d", limit, MaxChanges)
	}
	what := "read the changes of " + table
	tx, err := db.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, false, db.queueReadError(what, err)
	}
	defer func() { _ = tx.Rollback() }()
	// One past the limit of each: when neither holds more than limit, they
	// are all the changes after after.
	rows, err := readRows(ctx, tx, table, afterText(after), limit+1)
	if err != nil {
		return nil, false, db.queueReadError(what, err)
	}
	tombs, err := readTombstones(ctx, tx, table, afterText(after), limit+1)
	if err != nil {
		return nil, false, db.queueReadError(what, err)
	}
	all := append(rows, tombs...)
	slices.SortFunc(all, func(a, b Change) int { return hlc.Compare(a.Stamp, b.Stamp) })
	size := 0
	for i, c := range all {
		size += len(c.Row) + len(c.Key)
		if i == limit || (i > 0 && size > MaxChangesBytes) {
			return all[:i], true, nil
		}
	}
	return all, false, nil
}

// rowQueries select a table's rows after a stamp, in stamp order.
var rowQueries = map[string]string{
	TableArtifacts: "SELECT hlc, cluster_id, version, chunk_index, data FROM deployment_artifacts WHERE hlc > ? ORDER BY hlc LIMIT ?",
	TablePointer:   "SELECT hlc, cluster_id, version, sha256, chunk_count, size, applied_at FROM deployment_pointer WHERE hlc > ? ORDER BY hlc LIMIT ?",
	TableEvents: "SELECT hlc, cluster_id, alarm, transition_id, payload, enqueued_at, attempts, last_error, poisoned " +
		"FROM alarm_sf_events WHERE hlc > ? ORDER BY hlc LIMIT ?",
}

func readRows(ctx context.Context, tx *sql.Tx, table, after string, limit int) ([]Change, error) {
	rows, err := tx.QueryContext(ctx, rowQueries[table], after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Change
	for rows.Next() {
		var stamp, key string
		var row any
		switch table {
		case TableArtifacts:
			var r ArtifactRow
			err = rows.Scan(&stamp, &r.ClusterID, &r.Version, &r.ChunkIndex, &r.Data)
			key, row = artifactKey(r.ClusterID, r.Version, r.ChunkIndex), r
		case TablePointer:
			var r PointerRow
			err = rows.Scan(&stamp, &r.ClusterID, &r.Version, &r.SHA256, &r.ChunkCount, &r.Size, &r.AppliedAt)
			key, row = pointerKey(r.ClusterID), r
		case TableEvents:
			var r EventRow
			err = rows.Scan(&stamp, &r.ClusterID, &r.Alarm, &r.TransitionID, &r.Payload, &r.EnqueuedAt, &r.Attempts, &r.LastError, &r.Poisoned)
			key, row = EventKey{r.ClusterID, r.Alarm, r.TransitionID}.text(), r
		}
		if err != nil {
			return nil, err
		}
		s, err := hlc.Parse(stamp)
		if err != nil {
			return nil, fmt.Errorf("row %s of %s: %w", key, table, err)
		}
		b, err := json.Marshal(row)
		if err != nil {
			return nil, err
		}
		out = append(out, Change{Table: table, Key: key, Stamp: s, Row: b})
	}
	return out, rows.Err()
}

func readTombstones(ctx context.Context, tx *sql.Tx, table, after string, limit int) ([]Change, error) {
	rows, err := tx.QueryContext(ctx, "SELECT key, hlc FROM replication_tombstones WHERE tbl = ? AND hlc > ? ORDER BY hlc LIMIT ?", table, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Change
	for rows.Next() {
		var key, stamp string
		if err := rows.Scan(&key, &stamp); err != nil {
			return nil, err
		}
		s, err := hlc.Parse(stamp)
		if err != nil {
			return nil, fmt.Errorf("tombstone %s of %s: %w", key, table, err)
		}
		out = append(out, Change{Table: table, Key: key, Stamp: s, Deleted: true})
	}
	return out, rows.Err()
}

// ApplyRemote applies changes received from a peer, last writer wins per row
// key, and reports how many changed a row (applied) and how many were older
// than what this node holds (skipped). See ApplyRemoteFrom.
func (db *DB) ApplyRemote(ctx context.Context, changes []Change) (applied, skipped int, err error) {
	return db.ApplyRemoteFrom(ctx, "", "", changes, hlc.Stamp{})
}

// ApplyRemoteFrom is ApplyRemote that, in the same transaction, moves the
// cursor of (peer, table) on to cursor (never back), so that a restart
// resumes where the last applied batch ended. peer "" records no cursor.
//
// The batch is refused whole, nothing of it applied, when any change names a
// table that is not replicated (ErrUnknownTable), is malformed
// (ErrMalformedChange), carries a stamp more than the maximum skew ahead of
// this node's clock (hlc.ErrSkew), or is a pointer whose version's chunks
// this node does not hold whole (ErrChunksMissing; chunks in the same batch
// count, they are applied first). A replicated pointer never moves a
// cluster back to an older version: such a change is skipped.
func (db *DB) ApplyRemoteFrom(ctx context.Context, peer, table string, changes []Change, cursor hlc.Stamp) (applied, skipped int, err error) {
	if len(changes) > MaxChanges {
		return 0, 0, fmt.Errorf("%w: batch of %d changes, at most %d", ErrMalformedChange, len(changes), MaxChanges)
	}
	decoded := make([]decodedChange, len(changes))
	for i, c := range changes {
		if decoded[i], err = db.decodeChange(c); err != nil {
			return 0, 0, fmt.Errorf("localdb: refused a batch of %d changes: change %d: %w", len(changes), i, err)
		}
	}
	if peer != "" {
		if err := db.hlc.CheckRemote(cursor); err != nil {
			return 0, 0, fmt.Errorf("localdb: refused a batch of %d changes: cursor: %w", len(changes), err)
		}
	}
	slices.SortStableFunc(decoded, func(a, b decodedChange) int { return tableOrder(a.Table) - tableOrder(b.Table) })
	// The clock moves past the batch before it commits, so that no local
	// write committed after the batch is stamped before it (a peer reading
	// this node's changes in stamp order then misses nothing of ours). If
	// the batch fails, the clock has only moved on, which is harmless.
	for _, d := range decoded {
		_ = db.hlc.Update(d.Stamp) // checked in decodeChange; the clock may only have moved on since
	}
	what := fmt.Sprintf("apply %d replicated changes", len(changes))
	tx, err := db.sql.BeginTx(ctx, nil) // IMMEDIATE: see dsn
	if err != nil {
		return 0, 0, db.writeError(what, err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, d := range decoded {
		ok, err := db.applyOne(ctx, tx, d)
		if err != nil {
			if errors.Is(err, ErrChunksMissing) || errors.Is(err, ErrMalformedChange) {
				return 0, 0, fmt.Errorf("localdb: refused a batch of %d changes: %w", len(changes), err)
			}
			return 0, 0, db.writeError(what, err)
		}
		if ok {
			applied++
		} else {
			skipped++
		}
	}
	if peer != "" {
		if _, err := tx.ExecContext(ctx, "INSERT INTO replication_cursors (peer, tbl, hlc) VALUES (?, ?, ?) "+
			"ON CONFLICT (peer, tbl) DO UPDATE SET hlc = excluded.hlc WHERE excluded.hlc > hlc", peer, table, afterText(cursor)); err != nil {
			return 0, 0, db.writeError(what, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, db.writeError(what, err)
	}
	return applied, skipped, nil
}

// decodedChange is a checked Change with its row decoded.
type decodedChange struct {
	Change
	artifact ArtifactRow
	pointer  PointerRow
	event    EventRow
}

func (db *DB) decodeChange(c Change) (decodedChange, error) {
	d := decodedChange{Change: c}
	if tableOrder(c.Table) < 0 {
		return d, fmt.Errorf("%w: %q", ErrUnknownTable, c.Table)
	}
	if err := db.hlc.CheckRemote(c.Stamp); err != nil {
		if errors.Is(err, hlc.ErrMalformed) {
			return d, fmt.Errorf("%w: %w", ErrMalformedChange, err)
		}
		return d, err
	}
	if c.Deleted {
		if len(c.Row) != 0 {
			return d, fmt.Errorf("%w: a tombstone of %s carries a row", ErrMalformedChange, c.Table)
		}
		if c.Table == TablePointer {
			return d, fmt.Errorf("%w: deployment_pointer rows are never deleted", ErrMalformedChange)
		}
		err := d.checkKey()
		return d, err
	}
	var key string
	var err error
	switch c.Table {
	case TableArtifacts:
		err = strictJSON(c.Row, &d.artifact)
		key = artifactKey(d.artifact.ClusterID, d.artifact.Version, d.artifact.ChunkIndex)
		if err == nil && (d.artifact.ClusterID == "" || d.artifact.Version < 1 || d.artifact.ChunkIndex < 0 || len(d.artifact.Data) == 0) {
			err = errors.New("cluster_id, version ≥ 1, chunk_index ≥ 0 and data are required")
		}
	case TablePointer:
		err = strictJSON(c.Row, &d.pointer)
		key = pointerKey(d.pointer.ClusterID)
		if err == nil && d.pointer.ClusterID == "" {
			err = errors.New("cluster_id is required")
		}
		if err == nil {
			_, err = pointer{d.pointer.Version, d.pointer.SHA256, d.pointer.ChunkCount, d.pointer.Size, d.pointer.AppliedAt, ""}.check(d.pointer.ClusterID)
		}
	case TableEvents:
		err = strictJSON(c.Row, &d.event)
		key = EventKey{d.event.ClusterID, d.event.Alarm, d.event.TransitionID}.text()
		if err == nil {
			err = checkEventRow(d.event)
		}
	}
	if err != nil {
		return d, fmt.Errorf("%w: row of %s: %v", ErrMalformedChange, c.Table, err)
	}
	if key != c.Key {
		return d, fmt.Errorf("%w: row of %s has key %s, the change says %q", ErrMalformedChange, c.Table, key, c.Key)
	}
	return d, nil
}

func checkEventRow(e EventRow) error {
	switch {
	case e.ClusterID == "" || e.Alarm == "" || e.TransitionID == "":
		return errors.New("cluster_id, alarm and transition_id are required")
	case !json.Valid([]byte(e.Payload)):
		return errors.New("payload is not JSON")
	case e.Attempts < 0:
		return errors.New("attempts is negative")
	case len(e.LastError) > maxLastError:
		return fmt.Errorf("last_error is longer than %d bytes", maxLastError)
	}
	if _, err := time.Parse(timeLayout, e.EnqueuedAt); err != nil {
		return fmt.Errorf("enqueued_at %q is not a time", e.EnqueuedAt)
	}
	return nil
}

// checkKey checks a tombstone's key: the JSON array of the table's key
// columns, in the form this package writes. It sets the key columns of
// d.artifact or d.event, which the apply then uses.
func (d *decodedChange) checkKey() error {
	table, key := d.Table, d.Key
	var parts []json.RawMessage
	if err := strictJSON([]byte(key), &parts); err != nil {
		return fmt.Errorf("%w: key %q of %s: %v", ErrMalformedChange, key, table, err)
	}
	var canon string
	bad := false
	switch table {
	case TableArtifacts:
		a := &d.artifact
		bad = len(parts) != 3 || json.Unmarshal(parts[0], &a.ClusterID) != nil || json.Unmarshal(parts[1], &a.Version) != nil ||
			json.Unmarshal(parts[2], &a.ChunkIndex) != nil
		canon = artifactKey(a.ClusterID, a.Version, a.ChunkIndex)
	case TableEvents:
		e := &d.event
		bad = len(parts) != 3 || json.Unmarshal(parts[0], &e.ClusterID) != nil || json.Unmarshal(parts[1], &e.Alarm) != nil ||
			json.Unmarshal(parts[2], &e.TransitionID) != nil
		canon = EventKey{e.ClusterID, e.Alarm, e.TransitionID}.text()
	}
	if bad || canon != key {
		return fmt.Errorf("%w: key %q is not a key of %s", ErrMalformedChange, key, table)
	}
	return nil
}

// current is the stamp this node holds for a row key: the later of the
// row's and its tombstone's, zero when neither exists.
func current(ctx context.Context, tx *sql.Tx, table, key, rowQuery string, args ...any) (hlc.Stamp, error) {
	var best hlc.Stamp
	for _, q := range []struct {
		query string
		args  []any
	}{{rowQuery, args}, {"SELECT hlc FROM replication_tombstones WHERE tbl = ? AND key = ?", []any{table, key}}} {
		var text string
		err := tx.QueryRowContext(ctx, q.query, q.args...).Scan(&text)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return hlc.Stamp{}, err
		}
		if text == "" {
			continue
		}
		s, err := hlc.Parse(text)
		if err != nil {
			return hlc.Stamp{}, fmt.Errorf("stored stamp of %s %s: %w", table, key, err)
		}
		best = hlc.Max(best, s)
	}
	return best, nil
}

// applyOne applies one checked change; false when it was not newer.
func (db *DB) applyOne(ctx context.Context, tx *sql.Tx, d decodedChange) (bool, error) {
	switch d.Table {
	case TableArtifacts:
		return db.applyArtifact(ctx, tx, d)
	case TablePointer:
		return db.applyPointer(ctx, tx, d)
	default:
		return db.applyEvent(ctx, tx, d)
	}
}

func (db *DB) applyArtifact(ctx context.Context, tx *sql.Tx, d decodedChange) (bool, error) {
	cluster, version, chunk := d.artifact.ClusterID, d.artifact.Version, d.artifact.ChunkIndex // checked: the key's columns
	cur, err := current(ctx, tx, TableArtifacts, d.Key,
		"SELECT hlc FROM deployment_artifacts WHERE cluster_id = ? AND version = ? AND chunk_index = ?", cluster, version, chunk)
	if err != nil || !cur.Less(d.Stamp) {
		return false, err
	}
	if d.Deleted {
		// The chunks of the version this node's pointer names stay until
		// the pointer moves on (applyPointer drops them), so that a crash
		// between the chunks' tombstones and the new pointer never leaves
		// a pointer without its chunks.
		if _, err := tx.ExecContext(ctx, "DELETE FROM deployment_artifacts WHERE cluster_id = ? AND version = ? AND chunk_index = ? "+
			"AND version IS NOT (SELECT version FROM deployment_pointer WHERE cluster_id = ?)", cluster, version, chunk, cluster); err != nil {
			return false, err
		}
		return true, tombstone(ctx, tx, TableArtifacts, d.Key, d.Stamp)
	}
	a := d.artifact
	if _, err := tx.ExecContext(ctx, "INSERT INTO deployment_artifacts (cluster_id, version, chunk_index, data, hlc, origin) "+
		"VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (cluster_id, version, chunk_index) DO UPDATE SET "+
		"data = excluded.data, hlc = excluded.hlc, origin = excluded.origin",
		a.ClusterID, a.Version, a.ChunkIndex, a.Data, d.Stamp.String(), d.Stamp.Node); err != nil {
		return false, err
	}
	return true, clearTombstone(ctx, tx, TableArtifacts, d.Key)
}

func (db *DB) applyPointer(ctx context.Context, tx *sql.Tx, d decodedChange) (bool, error) {
	p := d.pointer
	cur, err := current(ctx, tx, TablePointer, d.Key, "SELECT hlc FROM deployment_pointer WHERE cluster_id = ?", p.ClusterID)
	if err != nil || !cur.Less(d.Stamp) {
		return false, err
	}
	var have int64
	err = tx.QueryRowContext(ctx, "SELECT version FROM deployment_pointer WHERE cluster_id = ?", p.ClusterID).Scan(&have)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, err
	case have > p.Version:
		return false, nil // never back to an older version
	}
	if err := checkChunks(ctx, tx, p); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO deployment_pointer "+
		"(cluster_id, version, sha256, chunk_count, size, applied_at, hlc, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "+
		"ON CONFLICT (cluster_id) DO UPDATE SET version = excluded.version, sha256 = excluded.sha256, "+
		"chunk_count = excluded.chunk_count, size = excluded.size, applied_at = excluded.applied_at, "+
		"hlc = excluded.hlc, origin = excluded.origin",
		p.ClusterID, p.Version, p.SHA256, p.ChunkCount, p.Size, p.AppliedAt, d.Stamp.String(), d.Stamp.Node); err != nil {
		return false, err
	}
	// Other versions' chunks go, as SaveArtifact drops them on the origin;
	// the origin's tombstones for them replicate on their own.
	if _, err := tx.ExecContext(ctx, "DELETE FROM deployment_artifacts WHERE cluster_id = ? AND version <> ?", p.ClusterID, p.Version); err != nil {
		return false, err
	}
	return true, clearTombstone(ctx, tx, TablePointer, d.Key)
}

// checkChunks refuses a pointer unless this node holds every chunk of its
// version and they hash to its SHA-256.
func checkChunks(ctx context.Context, tx *sql.Tx, p PointerRow) error {
	rows, err := tx.QueryContext(ctx, "SELECT chunk_index, data FROM deployment_artifacts WHERE cluster_id = ? AND version = ? ORDER BY chunk_index",
		p.ClusterID, p.Version)
	if err != nil {
		return err
	}
	defer rows.Close()
	h := sha256.New()
	var next, size int64
	for rows.Next() {
		var idx int64
		var data sql.RawBytes
		if err := rows.Scan(&idx, &data); err != nil {
			return err
		}
		if idx != next {
			break
		}
		h.Write(data)
		size += int64(len(data))
		next++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if next != p.ChunkCount || size != p.Size || hex.EncodeToString(h.Sum(nil)) != p.SHA256 {
		return fmt.Errorf("%w: cluster %q version %d: %d of %d chunks, %d of %d bytes held, or the SHA-256 differs",
			ErrChunksMissing, p.ClusterID, p.Version, next, p.ChunkCount, size, p.Size)
	}
	return nil
}

func (db *DB) applyEvent(ctx context.Context, tx *sql.Tx, d decodedChange) (bool, error) {
	e := d.event // checked: its key columns are the key's
	cur, err := current(ctx, tx, TableEvents, d.Key,
		"SELECT hlc FROM alarm_sf_events WHERE cluster_id = ? AND alarm = ? AND transition_id = ?", e.ClusterID, e.Alarm, e.TransitionID)
	if err != nil || !cur.Less(d.Stamp) {
		return false, err
	}
	if d.Deleted {
		if _, err := tx.ExecContext(ctx, "DELETE FROM alarm_sf_events WHERE cluster_id = ? AND alarm = ? AND transition_id = ?", e.ClusterID, e.Alarm, e.TransitionID); err != nil {
			return false, err
		}
		return true, tombstone(ctx, tx, TableEvents, d.Key, d.Stamp)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO alarm_sf_events "+
		"(cluster_id, alarm, transition_id, payload, enqueued_at, attempts, last_error, poisoned, hlc, origin) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (cluster_id, alarm, transition_id) DO UPDATE SET "+
		"payload = excluded.payload, enqueued_at = excluded.enqueued_at, attempts = excluded.attempts, "+
		"last_error = excluded.last_error, poisoned = excluded.poisoned, hlc = excluded.hlc, origin = excluded.origin",
		e.ClusterID, e.Alarm, e.TransitionID, e.Payload, e.EnqueuedAt, e.Attempts, e.LastError, e.Poisoned,
		d.Stamp.String(), d.Stamp.Node); err != nil {
		return false, err
	}
	return true, clearTombstone(ctx, tx, TableEvents, d.Key)
}

// Cursor is the stamp after which the next pull of table from peer resumes:
// the last one ApplyRemoteFrom recorded; zero when none.
func (db *DB) Cursor(ctx context.Context, peer, table string) (hlc.Stamp, error) {
	var text string
	err := db.sql.QueryRowContext(ctx, "SELECT hlc FROM replication_cursors WHERE peer = ? AND tbl = ?", peer, table).Scan(&text)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err == nil && text == ""):
		return hlc.Stamp{}, nil
	case err != nil:
		return hlc.Stamp{}, db.queueReadError("read the replication cursor", err)
	}
	s, err := hlc.Parse(text)
	if err != nil {
		return hlc.Stamp{}, fmt.Errorf("localdb: replication cursor of %s %s in %s: %w", peer, table, db.path, err)
	}
	return s, nil
}

// RowCounts is the number of rows of each replicated table.
func (db *DB) RowCounts(ctx context.Context) (map[string]int64, error) {
	out := make(map[string]int64, len(replicatedTables))
	for _, t := range replicatedTables {
		var n int64
		if err := db.sql.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t).Scan(&n); err != nil {
			return nil, db.queueReadError("count the rows of "+t, err)
		}
		out[t] = n
	}
	return out, nil
}

// CompactTombstones forgets deletes stamped more than ttl ago (ttl ≤ 0:
// DefaultTombstoneTTL) and returns how many. A peer down for longer than
// ttl may keep a row deleted here; the TTL is the longest outage that
// replicates deletes exactly.
func (db *DB) CompactTombstones(ctx context.Context, ttl time.Duration) (int, error) {
	if ttl <= 0 {
		ttl = DefaultTombstoneTTL
	}
	cutoff := hlc.Stamp{WallMs: db.clock.Now().Add(-ttl).UnixMilli()}.String()
	n := 0
	err := db.inWriteTx(ctx, "compact replication tombstones", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM replication_tombstones WHERE hlc < ?", cutoff)
		if err != nil {
			return err
		}
		k, _ := res.RowsAffected()
		n = int(k)
		return nil
	})
	return n, err
}
