package localdb

import (
	"bytes"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/otopcua/otopcua/configdb"
)

func TestOpenCreatesTheFileAndSchema(t *testing.T) {
	path := newPath(t)
	var logs strings.Builder
	db, err := Open(ctxT(t), path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file was not created: %v", err)
	}
	if !strings.Contains(logs.String(), "created the schema") || !strings.Contains(logs.String(), path) {
		t.Errorf("log %q does not tell that the schema was created at %s", logs.String(), path)
	}
	// Every pooled connection carries the settings, not just the first.
	ctx := ctxT(t)
	var conns []*sql.Conn
	for range 2 {
		c, err := db.sql.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for _, c := range conns {
		for name, want := range map[string]string{"journal_mode": "wal", "busy_timeout": "5000", "application_id": "1869900900"} {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+name).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("PRAGMA %s = %s, want %s", name, got, want)
			}
		}
	}
	var version int
	var name string
	if err := db.sql.QueryRowContext(ctx, "SELECT version, name FROM schema_version ORDER BY version DESC LIMIT 1").Scan(&version, &name); err != nil {
		t.Fatal(err)
	}
	if version != SchemaVersion || version != migrations[len(migrations)-1].version {
		t.Errorf("schema_version = %d (%s), want %d", version, name, SchemaVersion)
	}
}

func TestReopenKeepsTheArtifactAndDoesNotMigrateAgain(t *testing.T) {
	path := newPath(t)
	db, err := Open(ctxT(t), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := docOf(1, 200_000)
	saveT(t, db, "site-a", 4, doc)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	db2, err := Open(ctxT(t), path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	loadT(t, db2, "site-a", 4, doc)
	var n int
	if err := db2.sql.QueryRowContext(ctxT(t), "SELECT COUNT(*) FROM schema_version").Scan(&n); err != nil || n != len(migrations) {
		t.Fatalf("schema_version rows = %d, %v; want %d", n, err, len(migrations))
	}
	if logs.Len() != 0 {
		t.Errorf("reopening a current file logged %q, want nothing", logs.String())
	}
}

func TestOpenOddFileNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a b.db", "what?.db", "hash#1.db", "100%.db", "é.db"} {
		path := filepath.Join(dir, name)
		db := openT(t, path)
		saveT(t, db, "c", 1, []byte(name))
		loadT(t, db, "c", 1, []byte(name))
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%q: the file is not at its path: %v", name, err)
		}
	}
	// Nothing else was created beside them (a mangled name would be).
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		base := strings.TrimSuffix(strings.TrimSuffix(e.Name(), "-wal"), "-shm")
		if !strings.HasSuffix(base, ".db") {
			t.Errorf("unexpected file %q", e.Name())
		}
	}
}

// Relative paths are taken from the working directory, as LocalDb:Path's
// default is.
func TestOpenRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	db := openT(t, DefaultPath)
	if want := filepath.Join(dir, DefaultPath); db.Path() != want {
		t.Fatalf("Path() = %s, want %s", db.Path(), want)
	}
}

// Every unusable path gives an error that names it and says what to do;
// nothing panics and nothing is written to a file that is not ours.
func TestOpenRefusesUnusablePaths(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := write("garbage.db", bytes.Repeat([]byte("this is not a database\n"), 200))
	short := write("short.db", []byte("SQL"))
	headerThenJunk := write("header-junk.db", append([]byte("SQLite format 3\x00"), docOf(1, 8192)...))
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		target     error
		says       []string
	}{
		{"empty", "", nil, []string{"LocalDb:Path is empty", DefaultPath}},
		{"garbage file", garbage, ErrNotDatabase, []string{garbage, "does not begin with the SQLite header", "move the file aside"}},
		{"3-byte file", short, ErrNotDatabase, []string{short, "SQLite header"}},
		{"SQLite header then junk", headerThenJunk, ErrNotDatabase, []string{headerThenJunk, "move the file aside"}},
		{"directory", filepath.Join(dir, "adir"), nil, []string{filepath.Join(dir, "adir") + " is a directory",
			"set LocalDb:Path to a file, such as " + filepath.Join(dir, "adir", DefaultPath)}},
		{"missing directory", filepath.Join(dir, "missing", "x.db"), nil, []string{filepath.Join(dir, "missing", "x.db"), "create the directory"}},
		{"file as directory", filepath.Join(garbage, "x.db"), nil, []string{filepath.Join(garbage, "x.db"), "not a directory"}},
		{"device", "/dev/null", nil, []string{"/dev/null is not a regular file but a device"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []byte
			if fi, err := os.Stat(tc.path); err == nil && fi.Mode().IsRegular() {
				before, _ = os.ReadFile(tc.path)
			}
			db, err := Open(ctxT(t), tc.path, nil)
			if err == nil {
				db.Close()
			}
			t.Log(err)
			wantErr(t, err, tc.target, tc.says...)
			if before != nil {
				if after, _ := os.ReadFile(tc.path); !bytes.Equal(before, after) {
					t.Errorf("Open changed %s", tc.path)
				}
			}
		})
	}
}

