package localdb

import (
	"fmt"
	"testing"
)

// go test -run '^$' -bench . -benchtime 50x ./localdb/
//
// A save is one IMMEDIATE transaction: 16 chunk rows, the pointer, the
// delete of the previous version's chunks, and the WAL fsync of the commit.

func BenchmarkSaveArtifact1MB(b *testing.B) {
	db := openT(b, newPath(b))
	doc := docOf(1, 1<<20)
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for i := range b.N {
		if err := db.SaveArtifact(ctxT(b), "site-a", int64(i+1), doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadArtifact1MB(b *testing.B) {
	db := openT(b, newPath(b))
	doc := docOf(1, 1<<20)
	saveT(b, db, "site-a", 1, doc)
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for range b.N {
		a, err := db.LoadArtifact(ctxT(b), "site-a")
		if err != nil {
			b.Fatal(err)
		}
		if len(a.Doc) != len(doc) {
			b.Fatalf("loaded %d bytes", len(a.Doc))
		}
	}
}

// go test -run '^$' -bench EnqueueEvent -benchtime 200x ./localdb/
//
// One enqueue is one IMMEDIATE transaction: the key lookup, the count
// against the limit, the insert and the WAL commit. At a depth of 100,000
// (the historian's default limit) the count reads the whole pending index.
func BenchmarkEnqueueEvent(b *testing.B) {
	for _, depth := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			db := openT(b, newPath(b))
			if depth > 0 {
				execT(b, db.sql, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "+
					"INSERT INTO alarm_sf_events (cluster_id, alarm, transition_id, payload, enqueued_at) "+
					"SELECT 'site-a', 'Seed', 'seed-' || i, '{\"n\":' || i || '}', '2026-03-01T08:00:00.000000Z' FROM n", depth)
			}
			i := 0
			for b.Loop() {
				if _, err := db.EnqueueEvent(ctxT(b), event("HighTemp", fmt.Sprint(i)), depth+10_000_000); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// The historian reads the stats after every drain or trim tick.
func BenchmarkEventQueueStats100k(b *testing.B) {
	db := openT(b, newPath(b))
	execT(b, db.sql, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "+
		"INSERT INTO alarm_sf_events (cluster_id, alarm, transition_id, payload, enqueued_at) "+
		"SELECT 'site-a', 'Seed', 'seed-' || i, '{}', '2026-03-01T08:00:00.000000Z' FROM n")
	for b.Loop() {
		if d, _, _, err := db.EventQueueStats(ctxT(b)); err != nil || d != 100_000 {
			b.Fatal(d, err)
		}
	}
}
