package configdb

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	mssql "github.com/microsoft/go-mssqldb"
)

// historyRow is a full row of cluster at t0 + i seconds.
func historyRow(cluster string, i int) AlarmHistoryRow {
	return AlarmHistoryRow{
		ClusterID: cluster, Alarm: fmt.Sprintf("Alarm%d", i%3), TransitionID: fmt.Sprintf("tr-%04d", i),
		Kind: "active", EventTime: t0.Add(time.Duration(i) * time.Second), Severity: 700,
		Message: "Temperature above 80 °C", Source: "press1/Temperature", Value: "81.5",
		UserName: "operator", Comment: fmt.Sprintf("comment %d", i),
		Active: true, Acked: i%2 == 0, Confirmed: false, Enabled: true,
		Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)),
	}
}

func insertHistoryT(t *testing.T, db *DB, rows []AlarmHistoryRow) int {
	t.Helper()
	n, err := db.InsertAlarmHistory(ctxT(t), rows)
	if err != nil {
		t.Fatalf("InsertAlarmHistory(%d rows): %v", len(rows), err)
	}
	return n
}

func readHistoryT(t *testing.T, db *DB, cluster string, from, to time.Time, limit int, newestFirst bool) []AlarmHistoryRow {
	t.Helper()
	rows, err := db.AlarmHistory(ctxT(t), cluster, from, to, limit, newestFirst)
	if err != nil {
		t.Fatalf("AlarmHistory: %v", err)
	}
	return rows
}

func transitionIDs(rows []AlarmHistoryRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.TransitionID
	}
	return out
}

