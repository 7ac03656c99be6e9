package configdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MaxAlarmHistoryBatch is the most rows one alarm history call stores,
// returns or looks up.
const MaxAlarmHistoryBatch = 10_000

// maxMediumLen is the longest message, value or comment, in characters
// (VARCHAR(4000) / NVARCHAR(4000); SQL Server counts UTF-16 code units, so
// a text with characters outside the Basic Multilingual Plane may be
// refused by it below this length).
const maxMediumLen = 4000

// alarmKeyChunk is how many keys one HasAlarmHistory statement asks for:
// 2 parameters each, within SQL Server's 2,100 parameters per statement.
const alarmKeyChunk = 200

// ErrRowsRefused is wrapped by *RowsRefusedError.
var ErrRowsRefused = errors.New("configdb: alarm history rows refused")

// AlarmHistoryRow is an alarm_history row: one alarm transition.
type AlarmHistoryRow struct {
	// ID is assigned by the database (read back by AlarmHistory; ignored
	// by InsertAlarmHistory).
	ID int64
	// ClusterID, Alarm and TransitionID are the idempotency key: a row
	// whose key is stored is not stored again. Each is 1 … 200 characters.
	ClusterID    string
	Alarm        string
	TransitionID string
	// Kind of transition (active, inactive, acked, …), 1 … 200 characters.
	Kind string
	// EventTime is when the transition happened, stored in UTC to the
	// microsecond; not zero, before the year 10000.
	EventTime time.Time
	// Severity is the OPC UA severity, 0 … 1000 (a CHECK of the table).
	Severity int
	// Message, Value (the source's value as text) and Comment are at most
	// 4,000 characters; Source ("device/tag") and UserName at most 200.
	Message, Source, Value, UserName, Comment string
	// The condition's state after the transition.
	Active, Acked, Confirmed, Enabled bool
	// Payload is the whole event as its writer encoded it (JSON), kept for
	// fields newer than the columns.
	Payload []byte
	// InsertedAt is the database's clock when the row was stored (read
	// back by AlarmHistory; ignored by InsertAlarmHistory).
	InsertedAt time.Time
}

// Key is the row's idempotency key within its cluster.
func (r AlarmHistoryRow) Key() AlarmKey {
	return AlarmKey{Alarm: r.Alarm, TransitionID: r.TransitionID}
}

// AlarmKey is the key of an alarm_history row within a cluster.
type AlarmKey struct {
	Alarm, TransitionID string
}

// RefusedRow is a row InsertAlarmHistory did not store because the row
// itself is unacceptable: to the checks below (Err wraps ErrInvalid) or to
// the database (a constraint, a value too long, a character the database
// cannot store). Storing it again will fail again.
type RefusedRow struct {
	Index int // in the rows passed to InsertAlarmHistory
	Key   AlarmKey
	Err   error
}

// RowsRefusedError is InsertAlarmHistory's error when some rows were
// refused: every other row is stored. errors.Is(err, ErrRowsRefused).
type RowsRefusedError struct {
	Rows []RefusedRow // in index order
}

func (e *RowsRefusedError) Error() string {
	r := e.Rows[0]
	more := ""
	if len(e.Rows) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(e.Rows)-1)
	}
	return fmt.Sprintf("configdb: %d alarm history rows refused: row %d (%s/%s): %v%s",
		len(e.Rows), r.Index, r.Key.Alarm, r.Key.TransitionID, r.Err, more)
}

func (e *RowsRefusedError) Unwrap() error { return ErrRowsRefused }

// InsertAlarmHistory stores the rows (at most MaxAlarmHistoryBatch) whose
// key is not stored yet and returns how many it stored; a row whose key is
// already there is left as it is and not counted. Storing the same rows
// again, from this node or another, stores nothing: each transition is in
// alarm_history once.
//
// The outcome is one of three:
//
//   - nil: every row is stored (now or before).
//   - *RowsRefusedError (errors.Is ErrRowsRefused): the rows it names are
//     unacceptable and were not stored; every other row is. The caller
//     keeps the refused rows (to retry, then to poison) and is done with
//     the others.
//   - any other error: the database failed as a whole (unreachable, a
//     timeout, ctx ended). Some rows may have been stored; calling again
//     with the same rows is safe and stores the rest.
//
// The rows are stored in one transaction. When the database refuses one,
// the transaction is rolled back and the rows are stored again one by one,
// each in its own statement, to find which ones it refuses.
func (db *DB) InsertAlarmHistory(ctx context.Context, rows []AlarmHistoryRow) (inserted int, err error) {
	return db.insertAlarmHistory(ctx, rows, nil)
}

