package history

import (
	"math"
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
