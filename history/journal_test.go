package history

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzJournal: a journal value decodes to the records encoded, bit for
// bit; any bytes decode or fail without a panic.
func FuzzJournal(f *testing.F) {
	f.Add([]byte{}, int64(0), 1.5, uint32(0))
	f.Add([]byte{1, 2, 3}, int64(-5), math.Copysign(0, -1), uint32(0x80320000))
	f.Add([]byte{0x80}, int64(math.MaxInt64), math.NaN(), uint32(math.MaxUint32))
	f.Fuzz(func(t *testing.T, raw []byte, at int64, v float64, status uint32) {
		_ = decodeJournal(raw, func(uint32, Sample) {})
		recs := []Record{{Sample: Sample{At: at, Value: v, Status: status}}, {Sample: Sample{At: at / 2, Value: 1e300, Status: 0}}, {Sample: Sample{At: math.MinInt64, Value: -3}}}
		ids := []uint32{7, math.MaxUint32, 0}
		var gotIDs []uint32
		var got []Sample
		if err := decodeJournal(encodeJournal(ids, recs), func(id uint32, x Sample) { gotIDs, got = append(gotIDs, id), append(got, x) }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(gotIDs, ids) || len(got) != len(recs) {
			t.Fatalf("ids %v, samples %v", gotIDs, got)
		}
		for i, x := range got {
			w := recs[i].Sample
			if x.At != w.At || x.Status != w.Status || math.Float64bits(x.Value) != math.Float64bits(w.Value) {
				t.Fatalf("record %d: %+v, want %+v", i, x, w)
			}
		}
	})
}

// TestJournalTornTail: a record cut by a crash, or a file left empty,
// is not replayed; the records before it are, and appends go on.
func TestJournalTornTail(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 256)
	for i := range 3 {
		if err := s.Append(recs("t", i, 1, func(int) float64 { return float64(i) })); err != nil {
			t.Fatal(err)
		}
	}
	path := s.j.path(s.j.files[0])
	_ = s.db.Close() // no Close: the heads stay in the journal only
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the last record, and leave an empty file named as the next one.
	if err := os.WriteFile(path, raw[:len(raw)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "journal", fmt.Sprintf("%016x.journal", 3)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, 256)
	if got := readAll(t, s, "t", math.MinInt64, math.MaxInt64); len(got) != 2 || got[1].Value != 1 {
		t.Fatalf("after a cut record: %v", got)
	}
	if err := s.Append(recs("t", 5, 1, func(int) float64 { return 5 })); err != nil {
		t.Fatal(err)
	}
	_ = s.db.Close()
	s = open(t, dir, 256)
	defer s.Close()
	if got := readAll(t, s, "t", math.MinInt64, math.MaxInt64); len(got) != 3 || got[2].At != 5*sec {
		t.Fatalf("after appending again: %v", got)
	}
}

// TestLegacyHead: head samples of the earlier layout (a key each) are read
// at Open and removed at the tag's next save.
func TestLegacyHead(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4)
	if err := s.Append(recs("t", 0, 1, func(int) float64 { return 0 })); err != nil { // names t
		t.Fatal(err)
	}
	if err := s.Compact("t", true); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		k := binary.BigEndian.AppendUint32(headKey(s.ids["t"], int64(i)*sec), 0)
		if err := s.db.Set(binary.BigEndian.AppendUint64(k, math.Float64bits(float64(i))), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, 4)
	defer s.Close()
	if got := readAll(t, s, "t", math.MinInt64, math.MaxInt64); len(got) != 3 || got[2].Value != 2 {
		t.Fatalf("with legacy head keys: %v", got)
	}
	if due := s.Due(math.MinInt64); !slices.Equal(due, []string{"t"}) {
		t.Fatalf("due %v", due)
	}
	if err := s.Compact("t", false); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.scan([]byte{kindLegacyHead}, []byte{kindLegacyHead + 1}, func(k, v []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d legacy keys left (%v)", n, err)
	}
	if got := readAll(t, s, "t", math.MinInt64, math.MaxInt64); len(got) != 3 {
		t.Fatalf("after the save: %v", got)
	}
}
