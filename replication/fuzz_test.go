package replication

import (
	"bytes"
	"testing"

	"github.com/otopcua/otopcua/localdb"
)

// FuzzDecode: Decode never panics, and what it accepts re-encodes to the
// same bytes (so nothing malformed is accepted in a lenient reading).
func FuzzDecode(f *testing.F) {
	for _, m := range []any{
		&Pull{Node: "node-b", Table: localdb.TableArtifacts, After: s1, Limit: 500},
		&Batch{Changes: []localdb.Change{c1, t1}, More: true},
		&Ack{Node: "node-b", Table: localdb.TableEvents, Applied: s1},
		&HistoryPull{Tag: "press1/FastCounter", After: 5, Before: 900, Limit: 10_000},
		&HistoryBatch{Samples: []Sample{{At: 1, Value: 2}, {At: 3, Value: 4, Status: 0x80320000}}, More: true},
	} {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []any{&Pull{}, &Batch{}, &Ack{}, &HistoryPull{}, &HistoryBatch{}} {
			if err := Decode(b, m); err != nil {
				continue
			}
			again, err := Encode(m)
			if err != nil {
				t.Fatalf("accepted %x as %T but cannot encode it: %v", b, m, err)
			}
			if !bytes.Equal(again, b) {
				t.Fatalf("accepted %x as %T, which encodes as %x", b, m, again)
			}
		}
	})
}
