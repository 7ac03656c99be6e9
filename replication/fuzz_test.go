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
	} {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []any{&Pull{}, &Batch{}, &Ack{}} {
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
