package configdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/pg"
)

// postgresOpener returns an opener over one real PostgreSQL server: each
// test gets its own database, shared by every handle that test opens.
func postgresOpener(srv *pg.Server) opener {
	var mu sync.Mutex
	dsns := map[*testing.T]string{}
	return func(t *testing.T, clock clockwork.Clock) *DB {
		t.Helper()
		mu.Lock()
		dsn, ok := dsns[t]
		if !ok {
			dsn = srv.CreateDatabase(fmt.Sprintf("t%d", len(dsns)+1))
			dsns[t] = dsn
		}
		mu.Unlock()
		return openT(t, ProviderPostgres, dsn, clock)
	}
}

func TestPostgres(t *testing.T) {
	srv := pg.Start(t)
	runStoreSuite(t, postgresOpener(srv))
}

// TestPostgresPingFollowsTheServer is the probe's contract on a real
// networked database: Ping fails while the server is down or hung, never
// outlives its deadline, and succeeds again on the same handle once the
// server is back.
func TestPostgresPingFollowsTheServer(t *testing.T) {
	srv := pg.Start(t)
	db := migrated(t, openT(t, ProviderPostgres, srv.DSN(), nil))
	ping := func(d time.Duration) (error, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		start := time.Now()
		err := db.Ping(ctx)
		return err, time.Since(start)
	}
	if err, _ := ping(2 * time.Second); err != nil {
		t.Fatalf("Ping on a running server: %v", err)
	}

	srv.Stop()
	err, took := ping(2 * time.Second)
	if err == nil {
		t.Fatal("Ping succeeded with the server stopped")
	}
	if !strings.Contains(err.Error(), "postgres: SELECT 1") {
		t.Fatalf("Ping error %q does not name the provider and the probe query", err)
	}
	t.Logf("Ping with the server stopped failed after %v: %v", took, err)

	srv.Start()
	// The pool held a connection to the stopped server: the first Ping after
	// the restart must not trip over it.
	if err, _ := ping(2 * time.Second); err != nil {
		t.Fatalf("first Ping after the restart: %v", err)
	}

	srv.Freeze()
	const deadline = 500 * time.Millisecond
	err, took = ping(deadline)
	srv.Thaw()
	if err == nil {
		t.Fatal("Ping succeeded against a frozen server")
	}
	if took > deadline+time.Second {
		t.Fatalf("Ping against a frozen server took %v, deadline %v", took, deadline)
	}
	t.Logf("Ping against a frozen server returned after %v: %v", took, err)
	poll.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error { err, _ := ping(2 * time.Second); return err })
}

// TestPostgresAlarmHistoryRefusalAndOutage: PostgreSQL refuses a NUL byte
// in text — that row alone is refused, the others of the batch stored —
// while a stopped server fails the whole call, which then succeeds on the
// same handle once the server is back.
func TestPostgresAlarmHistoryRefusalAndOutage(t *testing.T) {
	srv := pg.Start(t)
	db := migrated(t, openT(t, ProviderPostgres, srv.DSN(), nil))
	rows := []AlarmHistoryRow{historyRow("site-a", 0), historyRow("site-a", 1), historyRow("site-a", 2)}
	rows[1].Message = "bad \x00 byte"
	n, err := db.InsertAlarmHistory(ctxT(t), rows)
	var re *RowsRefusedError
	if !errors.As(err, &re) || len(re.Rows) != 1 || re.Rows[0].Index != 1 || n != 2 {
		t.Fatalf("a NUL byte: inserted %d, %v; want 2 and row 1 refused", n, err)
	}
	if !strings.Contains(re.Rows[0].Err.Error(), "postgres refuses the row") {
		t.Fatalf("refusal %v does not come from PostgreSQL", re.Rows[0].Err)
	}
	t.Logf("refused: %v", err)

	srv.Stop()
	more := []AlarmHistoryRow{historyRow("site-a", 3)}
	_, err = db.InsertAlarmHistory(ctxT(t), more)
	if err == nil || errors.Is(err, ErrRowsRefused) {
		t.Fatalf("insert with the server stopped: %v, want a failure that is not ErrRowsRefused", err)
	}
	t.Logf("server stopped: %v", err)
	srv.Start()
	poll.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error { _, err := db.InsertAlarmHistory(ctxT(t), more); return err })
	got := transitionIDs(readHistoryT(t, db, "site-a", time.Time{}, time.Time{}, 10, false))
	if want := []string{"tr-0000", "tr-0002", "tr-0003"}; !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
}

// TestWithoutAlarmHistoryKey: the test-only mutation stores a row twice
// where the key stores it once, and is refused off PostgreSQL.
func TestWithoutAlarmHistoryKey(t *testing.T) {
	srv := pg.Start(t)
	count := func(db *DB) int {
		var n int
		if err := db.sql.QueryRowContext(ctxT(t), "SELECT COUNT(*) FROM alarm_history").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	row := []AlarmHistoryRow{historyRow("site-a", 1)}
	keyed := migrated(t, openT(t, ProviderPostgres, srv.CreateDatabase("keyed"), nil))
	insertHistoryT(t, keyed, row)
	insertHistoryT(t, keyed, row)
	if n := count(keyed); n != 1 {
		t.Fatalf("with the key: %d rows, want 1", n)
	}
	mutated, err := Open(ctxT(t), ProviderPostgres, srv.CreateDatabase("mutated"), WithoutAlarmHistoryKey())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mutated.Close() })
	migrated(t, mutated)
	insertHistoryT(t, mutated, row)
	insertHistoryT(t, mutated, row)
	if n := count(mutated); n != 2 {
		t.Fatalf("without the key: %d rows, want 2", n)
	}
	if _, err := Open(ctxT(t), ProviderSQLite, "file:"+t.TempDir()+"/x.db", WithoutAlarmHistoryKey()); err == nil || !strings.Contains(err.Error(), "only be dropped on postgres") {
		t.Fatalf("sqlite: %v", err)
	}
}
