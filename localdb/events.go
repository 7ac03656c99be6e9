package localdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrQueueFull is wrapped by EnqueueEvent when the alarm store-and-forward
// queue already holds its maximum number of rows. The row is not added;
// the rows already queued are kept.
var ErrQueueFull = errors.New("localdb: the alarm store-and-forward queue is full")

// MaxEventBatch is the most rows one queue call reads, deletes or looks up.
const MaxEventBatch = 10_000

// maxLastError is the most bytes of a delivery error MarkFailed keeps.
const maxLastError = 2000

// deleteChunk is how many rows one DELETE statement names; SQLite allows
// 32,766 parameters per statement, this stays far below.
const deleteChunk = 500

// QueuedEvent is one alarm_sf_events row: an alarm history event waiting
// for the Primary's drain to write it to the Config DB. localdb does not
// interpret the payload (package historian encodes it); it keys the row by
// (ClusterID, Alarm, TransitionID), the idempotency key of alarm_history.
type QueuedEvent struct {
	// Seq is the queue position, assigned by EnqueueEvent: a later
	// enqueue always has a higher Seq.
	Seq          int64
	ClusterID    string
	Alarm        string
	TransitionID string
	// Payload is the event as JSON; EnqueueEvent refuses anything else.
	Payload []byte
	// EnqueuedAt is when EnqueueEvent stored the row, by the DB's clock:
	// UTC, microsecond precision.
	EnqueuedAt time.Time
	// Attempts counts the deliveries the Config DB refused (MarkFailed).
	Attempts int
	// LastError is the last refusal's reason ("" before any).
	LastError string
	// Poisoned rows are kept for the operator but no longer delivered:
	// PeekEvents skips them.
	Poisoned bool
}

// Key is the row's idempotency key.
func (e QueuedEvent) Key() EventKey {
	return EventKey{ClusterID: e.ClusterID, Alarm: e.Alarm, TransitionID: e.TransitionID}
}

// EventKey is the idempotency key of a queued event.
type EventKey struct {
	ClusterID, Alarm, TransitionID string
}

// EnqueueEvent adds e to the end of the queue and reports whether it did.
// A row with the same key already queued (the same transition delivered
// twice) leaves the queue as it is: added is false and err nil. When
// maxRows > 0 and the queue already holds maxRows rows or more (poisoned
// ones included), the row is refused with an error wrapping ErrQueueFull:
// the oldest rows are kept, the newest is not added. maxRows ≤ 0: no limit.
//
// e's Seq, EnqueuedAt, Attempts, LastError and Poisoned are ignored: a new
// row starts at the end, stamped now, with no attempts. ClusterID, Alarm
// and TransitionID must not be empty and Payload must be JSON.
//
// The check and the insert are one IMMEDIATE transaction, so the limit and
// the key hold against other connections and processes too.
func (db *DB) EnqueueEvent(ctx context.Context, e QueuedEvent, maxRows int) (added bool, err error) {
	what := fmt.Sprintf("enqueue alarm event %s/%s/%s", e.ClusterID, e.Alarm, e.TransitionID)
	switch {
	case e.ClusterID == "" || e.Alarm == "" || e.TransitionID == "":
		return false, fmt.Errorf("localdb: %s: the cluster id, alarm and transition id must not be empty", what)
	case !json.Valid(e.Payload):
		return false, fmt.Errorf("localdb: %s: the payload is not JSON", what)
	}
	tx, err := db.sql.BeginTx(ctx, nil) // IMMEDIATE: see dsn
	if err != nil {
		return false, db.writeError(what, err)
	}
	defer func() { _ = tx.Rollback() }() // ends the transaction on every return before Commit
	var seq int64
	err = tx.QueryRowContext(ctx, "SELECT seq FROM alarm_sf_events WHERE cluster_id = ? AND alarm = ? AND transition_id = ?",
		e.ClusterID, e.Alarm, e.TransitionID).Scan(&seq)
	switch {
	case err == nil:
		return false, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, db.writeError(what, err)
	}
	if maxRows > 0 {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM alarm_sf_events").Scan(&n); err != nil {
			return false, db.writeError(what, err)
		}
		if n >= maxRows {
			return false, fmt.Errorf("%w: %s holds %d rows, the limit is %d: the event is refused, the queued ones are kept",
				ErrQueueFull, db.path, n, maxRows)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO alarm_sf_events (cluster_id, alarm, transition_id, payload, enqueued_at, hlc, origin) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?)", e.ClusterID, e.Alarm, e.TransitionID, string(e.Payload), db.now().Format(timeLayout),
		db.stampText(), db.node); err != nil {
		return false, db.writeError(what, err)
	}
	if err := clearTombstone(ctx, tx, TableEvents, e.Key().text()); err != nil {
		return false, db.writeError(what, err)
	}
	if err := tx.Commit(); err != nil {
		return false, db.writeError(what, err)
	}
	return true, nil
}

