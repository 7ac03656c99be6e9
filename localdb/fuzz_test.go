package localdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzOpenLoad writes arbitrary bytes as the LocalDb file, then opens it
// and loads the artifact: whatever the file holds, Open and LoadArtifact
// return (an error or a document whose hash the pointer vouches for) and
// never panic or hang. The seeds include a real file with an artifact, so
// the mutations reach SQLite's page parsing and the pointer checks.
//
//	go test -run '^$' -fuzz FuzzOpenLoad -fuzzminimizetime 1s ./localdb/
//
// (SQLite is large: minimizing each new input for the default 60 s stalls
// the run.)
func FuzzOpenLoad(f *testing.F) {
	valid := func(docs ...[]byte) []byte {
		path := filepath.Join(f.TempDir(), "seed.db")
		db, err := Open(context.Background(), path, nil)
		if err != nil {
			f.Fatal(err)
		}
		for i, d := range docs {
			if err := db.SaveArtifact(context.Background(), "site-a", int64(i+1), d); err != nil {
				f.Fatal(err)
			}
		}
		if err := db.Close(); err != nil { // folds the WAL into the file
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	small := valid([]byte(`{"clusterId":"site-a"}`))
	f.Add(small)
	f.Add(valid([]byte("v1"), docOf(2, 3000)))
	f.Add(valid())
	f.Add(small[:len(small)/2])
	f.Add([]byte{})
	f.Add([]byte("SQLite format 3\x00"))
	f.Add([]byte("not a database at all"))
	f.Fuzz(func(t *testing.T, file []byte) {
		path := filepath.Join(t.TempDir(), DefaultPath)
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db, err := Open(ctx, path, nil)
		if err != nil {
			return
		}
		defer db.Close()
		a, err := db.LoadArtifact(ctx, "site-a")
		if err == nil && (a.Version < 1 || len(a.Doc) == 0) {
			t.Fatalf("LoadArtifact returned version %d, %d bytes, and no error", a.Version, len(a.Doc))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("LoadArtifact hung: %v", err)
		}
	})
}
