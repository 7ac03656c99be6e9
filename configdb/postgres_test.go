package configdb

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

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
	waitFor(t, 10*time.Second, func() error { err, _ := ping(2 * time.Second); return err })
}

// waitFor polls f until it returns nil or total has passed.
func waitFor(t *testing.T, total time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", total, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
