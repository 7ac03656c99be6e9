package localdb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newPath is a fresh file name in the test's temporary directory.
func newPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), DefaultPath)
}

// openT opens path and closes it when the test ends.
func openT(t testing.TB, path string, opts ...Option) *DB {
	t.Helper()
	db, err := Open(ctxT(t), path, nil, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// rawT opens the file with a plain connection, beside the package's own,
// for looking at it and damaging it the way an operator's sqlite3 shell or
// a bad disk would.
func rawT(t testing.TB, path string) *sql.DB {
	t.Helper()
	r, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func execT(t testing.TB, db *sql.DB, stmt string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(ctxT(t), stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// docOf is a deterministic, incompressible document of n bytes; seed tells
// versions apart.
func docOf(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func saveT(t testing.TB, db *DB, cluster string, version int64, doc []byte) {
	t.Helper()
	if err := db.SaveArtifact(ctxT(t), cluster, version, doc); err != nil {
		t.Fatalf("SaveArtifact(%s, %d, %d bytes): %v", cluster, version, len(doc), err)
	}
}

// loadT loads and checks the artifact against want.
func loadT(t testing.TB, db *DB, cluster string, version int64, want []byte) Artifact {
	t.Helper()
	a, err := db.LoadArtifact(ctxT(t), cluster)
	if err != nil {
		t.Fatalf("LoadArtifact(%s): %v", cluster, err)
	}
	if a.Version != version || !bytes.Equal(a.Doc, want) {
		t.Fatalf("LoadArtifact(%s) = version %d, %d bytes; want version %d, %d bytes (equal: %v)",
			cluster, a.Version, len(a.Doc), version, len(want), bytes.Equal(a.Doc, want))
	}
	return a
}

// wantErr fails unless err wraps target (nil: any error) and its text holds
// every one of parts.
func wantErr(t testing.TB, err, target error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one wrapping %v with %q", target, parts)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("error %q does not wrap %q", err, target)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not say %q", err, p)
		}
	}
}