// insertAlarmHistory is InsertAlarmHistory, each transaction fenced by
// fence (nil: none); a stale fence ends it with errStale.
func (db *DB) insertAlarmHistory(ctx context.Context, rows []AlarmHistoryRow, fence *epochFence) (inserted int, err error) {
	if len(rows) > MaxAlarmHistoryBatch {
		return 0, fmt.Errorf("%w: %d alarm history rows: at most %d at a time", ErrInvalid, len(rows), MaxAlarmHistoryBatch)
	}
	var refused []RefusedRow
	var valid []int
	for i, r := range rows {
		if err := checkAlarmRow(r); err != nil {
			refused = append(refused, RefusedRow{Index: i, Key: r.Key(), Err: err})
			continue
		}
		valid = append(valid, i)
	}
	inserted, err = db.insertAlarmBatch(ctx, rows, valid, fence)
	if err != nil && db.d.rowRefused(err) {
		var more []RefusedRow
		inserted, more, err = db.insertAlarmRows(ctx, rows, valid, fence)
		refused = append(refused, more...)
	}
	if errors.Is(err, errStale) {
		return inserted, err
	}
	if err != nil {
		return inserted, fmt.Errorf("configdb: store alarm history: %w", err)
	}
	if len(refused) > 0 {
		slices.SortFunc(refused, func(a, b RefusedRow) int { return a.Index - b.Index })
		return inserted, &RowsRefusedError{Rows: refused}
	}
	return inserted, nil
}

