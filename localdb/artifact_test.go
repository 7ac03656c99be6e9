package localdb

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.FixedZone("CET", 3600))
	clock := clockwork.NewFakeClockAt(at)
	db := openT(t, newPath(t), WithClock(clock))
	for _, tc := range []struct {
		name   string
		doc    []byte
		chunks int
	}{
		{"small JSON", []byte(`{"clusterId":"site-a","devices":[{"name":"sim","driver":"simulated"}]}`), 1},
		{"one byte", []byte{'{'}, 1},
		{"exactly two chunks", docOf(1, 2*ChunkSize), 2},
		{"3 MB", docOf(2, 3<<20), 48},
		{"3 MB and a bit", docOf(3, 3<<20+17), 49},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock.Advance(time.Minute)
			saveT(t, db, "site-a", 7, tc.doc)
			a := loadT(t, db, "site-a", 7, tc.doc)
			if want := clock.Now().UTC().Truncate(time.Microsecond); !a.AppliedAt.Equal(want) || a.AppliedAt.Location() != time.UTC {
				t.Errorf("AppliedAt = %v, want %v (the clock's time in UTC, to the microsecond)", a.AppliedAt, want)
			}
			var n int
			if err := db.sql.QueryRowContext(ctxT(t), "SELECT COUNT(*) FROM deployment_artifacts WHERE cluster_id = 'site-a' AND version = 7").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != tc.chunks {
				t.Errorf("%d chunk rows, want %d (64 KiB each)", n, tc.chunks)
			}
		})
	}
}

