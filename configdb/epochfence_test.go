package configdb

import (
	"errors"
	"strings"
	"testing"
)

// testAlarmHistoryEpochFence: a drain stamped with an epoch older than the
// newest stored for its cluster stores nothing and says so; the newer
// Primary's drains, the same Primary's next ones and another cluster's are
// stored; epoch 0 is not fenced. Two handles stand for two nodes.
func testAlarmHistoryEpochFence(t *testing.T, open opener) {
	stale, fresh := migrated(t, open(t, nil)), open(t, nil)
	ctx := ctxT(t)
	drain := func(db *DB, epoch uint64, rows ...AlarmHistoryRow) (int, error) {
		t.Helper()
		return db.DrainAlarmHistory(ctx, epoch, rows)
	}
	stored := func(i int) bool {
		t.Helper()
		r := historyRow("site", i)
		found, err := fresh.HasAlarmHistory(ctx, "site", []AlarmKey{r.Key()})
		if err != nil {
			t.Fatal(err)
		}
		return found[r.Key()]
	}
	if n, err := drain(stale, 5, historyRow("site", 1), historyRow("site", 2)); err != nil || n != 2 {
		t.Fatalf("first Primary's drain: %d, %v", n, err)
	}
	if n, err := drain(fresh, 7, historyRow("site", 3)); err != nil || n != 1 {
		t.Fatalf("newer Primary's drain: %d, %v", n, err)
	}
	if e, err := fresh.NewestEpoch(ctx, "site"); err != nil || e != 7 {
		t.Fatalf("newest epoch %d, %v; want 7", e, err)
	}
	// The replaced Primary drains again: refused, nothing stored.
	n, err := drain(stale, 5, historyRow("site", 4), historyRow("site", 5))
	var se *StaleEpochError
	if !errors.Is(err, ErrStaleEpoch) || !errors.As(err, &se) || n != 0 {
		t.Fatalf("stale drain: %d, %v; want a StaleEpochError", n, err)
	}
	if se.ClusterID != "site" || se.Epoch != 5 || se.Newest != 7 || se.Rows != 2 || !strings.Contains(se.Error(), "epoch 5") {
		t.Fatalf("stale drain error %+v: %v", se, se)
	}
	if stored(4) || stored(5) {
		t.Fatal("a stale drain stored rows")
	}
	if e, _ := fresh.NewestEpoch(ctx, "site"); e != 7 {
		t.Fatalf("a stale drain moved the newest epoch to %d", e)
	}
	// A row already stored is not a refusal by itself: the newer Primary
	// stores the same transitions (its own copy) and the next ones.
	if n, err := drain(fresh, 7, historyRow("site", 3), historyRow("site", 4), historyRow("site", 5)); err != nil || n != 2 {
		t.Fatalf("newer Primary's second drain: %d, %v; want 2 new rows", n, err)
	}
	// Another cluster has its own epoch; epoch 0 is not fenced.
	if n, err := drain(stale, 1, historyRow("other", 1)); err != nil || n != 1 {
		t.Fatalf("another cluster's drain: %d, %v", n, err)
	}
	if n, err := drain(stale, 0, historyRow("site", 6)); err != nil || n != 1 {
		t.Fatalf("unfenced drain: %d, %v", n, err)
	}
	if _, err := drain(stale, 9, historyRow("site", 7), historyRow("other", 8)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a drain of two clusters: %v, want ErrInvalid", err)
	}
	// A row the database refuses, behind a valid fence: the others are
	// stored one by one, each behind the fence.
	bad := historyRow("site", 9)
	bad.Severity = 5000 // the CHECK refuses it
	n, err = drain(fresh, 7, historyRow("site", 8), bad)
	if !errors.Is(err, ErrRowsRefused) || n != 1 || !stored(8) {
		t.Fatalf("refused row behind the fence: %d, %v", n, err)
	}
	// And behind a stale fence, nothing is stored, the bad row included.
	if n, err := drain(stale, 6, historyRow("site", 10), bad); !errors.Is(err, ErrStaleEpoch) || n != 0 || stored(10) {
		t.Fatalf("stale drain with a bad row: %d, %v", n, err)
	}
}

// TestSQLServerEpochFence checks the fence's T-SQL, which no SQL Server
// here runs: one MERGE under HOLDLOCK that updates the stored epoch only
// when the drain's is at least as new, and inserts the cluster's first.
func TestSQLServerEpochFence(t *testing.T) {
	q := buildQueries(sqlServerDialect)
	want := "MERGE cluster_epochs WITH (HOLDLOCK) AS t USING (SELECT @p1 AS cluster_id, @p2 AS epoch) AS s " +
		"ON t.cluster_id = s.cluster_id WHEN MATCHED AND t.epoch <= s.epoch THEN UPDATE SET epoch = s.epoch " +
		"WHEN NOT MATCHED THEN INSERT (cluster_id, epoch) VALUES (s.cluster_id, s.epoch);"
	if q.raiseEpoch != want {
		t.Fatalf("raiseEpoch = %q\nwant %q", q.raiseEpoch, want)
	}
	for _, d := range []*dialect{sqliteDialect, postgresDialect} {
		if got := buildQueries(d).raiseEpoch; !strings.HasSuffix(got, "WHERE cluster_epochs.epoch <= excluded.epoch") {
			t.Errorf("%s raiseEpoch is not conditional: %q", d.provider, got)
		}
	}
}