// LocalDb:Path pointing at the Config DB's SQLite file (an easy slip: both
// are SQLite files beside each other) is refused, and the Config DB is left
// alone.
func TestOpenRefusesTheConfigDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "otopcua.db")
	cdb, err := configdb.Open(ctxT(t), configdb.ProviderSQLite, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if err := cdb.Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := cdb.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctxT(t), path, nil)
	wantErr(t, err, ErrNotDatabase, path, "is LocalDb:Path pointing at the Config DB", "clusters")
	var n int
	if err := rawT(t, path).QueryRowContext(ctxT(t), "SELECT COUNT(*) FROM sqlite_schema WHERE name LIKE 'deployment\\_%' ESCAPE '\\'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the Config DB file gained %d deployment_* tables (%v)", n, err)
	}
}

func TestOpenRefusesAnotherApplicationsFile(t *testing.T) {
	path := newPath(t)
	execT(t, rawT(t, path), "PRAGMA application_id = 42")
	_, err := Open(ctxT(t), path, nil)
	wantErr(t, err, ErrNotDatabase, path, "application_id is 0x2a")
}

func TestOpenRefusesANewerSchema(t *testing.T) {
	path := newPath(t)
	db := openT(t, path)
	saveT(t, db, "site-a", 1, []byte("{}"))
	execT(t, rawT(t, path), "INSERT INTO schema_version VALUES (?, 'from the future', '2030-01-01T00:00:00.000000Z')", SchemaVersion+1)
	_, err := Open(ctxT(t), path, nil)
	wantErr(t, err, ErrSchemaNewer, path, fmt.Sprintf("schema version %d, this otopcua knows up to %d", SchemaVersion+1, SchemaVersion),
		"run the newer otopcua")
}

// The path a later schema version takes: a file of this version gains a
// step, keeps its artifact, and a failed step changes nothing.
func TestSchemaUpgrade(t *testing.T) {
	path := newPath(t)
	db := openT(t, path)
	doc := docOf(1, 70_000)
	saveT(t, db, "site-a", 1, doc)
	var logs strings.Builder
	db.log = slog.New(slog.NewTextHandler(&logs, nil))
	tables := func() string {
		var names string
		if err := db.sql.QueryRowContext(ctxT(t), "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name)").Scan(&names); err != nil {
			t.Fatal(err)
		}
		return names
	}
	version := func() int {
		var v int
		if err := db.sql.QueryRowContext(ctxT(t), "SELECT MAX(version) FROM schema_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	cur, later := SchemaVersion, SchemaVersion+1
	broken := append(slices.Clone(migrations), migration{version: later, name: "a broken step", stmts: []string{
		"CREATE TABLE half_done (x INTEGER)", "CREATE TABLE nope (",
	}})
	wantErr(t, db.migrate(ctxT(t), broken), nil, fmt.Sprintf("apply schema version %d (a broken step)", later), path)
	if v, names := version(), tables(); v != cur || strings.Contains(names, "half_done") {
		t.Fatalf("after a failed step: version %d, tables %s; want version %d and no half_done", v, names, cur)
	}

	next := append(slices.Clone(migrations), migration{version: later, name: "a later step", stmts: []string{"CREATE TABLE later (x INTEGER) STRICT"}})
	if err := db.migrate(ctxT(t), next); err != nil {
		t.Fatal(err)
	}
	if v, names := version(), tables(); v != later || !strings.Contains(names, "later") {
		t.Fatalf("after the upgrade: version %d, tables %s; want version %d with table later", v, names, later)
	}
	if !strings.Contains(logs.String(), "upgraded the schema") || !strings.Contains(logs.String(), fmt.Sprintf("from=%d", cur)) {
		t.Errorf("log %q does not tell of the upgrade from version %d", logs.String(), cur)
	}
	loadT(t, db, "site-a", 1, doc)
	// This build, which knows only up to cur, now refuses the file.
	_, err := Open(ctxT(t), path, nil)
	wantErr(t, err, ErrSchemaNewer, fmt.Sprintf("schema version %d, this otopcua knows up to %d", later, cur))
}

// An empty file (touch otopcua-local.db) is a new database.
func TestOpenEmptyFile(t *testing.T) {
	path := newPath(t)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db := openT(t, path)
	saveT(t, db, "c", 1, []byte("{}"))
	loadT(t, db, "c", 1, []byte("{}"))
}

// Two *DB on one file, as when a restarted node opens the file before the
// old process has closed it: what one saves the other loads, and saves
// from both at once queue on the lock instead of failing.
func TestTwoHandlesOnOneFile(t *testing.T) {
	path := newPath(t)
	a, b := openT(t, path), openT(t, path)
	v1 := docOf(1, 300_000)
	saveT(t, a, "site-a", 1, v1)
	loadT(t, b, "site-a", 1, v1)
	v2 := docOf(2, 100)
	saveT(t, b, "site-a", 2, v2)
	loadT(t, a, "site-a", 2, v2)

	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i, db := range []*DB{a, b} {
		wg.Go(func() {
			for v := range 20 {
				version := int64(10 + 2*v + i)
				errs <- db.SaveArtifact(ctxT(t), "site-a", version, docOf(uint64(version), 3*ChunkSize))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent SaveArtifact: %v", err)
		}
	}
	got, err := a.LoadArtifact(ctxT(t), "site-a")
	if err != nil {
		t.Fatal(err)
	}
	loadT(t, b, "site-a", got.Version, docOf(uint64(got.Version), 3*ChunkSize))
	if cv := chunkVersions(t, a, "site-a"); len(cv) != 1 || cv[got.Version] != 3 {
		t.Fatalf("chunks after the concurrent saves: %v, want only version %d's 3", cv, got.Version)
	}
}