// chunkVersions lists, per version, how many chunk rows of cluster exist.
func chunkVersions(t *testing.T, db *DB, cluster string) map[int64]int {
	t.Helper()
	rows, err := db.sql.QueryContext(ctxT(t), "SELECT version, COUNT(*) FROM deployment_artifacts WHERE cluster_id = ? GROUP BY version", cluster)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[int64]int{}
	for rows.Next() {
		var v int64
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		got[v] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestOverwriteKeepsOnlyThePointedToChunks(t *testing.T) {
	db := openT(t, newPath(t))
	other := docOf(9, 2*ChunkSize+1)
	saveT(t, db, "site-b", 3, other)
	v1, v2, v3 := docOf(1, 5*ChunkSize), docOf(2, ChunkSize+5), docOf(3, 100)
	saveT(t, db, "site-a", 1, v1)
	saveT(t, db, "site-a", 2, v2)
	loadT(t, db, "site-a", 2, v2)
	if got := chunkVersions(t, db, "site-a"); len(got) != 1 || got[2] != 2 {
		t.Fatalf("chunks after saving version 2 over 1: %v, want only version 2's 2 chunks", got)
	}
	// The pointer names the last saved version, also when it is older: the
	// node caches what it runs.
	saveT(t, db, "site-a", 1, v3)
	loadT(t, db, "site-a", 1, v3)
	if got := chunkVersions(t, db, "site-a"); len(got) != 1 || got[1] != 1 {
		t.Fatalf("chunks after saving version 1 again with a 100-byte document: %v, want only its 1 chunk", got)
	}
	// Another ClusterId is a separate artifact, untouched.
	loadT(t, db, "site-b", 3, other)
	if got := chunkVersions(t, db, "site-b"); len(got) != 1 || got[3] != 3 {
		t.Fatalf("chunks of site-b: %v, want its 3", got)
	}
}

func TestNoArtifact(t *testing.T) {
	db := openT(t, newPath(t))
	_, err := db.LoadArtifact(ctxT(t), "site-a")
	wantErr(t, err, ErrNoArtifact, `"site-a"`, db.Path())
	saveT(t, db, "site-b", 1, []byte("{}"))
	_, err = db.LoadArtifact(ctxT(t), "site-a")
	wantErr(t, err, ErrNoArtifact, `"site-a"`)
}

func TestSaveRefusesBadArguments(t *testing.T) {
	db := openT(t, newPath(t))
	for _, tc := range []struct {
		cluster string
		version int64
		doc     []byte
		says    string
	}{
		{"", 1, []byte("{}"), "cluster id is empty"},
		{"site-a", 0, []byte("{}"), "versions start at 1"},
		{"site-a", -3, []byte("{}"), "versions start at 1"},
		{"site-a", 1, nil, "document is empty"},
	} {
		wantErr(t, db.SaveArtifact(ctxT(t), tc.cluster, tc.version, tc.doc), nil, tc.says)
	}
	_, err := db.LoadArtifact(ctxT(t), "site-a")
	wantErr(t, err, ErrNoArtifact)
}

// Each case damages a saved three-chunk artifact through SQL, as a bad disk
// or a hand edit would; LoadArtifact must say ErrCorrupt and what is wrong,
// and the next save must repair the cache.
func TestCorruptArtifact(t *testing.T) {
	const n = 3*ChunkSize - 10 // chunks of 65536, 65536, 65526 bytes
	for _, tc := range []struct {
		name   string
		damage []string
		says   string
	}{
		{"middle chunk deleted", []string{"DELETE FROM deployment_artifacts WHERE chunk_index = 1"}, "chunk index 1 is missing"},
		{"last chunk deleted", []string{"DELETE FROM deployment_artifacts WHERE chunk_index = 2"}, "chunk index 2 is missing"},
		{"pointer without chunks", []string{"DELETE FROM deployment_artifacts"}, "chunk index 0 is missing"},
		{"pointer names a version without chunks", []string{"UPDATE deployment_pointer SET version = 8"}, "version 8: chunk index 0 is missing"},
		{"one byte altered", []string{"UPDATE deployment_artifacts SET data = CAST(X'00' || substr(data, 2) AS BLOB) WHERE chunk_index = 1 AND substr(data, 1, 1) <> X'00'",
			"UPDATE deployment_artifacts SET data = CAST(X'01' || substr(data, 2) AS BLOB) WHERE chunk_index = 1 AND substr(data, 1, 1) = X'00'"}, "SHA-256"},
		{"chunk truncated", []string{"UPDATE deployment_artifacts SET data = substr(data, 1, 1000) WHERE chunk_index = 0"}, "hold 132062 bytes, the pointer says 196598"},
		{"extra chunk", []string{"INSERT INTO deployment_artifacts (cluster_id, version, chunk_index, data) VALUES ('site-a', 7, 3, X'00')"}, "chunk 3 is there, the pointer says 3 chunks"},
		{"chunk count too low", []string{"UPDATE deployment_pointer SET chunk_count = 2"}, "chunk 2 is there, the pointer says 2 chunks"},
		{"size altered", []string{"UPDATE deployment_pointer SET size = size + 1"}, "the pointer says 196599"},
		{"negative size", []string{"UPDATE deployment_pointer SET size = -1"}, "-1 bytes"},
		{"empty document", []string{"UPDATE deployment_pointer SET size = 0, chunk_count = 0, sha256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'",
			"DELETE FROM deployment_artifacts"}, "0 chunks, 0 bytes"},
		{"version 0", []string{"UPDATE deployment_pointer SET version = 0", "UPDATE deployment_artifacts SET version = 0"}, "the pointer says version 0"},
		{"hash altered", []string{"UPDATE deployment_pointer SET sha256 = '" + fmt.Sprintf("%064d", 0) + "'"}, "SHA-256 of the chunks is"},
		{"hash not hex", []string{"UPDATE deployment_pointer SET sha256 = 'zz'"}, "not 64 hex digits"},
		{"applied_at not a time", []string{"UPDATE deployment_pointer SET applied_at = 'yesterday'"}, "not a time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := newPath(t)
			db := openT(t, path)
			doc := docOf(7, n)
			saveT(t, db, "site-a", 7, doc)
			raw := rawT(t, path)
			for _, stmt := range tc.damage {
				execT(t, raw, stmt)
			}
			_, err := db.LoadArtifact(ctxT(t), "site-a")
			wantErr(t, err, ErrCorrupt, `cluster "site-a"`, tc.says)
			// The next applied deployment repairs the cache.
			next := docOf(8, n)
			saveT(t, db, "site-a", 9, next)
			loadT(t, db, "site-a", 9, next)
			if got := chunkVersions(t, db, "site-a"); len(got) != 1 || got[9] != 3 {
				t.Fatalf("chunks after the repairing save: %v, want version 9's 3", got)
			}
		})
	}
}

// A save that fails half-way (here: a trigger refuses its third chunk)
// leaves the previous artifact whole and loadable.
func TestFailedSaveKeepsThePreviousArtifact(t *testing.T) {
	path := newPath(t)
	db := openT(t, path)
	v1 := docOf(1, 4*ChunkSize)
	saveT(t, db, "site-a", 1, v1)
	execT(t, rawT(t, path), "CREATE TRIGGER refuse_chunk BEFORE INSERT ON deployment_artifacts "+
		"WHEN NEW.version = 2 AND NEW.chunk_index = 2 BEGIN SELECT RAISE(ABORT, 'disk said no'); END")
	err := db.SaveArtifact(ctxT(t), "site-a", 2, docOf(2, 4*ChunkSize))
	wantErr(t, err, nil, `cluster "site-a" version 2`, "disk said no")
	loadT(t, db, "site-a", 1, v1)
	if got := chunkVersions(t, db, "site-a"); !slices.Equal([]int{got[1], len(got)}, []int{4, 1}) {
		t.Fatalf("chunks after the failed save: %v, want only version 1's 4", got)
	}
}