// testAlarmHistoryOncePerKey: two nodes store the same transitions, one
// after the other and both at once; each key is one row, with the first
// writer's content, and the inserted counts add up to the rows.
func testAlarmHistoryOncePerKey(t *testing.T, open opener) {
	a, b := migrated(t, open(t, nil)), open(t, nil)
	var rows []AlarmHistoryRow
	for i := range 40 {
		rows = append(rows, historyRow("site-a", i))
	}
	if n := insertHistoryT(t, a, rows[:10]); n != 10 {
		t.Fatalf("first insert stored %d, want 10", n)
	}
	if n := insertHistoryT(t, b, rows[:10]); n != 0 {
		t.Fatalf("the same rows from another node stored %d, want 0", n)
	}
	// The rest from both nodes at once.
	var wg sync.WaitGroup
	counts := make([]int, 2)
	errs := make([]error, 2)
	for i, db := range []*DB{a, b} {
		wg.Go(func() { counts[i], errs[i] = db.InsertAlarmHistory(ctxT(t), rows[5:]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if counts[0]+counts[1] != 30 {
		t.Fatalf("concurrent inserts stored %d + %d, want 30 together", counts[0], counts[1])
	}
	got := readHistoryT(t, a, "site-a", time.Time{}, time.Time{}, 1000, false)
	if len(got) != 40 {
		t.Fatalf("alarm_history holds %d rows, want 40", len(got))
	}
	for i, r := range got {
		want := rows[i]
		want.ID, want.InsertedAt = r.ID, r.InsertedAt
		want.EventTime = dbTime(want.EventTime)
		if !equalRow(r, want) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, r, want)
		}
		if r.ID == 0 || r.InsertedAt.IsZero() || r.InsertedAt.Location() != time.UTC {
			t.Fatalf("row %d: id %d, inserted_at %v: want both set, UTC", i, r.ID, r.InsertedAt)
		}
	}
}

func equalRow(a, b AlarmHistoryRow) bool {
	return string(a.Payload) == string(b.Payload) && a.EventTime.Equal(b.EventTime) && a.InsertedAt.Equal(b.InsertedAt) &&
		rowFields(a) == rowFields(b)
}

func rowFields(r AlarmHistoryRow) string {
	return fmt.Sprintf("%d %q %q %q %q %d %q %q %q %q %q %v %v %v %v", r.ID, r.ClusterID, r.Alarm, r.TransitionID, r.Kind,
		r.Severity, r.Message, r.Source, r.Value, r.UserName, r.Comment, r.Active, r.Acked, r.Confirmed, r.Enabled)
}

// testAlarmHistoryRefusedRows: rows the checks or the database refuse are
// named by index; every other row of the batch is stored, and storing the
// batch again stores nothing new and refuses the same rows.
func testAlarmHistoryRefusedRows(t *testing.T, db *DB) {
	migrated(t, db)
	rows := make([]AlarmHistoryRow, 6)
	for i := range rows {
		rows[i] = historyRow("site-a", i)
	}
	rows[1].Message = strings.Repeat("x", maxMediumLen+1) // the checks
	rows[2].Severity = 5000                               // the table's CHECK: the database itself
	rows[4].Alarm = ""                                    // the checks
	for pass, wantInserted := range []int{3, 0} {
		n, err := db.InsertAlarmHistory(ctxT(t), rows)
		var re *RowsRefusedError
		if !errors.As(err, &re) || !errors.Is(err, ErrRowsRefused) {
			t.Fatalf("pass %d: err = %v, want a *RowsRefusedError", pass, err)
		}
		if n != wantInserted {
			t.Fatalf("pass %d: inserted %d, want %d", pass, n, wantInserted)
		}
		var idx []int
		for _, r := range re.Rows {
			idx = append(idx, r.Index)
		}
		if !slices.Equal(idx, []int{1, 2, 4}) {
			t.Fatalf("pass %d: refused rows %v, want 1 2 4: %v", pass, idx, err)
		}
		if !errors.Is(re.Rows[0].Err, ErrInvalid) || !strings.Contains(re.Rows[0].Err.Error(), "Message is 4001 characters") {
			t.Fatalf("the long message's refusal: %v", re.Rows[0].Err)
		}
		if errors.Is(re.Rows[1].Err, ErrInvalid) || !strings.Contains(re.Rows[1].Err.Error(), db.Provider()+" refuses the row") {
			t.Fatalf("the severity's refusal does not come from the database: %v", re.Rows[1].Err)
		}
		if re.Rows[1].Key != rows[2].Key() {
			t.Fatalf("refused key %+v, want %+v", re.Rows[1].Key, rows[2].Key())
		}
		t.Logf("pass %d: %v", pass, err)
	}
	got := transitionIDs(readHistoryT(t, db, "site-a", time.Time{}, time.Time{}, 100, false))
	if !slices.Equal(got, []string{"tr-0000", "tr-0003", "tr-0005"}) {
		t.Fatalf("stored %v, want tr-0000 tr-0003 tr-0005", got)
	}
	if _, err := db.InsertAlarmHistory(ctxT(t), make([]AlarmHistoryRow, MaxAlarmHistoryBatch+1)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a batch above the limit: %v, want ErrInvalid", err)
	}
	if n, err := db.InsertAlarmHistory(ctxT(t), nil); n != 0 || err != nil {
		t.Fatalf("an empty batch: %d, %v", n, err)
	}
}

// testAlarmHistoryRead: [from, to), both orders, the limit, open ends and
// other clusters.
func testAlarmHistoryRead(t *testing.T, db *DB) {
	migrated(t, db)
	var rows []AlarmHistoryRow
	for i := range 10 {
		rows = append(rows, historyRow("site-a", i), historyRow("site-b", i))
	}
	insertHistoryT(t, db, rows)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	for _, tc := range []struct {
		name     string
		from, to time.Time
		limit    int
		newest   bool
		want     []string
	}{
		{"range", at(2), at(5), 100, false, []string{"tr-0002", "tr-0003", "tr-0004"}},
		{"range newest first: (from, to]", at(2), at(5), 100, true, []string{"tr-0005", "tr-0004", "tr-0003"}},
		{"limit", at(2), at(9), 2, false, []string{"tr-0002", "tr-0003"}},
		{"limit newest first", at(2), at(9), 2, true, []string{"tr-0009", "tr-0008"}},
		{"one instant", at(4), at(4).Add(time.Microsecond), 100, false, []string{"tr-0004"}},
		{"open start", time.Time{}, at(2), 100, false, []string{"tr-0000", "tr-0001"}},
		{"open end", at(8), time.Time{}, 100, false, []string{"tr-0008", "tr-0009"}},
		{"microseconds count", at(3).Add(time.Microsecond), at(4).Add(time.Microsecond), 100, false, []string{"tr-0004"}},
		{"empty", at(20), at(30), 100, false, nil},
	} {
		got := transitionIDs(readHistoryT(t, db, "site-a", tc.from, tc.to, tc.limit, tc.newest))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := readHistoryT(t, db, "site-c", time.Time{}, time.Time{}, 10, false); len(got) != 0 {
		t.Errorf("an unknown cluster has %d rows", len(got))
	}
	for _, limit := range []int{0, MaxAlarmHistoryBatch + 1} {
		if _, err := db.AlarmHistory(ctxT(t), "site-a", time.Time{}, time.Time{}, limit, false); !errors.Is(err, ErrInvalid) {
			t.Errorf("limit %d: %v, want ErrInvalid", limit, err)
		}
	}
}

// testAlarmHistoryKeys: more keys than one statement takes, some stored,
// some not, some of another cluster.
func testAlarmHistoryKeys(t *testing.T, db *DB) {
	migrated(t, db)
	var rows []AlarmHistoryRow
	for i := range 450 {
		rows = append(rows, historyRow("site-a", i))
	}
	rows = append(rows, historyRow("site-b", 460))
	insertHistoryT(t, db, rows)
	var keys []AlarmKey
	for i := range 470 { // 0 … 449 stored, 450 … 469 not (460 only in site-b)
		keys = append(keys, historyRow("site-a", i).Key())
	}
	got, err := db.HasAlarmHistory(ctxT(t), "site-a", keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 450 {
		t.Fatalf("found %d keys, want 450", len(got))
	}
	for i, k := range keys {
		if got[k] != (i < 450) {
			t.Fatalf("key %d %+v: found %v", i, k, got[k])
		}
	}
	if got, err := db.HasAlarmHistory(ctxT(t), "site-a", nil); err != nil || len(got) != 0 {
		t.Fatalf("no keys: %v, %v", got, err)
	}
	if _, err := db.HasAlarmHistory(ctxT(t), "site-a", make([]AlarmKey, MaxAlarmHistoryBatch+1)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("too many keys: %v, want ErrInvalid", err)
	}
}

// TestRowRefusedClassifies: only errors about the row itself count as a
// refused row; a lost connection or a timeout is the database failing.
func TestRowRefusedClassifies(t *testing.T) {
	for _, tc := range []struct {
		d    *dialect
		err  error
		want bool
	}{
		{postgresDialect, &pgconn.PgError{Code: "22001"}, true}, // value too long
		{postgresDialect, &pgconn.PgError{Code: "22021"}, true}, // NUL / bad encoding
		{postgresDialect, fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "23514"}), true},
		{postgresDialect, &pgconn.PgError{Code: "57014"}, false}, // statement cancelled
		{postgresDialect, &pgconn.PgError{Code: "08006"}, false}, // connection failure
		{postgresDialect, errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), false},
		{sqlServerDialect, mssql.Error{Number: 8152}, true},
		{sqlServerDialect, fmt.Errorf("x: %w", mssql.Error{Number: 2628}), true},
		{sqlServerDialect, &mssql.Error{Number: 547}, true},
		{sqlServerDialect, mssql.Error{Number: 1205}, false}, // deadlock victim: retry
		{sqlServerDialect, mssql.Error{Number: 4060}, false}, // cannot open database
		{sqlServerDialect, errors.New("i/o timeout"), false},
		{sqliteDialect, errors.New("database is locked"), false},
	} {
		if got := tc.d.rowRefused(tc.err); got != tc.want {
			t.Errorf("%s: rowRefused(%v) = %v, want %v", tc.d.provider, tc.err, got, tc.want)
		}
	}
}

// TestAlarmHistoryClosedDB: a database that cannot be used is a failure
// of the whole call, not a refused row.
func TestAlarmHistoryClosedDB(t *testing.T) {
	db := migrated(t, sqliteOpener()(t, nil))
	_ = db.Close()
	_, err := db.InsertAlarmHistory(ctxT(t), []AlarmHistoryRow{historyRow("site-a", 1)})
	if err == nil || errors.Is(err, ErrRowsRefused) {
		t.Fatalf("insert into a closed database: %v, want a failure that is not ErrRowsRefused", err)
	}
}