// insertAlarmBatch stores rows[i] for every i of idx in one transaction,
// which runs fence first (nil: none).
func (db *DB) insertAlarmBatch(ctx context.Context, rows []AlarmHistoryRow, idx []int, fence *epochFence) (int, error) {
	if len(idx) == 0 {
		return 0, nil
	}
	n := 0
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		if err := fence.hold(ctx, tx, db.q); err != nil {
			return err
		}
		stmt, err := tx.PrepareContext(ctx, db.q.insertAlarmHistory)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, i := range idx {
			res, err := stmt.ExecContext(ctx, alarmArgs(rows[i])...)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += int(k)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// insertAlarmRows stores rows[i] for every i of idx, each in its own
// statement (in its own transaction behind fence, when there is one), and
// returns the ones the database refuses. It stops at the first other error.
func (db *DB) insertAlarmRows(ctx context.Context, rows []AlarmHistoryRow, idx []int, fence *epochFence) (int, []RefusedRow, error) {
	n := 0
	var refused []RefusedRow
	for _, i := range idx {
		k, err := db.insertAlarmRow(ctx, rows[i], fence)
		switch {
		case err != nil && db.d.rowRefused(err):
			refused = append(refused, RefusedRow{Index: i, Key: rows[i].Key(), Err: fmt.Errorf("%s refuses the row: %w", db.d.provider, err)})
		case err != nil:
			return n, refused, err
		default:
			n += k
		}
	}
	return n, refused, nil
}

// insertAlarmRow stores one row, behind fence when there is one.
func (db *DB) insertAlarmRow(ctx context.Context, r AlarmHistoryRow, fence *epochFence) (int, error) {
	if fence != nil {
		return db.insertAlarmBatch(ctx, []AlarmHistoryRow{r}, []int{0}, fence)
	}
	res, err := db.sql.ExecContext(ctx, db.q.insertAlarmHistory, alarmArgs(r)...)
	if err != nil {
		return 0, err
	}
	k, _ := res.RowsAffected()
	return int(k), nil
}

func alarmArgs(r AlarmHistoryRow) []any {
	return []any{r.ClusterID, r.Alarm, r.TransitionID, r.Kind, dbTime(r.EventTime), r.Severity,
		r.Message, r.Source, r.Value, r.UserName, r.Comment, r.Active, r.Acked, r.Confirmed, r.Enabled, string(r.Payload)}
}

// checkAlarmRow checks what every dialect's columns can hold, so that a
// row is refused the same way whichever database stores it. The database
// still has the last word (its constraints, its character set).
func checkAlarmRow(r AlarmHistoryRow) error {
	for _, k := range []struct{ what, v string }{
		{"ClusterID", r.ClusterID}, {"Alarm", r.Alarm}, {"TransitionID", r.TransitionID}, {"Kind", r.Kind},
	} {
		if err := checkKey("alarm history "+k.what, k.v); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		what, v string
		max     int
	}{
		{"Source", r.Source, maxKeyLen}, {"UserName", r.UserName, maxKeyLen},
		{"Message", r.Message, maxMediumLen}, {"Value", r.Value, maxMediumLen}, {"Comment", r.Comment, maxMediumLen},
	} {
		if n := utf8.RuneCountInString(f.v); n > f.max {
			return fmt.Errorf("%w: alarm history %s is %d characters, at most %d are stored", ErrInvalid, f.what, n, f.max)
		}
	}
	if r.EventTime.IsZero() || r.EventTime.UTC().Year() > 9999 {
		return fmt.Errorf("%w: alarm history EventTime %v: must be set and before the year 10000", ErrInvalid, r.EventTime)
	}
	return nil
}

// rowRefused reports whether err is the database refusing a row for what
// it holds (a constraint, a value out of range or too long, bytes it
// cannot store) rather than failing as a whole.
func (d *dialect) rowRefused(err error) bool {
	switch d {
	case postgresDialect:
		var pe *pgconn.PgError
		// Class 22: data exception (value too long, bad encoding, NUL in
		// text, out of range); class 23: integrity constraint violation.
		return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23"))
	case sqlServerDialect:
		var n int32
		var ve mssql.Error
		var pe *mssql.Error
		switch {
		case errors.As(err, &ve):
			n = ve.Number
		case errors.As(err, &pe):
			n = pe.Number
		default:
			return false
		}
		return slices.Contains(sqlServerRowErrors, n)
	default:
		var se *sqlite.Error
		if !errors.As(err, &se) {
			return false
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH:
			return true
		}
		return false
	}
}

// sqlServerRowErrors are the SQL Server error numbers of a refused row:
// 8152 and 2628 string or binary data would be truncated, 515 NULL into a
// NOT NULL column, 547 a CHECK or foreign key conflict, 2601 and 2627 a
// duplicate key, 8115 arithmetic overflow, 242 a date out of range, 245
// and 8114 a conversion failure.
var sqlServerRowErrors = []int32{8152, 2628, 515, 547, 2601, 2627, 8115, 242, 245, 8114}

// The bounds AlarmHistory puts in place of a zero from or to.
var (
	historyStart = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	historyEnd   = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// AlarmHistory returns up to limit (1 … MaxAlarmHistoryBatch) rows of the
// cluster between from and to (from before to), as OPC UA HistoryRead
// reads a time domain (Part 11 §6.5.2):
//
//   - oldest first: from ≤ EventTime < to;
//   - newestFirst: from < EventTime ≤ to, newest first (a domain read
//     backwards, from its later end).
//
// Rows of equal EventTime come in the order they were stored (reversed
// when newestFirst), the same at every call, so a reader can resume after
// the last row it got. A zero from or to leaves that end open.
func (db *DB) AlarmHistory(ctx context.Context, clusterID string, from, to time.Time, limit int, newestFirst bool) ([]AlarmHistoryRow, error) {
	if limit < 1 || limit > MaxAlarmHistoryBatch {
		return nil, fmt.Errorf("%w: alarm history limit %d: accepted values are 1 to %d", ErrInvalid, limit, MaxAlarmHistoryBatch)
	}
	if from.IsZero() {
		from = historyStart
	}
	if to.IsZero() {
		to = historyEnd
	}
	q := db.q.alarmHistoryAsc
	if newestFirst {
		q = db.q.alarmHistoryDesc
	}
	rows, err := db.sql.QueryContext(ctx, q, clusterID, dbTime(from), dbTime(to), limit)
	if err != nil {
		return nil, fmt.Errorf("configdb: read alarm history of cluster %q: %w", clusterID, err)
	}
	defer rows.Close()
	var out []AlarmHistoryRow
	for rows.Next() {
		var r AlarmHistoryRow
		var payload string
		if err := rows.Scan(&r.ID, &r.ClusterID, &r.Alarm, &r.TransitionID, &r.Kind, &r.EventTime, &r.Severity,
			&r.Message, &r.Source, &r.Value, &r.UserName, &r.Comment, &r.Active, &r.Acked, &r.Confirmed, &r.Enabled,
			&payload, &r.InsertedAt); err != nil {
			return nil, fmt.Errorf("configdb: read alarm history of cluster %q: %w", clusterID, err)
		}
		r.Payload = []byte(payload)
		r.EventTime, r.InsertedAt = r.EventTime.UTC(), r.InsertedAt.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("configdb: read alarm history of cluster %q: %w", clusterID, err)
	}
	return out, nil
}

// HasAlarmHistory reports which of keys (at most MaxAlarmHistoryBatch) the
// cluster's alarm_history holds: the map has true for each stored key and
// no entry for the others.
func (db *DB) HasAlarmHistory(ctx context.Context, clusterID string, keys []AlarmKey) (map[AlarmKey]bool, error) {
	if len(keys) > MaxAlarmHistoryBatch {
		return nil, fmt.Errorf("%w: %d alarm history keys: at most %d at a time", ErrInvalid, len(keys), MaxAlarmHistoryBatch)
	}
	found := make(map[AlarmKey]bool)
	for start := 0; start < len(keys); start += alarmKeyChunk {
		chunk := keys[start:min(start+alarmKeyChunk, len(keys))]
		args := make([]any, 0, 1+2*len(chunk))
		args = append(args, clusterID)
		for _, k := range chunk {
			args = append(args, k.Alarm, k.TransitionID)
		}
		if err := db.collectKeys(ctx, db.d.hasAlarmHistory(len(chunk)), args, found); err != nil {
			return nil, fmt.Errorf("configdb: look up alarm history of cluster %q: %w", clusterID, err)
		}
	}
	return found, nil
}

func (db *DB) collectKeys(ctx context.Context, query string, args []any, found map[AlarmKey]bool) error {
	rows, err := db.sql.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k AlarmKey
		if err := rows.Scan(&k.Alarm, &k.TransitionID); err != nil {
			return err
		}
		found[k] = true
	}
	return rows.Err()
}
