package localdb

import (
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
