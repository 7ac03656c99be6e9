package configdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// sqliteOpener returns an opener whose handles share one database file in
// the test's temporary directory.
func sqliteOpener() opener {
	var mu sync.Mutex
	files := map[*testing.T]string{}
	return func(t *testing.T, clock clockwork.Clock) *DB {
		t.Helper()
		mu.Lock()
		f, ok := files[t]
		if !ok {
			f = filepath.Join(t.TempDir(), "otopcua.db")
			files[t] = f
		}
		mu.Unlock()
		return openT(t, ProviderSQLite, "file:"+f, clock)
	}
}

func openT(t *testing.T, provider, cs string, clock clockwork.Clock) *DB {
	t.Helper()
	var opts []Option
	if clock != nil {
		opts = append(opts, WithClock(clock))
	}
	db, err := Open(ctxT(t), provider, cs, opts...)
	if err != nil {
		t.Fatalf("Open(%s, %s): %v", provider, cs, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestSQLite(t *testing.T) { runStoreSuite(t, sqliteOpener()) }

func pragma(t *testing.T, db *DB, name string) string {
	t.Helper()
	var v string
	if err := db.sql.QueryRowContext(ctxT(t), "PRAGMA "+name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestSQLiteDefaults(t *testing.T) {
	db := openT(t, ProviderSQLite, "file:"+filepath.Join(t.TempDir(), "otopcua.db"), nil)
	// Every pooled connection must carry the settings, not just the first.
	ctx := ctxT(t)
	c1, err := db.sql.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := db.sql.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for _, c := range []*sql.Conn{c1, c2} {
		for name, want := range map[string]string{"journal_mode": "wal", "busy_timeout": "5000", "foreign_keys": "1"} {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+name).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("PRAGMA %s = %s, want %s", name, got, want)
			}
		}
	}
	if db.Provider() != ProviderSQLite {
		t.Fatalf("Provider() = %q", db.Provider())
	}
}

func TestSQLiteConnectionStringSettingsWin(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, "SQLite", "file:"+filepath.Join(dir, "a.db")+"?_journal_mode=DELETE&_pragma=busy_timeout(750)", nil)
	if got := pragma(t, db, "journal_mode"); got != "delete" {
		t.Errorf("journal_mode = %s, want delete (set by the connection string)", got)
	}
	if got := pragma(t, db, "busy_timeout"); got != "750" {
		t.Errorf("busy_timeout = %s, want 750 (set by the connection string)", got)
	}
	if got := pragma(t, db, "foreign_keys"); got != "1" {
		t.Errorf("foreign_keys = %s, want the default 1", got)
	}
	// A plain path works too.
	plain := openT(t, ProviderSQLite, filepath.Join(dir, "b.db"), nil)
	if got := pragma(t, plain, "journal_mode"); got != "wal" {
		t.Errorf("plain path: journal_mode = %s, want wal", got)
	}
}

func TestSQLiteDSN(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		memory   bool
	}{
		{"file:otopcua.db", "file:otopcua.db?_busy_timeout=5000&_journal_mode=WAL&_foreign_keys=1&_txlock=immediate", false},
		{"otopcua.db?", "otopcua.db?_busy_timeout=5000&_journal_mode=WAL&_foreign_keys=1&_txlock=immediate", false},
		{"file:x.db?_fk=0&_timeout=10&_journal=TRUNCATE&_txlock=exclusive", "file:x.db?_fk=0&_timeout=10&_journal=TRUNCATE&_txlock=exclusive", false},
		{"file:x.db?_pragma=journal_mode(delete)", "file:x.db?_pragma=journal_mode(delete)&_busy_timeout=5000&_foreign_keys=1&_txlock=immediate", false},
		{":memory:", ":memory:?_busy_timeout=5000&_journal_mode=WAL&_foreign_keys=1&_txlock=immediate", true},
		{"file:mem1?mode=memory&cache=shared", "file:mem1?mode=memory&cache=shared&_busy_timeout=5000&_journal_mode=WAL&_foreign_keys=1&_txlock=immediate", true},
	} {
		got, memory, err := sqliteDSN(tc.in)
		if err != nil || got != tc.want || memory != tc.memory {
			t.Errorf("sqliteDSN(%q) = %q, %v, %v\n want %q, %v", tc.in, got, memory, err, tc.want, tc.memory)
		}
	}
	for _, bad := range []string{"file:x.db?_txlock=deferred", "file:x.db?%zz"} {
		if _, _, err := sqliteDSN(bad); !errors.Is(err, ErrBadConnectionString) {
			t.Errorf("sqliteDSN(%q) = %v, want ErrBadConnectionString", bad, err)
		}
	}
}

func TestSQLiteInMemory(t *testing.T) {
	db := migrated(t, openT(t, ProviderSQLite, ":memory:", nil))
	ctx := ctxT(t)
	if err := db.UpsertCluster(ctx, Cluster{ID: "c", Name: "c"}); err != nil {
		t.Fatal(err)
	}
	// One connection only, so a second query sees the first one's table.
	if err := db.UpsertClusterNode(ctx, ClusterNode{ClusterID: "c", NodeID: "h:1", ApplicationURI: "urn:h"}); err != nil {
		t.Fatal(err)
	}
	if nodes, err := db.ListClusterNodes(ctx, "c"); err != nil || len(nodes) != 1 {
		t.Fatalf("ListClusterNodes = %v, %v", nodes, err)
	}
}

func TestSQLiteOpenFailsOnAnUnusablePath(t *testing.T) {
	_, err := Open(ctxT(t), ProviderSQLite, "file:"+filepath.Join(t.TempDir(), "missing-dir", "otopcua.db"))
	if err == nil || !strings.Contains(err.Error(), "missing-dir") {
		t.Fatalf("Open in a missing directory = %v, want an error naming the path", err)
	}
}

// Both nodes of a pair start at once on one new SQLite file: every Open
// and Migrate succeeds. Switching a new file to WAL takes a lock SQLite
// does not wait for, so without Open's retry one of two processes gets
// "database is locked" now and then. The openers are separate processes
// (this test binary again): POSIX file locks do not conflict within one
// process.
func TestSQLiteConcurrentFirstOpenAcrossProcesses(t *testing.T) {
	if path := os.Getenv("OTOPCUA_CONFIGDB_OPEN_HELPER"); path != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		db, err := Open(ctx, "sqlite", "file:"+path)
		if err == nil {
			err = db.Migrate(ctx)
			db.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const rounds, procs = 20, 4
	for round := range rounds {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("config-%d.db", round))
		var cmds []*exec.Cmd
		var outs []*strings.Builder
		for range procs {
			cmd := exec.Command(exe, "-test.run=^TestSQLiteConcurrentFirstOpenAcrossProcesses$")
			cmd.Env = append(os.Environ(), "OTOPCUA_CONFIGDB_OPEN_HELPER="+path)
			out := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Stagger the starts so that openers meet migrations under way.
			time.Sleep(time.Duration(round%5) * 3 * time.Millisecond)
			cmds, outs = append(cmds, cmd), append(outs, out)
		}
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("round %d: opener %d: %v: %s", round, i, err, outs[i])
			}
		}
	}
}