const eventCols = "seq, cluster_id, alarm, transition_id, enqueued_at, attempts, last_error, poisoned"

// PeekEvents returns up to limit (1 … MaxEventBatch) rows that are not
// poisoned and whose Seq is above afterSeq (0: from the start), oldest
// first, without removing them. A drain that pages with the last Seq it
// got does not meet a row it has just failed to deliver again.
func (db *DB) PeekEvents(ctx context.Context, afterSeq int64, limit int) ([]QueuedEvent, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	return db.queryEvents(ctx, "peek the alarm event queue", true,
		"SELECT "+eventCols+", payload FROM alarm_sf_events WHERE poisoned = 0 AND seq > ? ORDER BY seq LIMIT ?", afterSeq, limit)
}

// EventKeysAfter returns up to limit (1 … MaxEventBatch) rows whose Seq is
// above afterSeq, poisoned ones included, in queue order, without their
// payload (Payload is nil). Paging with the last Seq returned walks the
// whole queue.
func (db *DB) EventKeysAfter(ctx context.Context, afterSeq int64, limit int) ([]QueuedEvent, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	return db.queryEvents(ctx, "list the alarm event queue", false,
		"SELECT "+eventCols+" FROM alarm_sf_events WHERE seq > ? ORDER BY seq LIMIT ?", afterSeq, limit)
}

func checkLimit(limit int) error {
	if limit < 1 || limit > MaxEventBatch {
		return fmt.Errorf("localdb: queue batch of %d rows: accepted values are 1 to %d", limit, MaxEventBatch)
	}
	return nil
}

func (db *DB) queryEvents(ctx context.Context, what string, withPayload bool, query string, args ...any) ([]QueuedEvent, error) {
	st, err := db.prepared(ctx, query)
	if err != nil {
		return nil, db.queueReadError(what, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, db.queueReadError(what, err)
	}
	defer rows.Close()
	var out []QueuedEvent
	for rows.Next() {
		var e QueuedEvent
		var at, payload string
		dest := []any{&e.Seq, &e.ClusterID, &e.Alarm, &e.TransitionID, &at, &e.Attempts, &e.LastError, &e.Poisoned}
		if withPayload {
			dest = append(dest, &payload)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, db.queueReadError(what, err)
		}
		if e.EnqueuedAt, err = time.Parse(timeLayout, at); err != nil {
			return nil, fmt.Errorf("localdb: %s: %s: row %d: enqueued_at %q is not a time", what, db.path, e.Seq, at)
		}
		if withPayload {
			e.Payload = []byte(payload)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, db.queueReadError(what, err)
	}
	return out, nil
}

// DeleteEvents removes the rows with the given Seqs (at most MaxEventBatch)
// in one transaction and returns how many there were; a Seq no longer
// queued is skipped.
func (db *DB) DeleteEvents(ctx context.Context, seqs []int64) (int, error) {
	if len(seqs) > MaxEventBatch {
		return 0, fmt.Errorf("localdb: delete %d queued events: at most %d at a time", len(seqs), MaxEventBatch)
	}
	if len(seqs) == 0 {
		return 0, nil
	}
	const what = "delete delivered alarm events"
	n := 0
	err := db.inWriteTx(ctx, what, func(tx *sql.Tx) error {
		for start := 0; start < len(seqs); start += deleteChunk {
			chunk := seqs[start:min(start+deleteChunk, len(seqs))]
			args := make([]any, len(chunk))
			for i, s := range chunk {
				args[i] = s
			}
			k, err := db.deleteEventsWhere(ctx, tx, "seq IN (?"+strings.Repeat(", ?", len(chunk)-1)+")", args...)
			if err != nil {
				return err
			}
			n += k
		}
		return nil
	})
	return n, err
}

// DeleteEventsByKey removes the rows with the given keys (at most
// MaxEventBatch) in one transaction and returns how many there were.
func (db *DB) DeleteEventsByKey(ctx context.Context, keys []EventKey) (int, error) {
	if len(keys) > MaxEventBatch {
		return 0, fmt.Errorf("localdb: delete %d queued events: at most %d at a time", len(keys), MaxEventBatch)
	}
	if len(keys) == 0 {
		return 0, nil
	}
	const what = "delete alarm events already in the history"
	n := 0
	err := db.inWriteTx(ctx, what, func(tx *sql.Tx) error {
		for _, k := range keys {
			c, err := db.deleteEventsWhere(ctx, tx, "cluster_id = ? AND alarm = ? AND transition_id = ?", k.ClusterID, k.Alarm, k.TransitionID)
			if err != nil {
				return err
			}
			n += c
		}
		return nil
	})
	return n, err
}

// MarkFailed records a refused delivery of row seq: Attempts grows by one,
// LastError becomes errText (cut to 2,000 bytes), and with poison the row
// is poisoned (it stays, for the operator, but PeekEvents skips it). A row
// no longer queued is left alone.
func (db *DB) MarkFailed(ctx context.Context, seq int64, errText string, poison bool) error {
	if len(errText) > maxLastError {
		errText = strings.ToValidUTF8(errText[:maxLastError], "")
	}
	p := 0
	if poison {
		p = 1
	}
	// The stamp is taken inside the write transaction: see stampText.
	return db.inWriteTx(ctx, fmt.Sprintf("record the failed delivery of queued alarm event %d", seq), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE alarm_sf_events SET attempts = attempts + 1, last_error = ?, "+
			"poisoned = MAX(poisoned, ?), hlc = ?, origin = ? WHERE seq = ?", errText, p, db.stampText(), db.node, seq)
		return err
	})
}

