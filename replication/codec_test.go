package replication

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/localdb/hlc"
)

var (
	s1 = hlc.Stamp{WallMs: 1_700_000_000_000, Counter: 2, Node: "node-a"}
	c1 = localdb.Change{Table: localdb.TableEvents, Key: `["site-a","A","1"]`, Stamp: s1, Row: []byte(`{"x":1}`)}
	t1 = localdb.Change{Table: localdb.TableEvents, Key: `["site-a","A","1"]`, Stamp: s1, Deleted: true}
)

func TestCodecRoundTrips(t *testing.T) {
	for _, m := range []any{
		&Pull{Node: "node-b", Table: localdb.TableArtifacts, Limit: 500},
		&Pull{Node: "node-b", Table: localdb.TablePointer, After: s1, Limit: 1},
		&Batch{},
		&Batch{Changes: []localdb.Change{c1, t1}, More: true},
		&Ack{Node: "node-b", Table: localdb.TableEvents, Applied: s1},
	} {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", m, err)
		}
		got := reflect.New(reflect.TypeOf(m).Elem()).Interface()
		if err := Decode(b, got); err != nil {
			t.Fatalf("Decode(%T): %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip: %+v, want %+v", got, m)
		}
	}
}

func TestCodecRefusesMalformed(t *testing.T) {
	good, _ := Encode(&Batch{Changes: []localdb.Change{c1}})
	pull, _ := Encode(&Pull{Node: "n", Table: localdb.TableEvents, Limit: 1})
	tooMany := &Batch{Changes: make([]localdb.Change, MaxBatchChanges+1)}
	for i := range tooMany.Changes {
		tooMany.Changes[i] = c1
	}
	for _, tc := range []struct {
		name string
		b    []byte
		into any
	}{
		{"empty", nil, &Batch{}},
		{"wrong version", append([]byte{9}, good[1:]...), &Batch{}},
		{"wrong type", pull, &Batch{}},
		{"truncated", good[:len(good)-1], &Batch{}},
		{"trailing byte", append(append([]byte(nil), good...), 0), &Batch{}},
		{"bad more flag", append([]byte{1, 2, 7}, good[3:]...), &Batch{}},
		{"count over the limit", []byte{1, 2, 0, 0xe9, 0x07}, &Batch{}},
		{"huge length", []byte{1, 2, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}, &Batch{}},
		{"unknown table", bytes.Replace(good, []byte(localdb.TableEvents), []byte("alarm_xx_events"), 1), &Batch{}},
		{"limit zero", pull[: len(pull)-4 : len(pull)-4], &Pull{}},
		{"over 4 MiB", make([]byte, MaxMessageBytes+1), &Batch{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reflect.ValueOf(tc.into).Elem().Interface()
			if err := Decode(tc.b, tc.into); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode: %v, want ErrMalformed", err)
			}
			if !reflect.DeepEqual(reflect.ValueOf(tc.into).Elem().Interface(), before) {
				t.Fatal("a refused message changed the target")
			}
		})
	}
	if _, err := Encode(tooMany); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Encode of %d changes: %v", len(tooMany.Changes), err)
	}
	withRow := t1
	withRow.Row = []byte("{}")
	big := c1
	big.Row = []byte(strings.Repeat("x", MaxMessageBytes))
	for _, c := range []localdb.Change{withRow, {Table: localdb.TableEvents, Key: "k", Stamp: s1}, {Table: "x", Key: "k", Stamp: s1, Row: []byte("{}")},
		{Table: localdb.TableEvents, Key: "k", Row: []byte("{}")}, big} {
		if _, err := Encode(&Batch{Changes: []localdb.Change{c}}); !errors.Is(err, ErrMalformed) {
			t.Errorf("Encode(%+v): %v, want ErrMalformed", c.Table, err)
		}
	}
}