// EventQueueStats reports the queue: depth is the number of rows waiting
// for delivery (not poisoned), poisoned the number of poisoned rows, and
// oldest when the oldest waiting row was enqueued (zero when none waits).
// It reads one snapshot.
func (db *DB) EventQueueStats(ctx context.Context) (depth, poisoned int, oldest time.Time, err error) {
	const what = "read the alarm event queue's size"
	tx, err := db.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, 0, time.Time{}, db.queueReadError(what, err)
	}
	defer func() { _ = tx.Rollback() }()
	row := func(query string) *sql.Row {
		st, err := db.prepared(ctx, query)
		if err != nil {
			return tx.QueryRowContext(ctx, query) // the same query, unprepared
		}
		return tx.StmtContext(ctx, st).QueryRowContext(ctx)
	}
	if err := row("SELECT COUNT(*) FROM alarm_sf_events WHERE poisoned = 0").Scan(&depth); err != nil {
		return 0, 0, time.Time{}, db.queueReadError(what, err)
	}
	if err := row("SELECT COUNT(*) FROM alarm_sf_events WHERE poisoned = 1").Scan(&poisoned); err != nil {
		return 0, 0, time.Time{}, db.queueReadError(what, err)
	}
	var at string
	err = row("SELECT enqueued_at FROM alarm_sf_events WHERE poisoned = 0 ORDER BY seq LIMIT 1").Scan(&at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return depth, poisoned, time.Time{}, nil
	case err != nil:
		return 0, 0, time.Time{}, db.queueReadError(what, err)
	}
	if oldest, err = time.Parse(timeLayout, at); err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("localdb: %s: %s: enqueued_at %q is not a time", what, db.path, at)
	}
	return depth, poisoned, oldest, nil
}

// inWriteTx runs fn in an IMMEDIATE transaction, committed when fn returns
// nil; any failure is explained by writeError(what).
func (db *DB) inWriteTx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return db.writeError(what, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(tx); err != nil {
		return db.writeError(what, err)
	}
	if err := tx.Commit(); err != nil {
		return db.writeError(what, err)
	}
	return nil
}

// queueReadError explains a failed read of the queue.
func (db *DB) queueReadError(what string, err error) error {
	if damaged(err) {
		return fmt.Errorf("localdb: %s: SQLite reports %s damaged: %w: move it aside; otopcua then starts an empty LocalDb "+
			"(alarm history still queued in the old file is not delivered)", what, db.path, err)
	}
	return fmt.Errorf("localdb: %s from %s: %w", what, db.path, err)
}

// deleteEventsWhere deletes the queued events matching where, leaving a
// tombstone of this node for each, and returns how many it deleted.
func (db *DB) deleteEventsWhere(ctx context.Context, tx *sql.Tx, where string, args ...any) (int, error) {
	return db.deleteTombstoned(ctx, tx, TableEvents, "cluster_id, alarm, transition_id", func(rows *sql.Rows) (string, error) {
		var k EventKey
		err := rows.Scan(&k.ClusterID, &k.Alarm, &k.TransitionID)
		return k.text(), err
	}, where, args...)
}
