package block

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// fataler is what decodeAll needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func decodeAll(t fataler, b []byte) []Sample {
	t.Helper()
	var got []Sample
	n, err := Decode(b, func(x Sample) bool { got = append(got, x); return true })
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if n != len(got) {
		t.Fatalf("Decode counted %d, delivered %d", n, len(got))
	}
	return got
}

func same(a, b Sample) bool {
	return a.At == b.At && a.Status == b.Status && math.Float64bits(a.Value) == math.Float64bits(b.Value)
}

func TestRoundTrip(t *testing.T) {
	const s = 10_000_000 // one second in ticks
	for _, c := range []struct {
		name string
		xs   []Sample
		mode byte
	}{
		{"one sample", []Sample{{At: 133_000_000_000_000_000, Value: 42}}, ModeDecimal},
		{"integers", []Sample{{At: 0, Value: 1}, {At: s, Value: 2}, {At: 2 * s, Value: -3}}, ModeDecimal},
		{"two decimals", []Sample{{At: 5, Value: 20.15}, {At: 5 + s, Value: 20.17}, {At: 5 + 2*s + 3, Value: 19.99}}, ModeDecimal + 2},
		{"a third is XOR", []Sample{{At: 1, Value: 1.0 / 3}, {At: 2, Value: 2}}, ModeXOR},
		{"statuses change", []Sample{{At: 1, Value: 1, Status: 0x80320000}, {At: 2, Value: 1, Status: 0x80320000}, {At: 3, Value: 2}, {At: 4, Value: 2, Status: 0x40A40000}}, ModeDecimal},
		{"equal times", []Sample{{At: 7, Value: 1}, {At: 7, Value: 2}, {At: 7, Value: 3}}, ModeDecimal},
		{"negative zero is XOR", []Sample{{At: 1, Value: math.Copysign(0, -1)}}, ModeXOR},
		{"NaN and infinities", []Sample{{At: 1, Value: math.NaN()}, {At: 2, Value: math.Inf(1)}, {At: 3, Value: math.Inf(-1)}}, ModeXOR},
		{"extreme times", []Sample{{At: math.MinInt64 / 4, Value: 1}, {At: math.MaxInt64 / 4, Value: 1}}, ModeDecimal},
		{"huge values", []Sample{{At: 1, Value: math.MaxFloat64}, {At: 2, Value: -math.SmallestNonzeroFloat64}}, ModeXOR},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := Encode(c.xs)
			if b[0] != Version {
				t.Fatalf("version byte %d", b[0])
			}
			got := decodeAll(t, b)
			if len(got) != len(c.xs) {
				t.Fatalf("%d samples back, want %d", len(got), len(c.xs))
			}
			for i := range got {
				if !same(got[i], c.xs[i]) {
					t.Fatalf("sample %d: %+v, want %+v", i, got[i], c.xs[i])
				}
			}
			if p, ok := decimals(c.xs); (ok && byte(ModeDecimal+p) != c.mode) || (!ok && c.mode != ModeXOR) {
				t.Fatalf("mode: decimals %d %v, want mode %d", p, ok, c.mode)
			}
		})
	}
}

// TestSize: a polled, deadbanded value takes a few bytes a sample.
func TestSize(t *testing.T) {
	const s = 10_000_000
	xs := make([]Sample, 256)
	v := 50.0
	for i := range xs {
		v = math.Round((v+float64(i%7-3)*0.13)*100) / 100
		xs[i] = Sample{At: int64(i)*s + int64(i%5)*10_000, Value: v}
	}
	if n := len(Encode(xs)); n > 4*len(xs) {
		t.Fatalf("%d bytes for %d samples: more than 4 a sample", n, len(xs))
	}
	for i := range xs {
		xs[i] = Sample{At: int64(i) * s, Value: 7} // unchanged, polled on time
	}
	if n := len(Encode(xs)); n > 2*len(xs)+16 {
		t.Fatalf("%d bytes for %d unchanged samples", n, len(xs))
	}
}

func TestDecodeStops(t *testing.T) {
	b := Encode([]Sample{{At: 1, Value: 1}, {At: 2, Value: 2}, {At: 3, Value: 3}})
	k := 0
	n, err := Decode(b, func(Sample) bool { k++; return k < 2 })
	if err != nil || n != 2 || k != 2 {
		t.Fatalf("n %d, calls %d, %v", n, k, err)
	}
}

func TestDamagedBlocks(t *testing.T) {
	good := Encode([]Sample{{At: 1, Value: 1.0 / 3}, {At: 2, Value: 2.5, Status: 7}})
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"other version", append([]byte{9}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing bytes", append(append([]byte{}, good...), 0)},
		{"zero samples", []byte{Version, 0, 2, 0}},
		{"too many samples", append([]byte{Version}, 0x80, 0x80, 0x80, 0x80, 0x01, 2, 0)},
		{"bad mode", []byte{Version, 1, 2, 99, 0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Decode(c.b, func(Sample) bool { return true }); !errors.Is(err, ErrDamaged) {
				t.Fatalf("Decode: %v, want ErrDamaged", err)
			}
		})
	}
}

func TestEncodeRefusesOutOfOrder(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	Encode([]Sample{{At: 2}, {At: 1}})
}

// TestRoundTripProperty: any samples in time order come back bit for bit.
func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(t, "n")
		at := rapid.Int64Range(-1<<50, 1<<50).Draw(t, "start")
		decimalsOnly := rapid.Bool().Draw(t, "decimal")
		xs := make([]Sample, n)
		for i := range xs {
			at += rapid.Int64Range(0, 1<<40).Draw(t, "step")
			var v float64
			if decimalsOnly {
				v = float64(rapid.Int64Range(-1e12, 1e12).Draw(t, "n")) / math.Pow10(rapid.IntRange(0, 6).Draw(t, "p"))
			} else {
				v = math.Float64frombits(rapid.Uint64().Draw(t, "bits"))
			}
			xs[i] = Sample{At: at, Value: v, Status: rapid.SampledFrom([]uint32{0, 0, 0x80320000, 0x40A40000}).Draw(t, "status")}
		}
		got := decodeAll(t, Encode(xs))
		if len(got) != n {
			t.Fatalf("%d back, want %d", len(got), n)
		}
		for i := range xs {
			if !same(got[i], xs[i]) {
				t.Fatalf("sample %d: %+v, want %+v", i, got[i], xs[i])
			}
		}
	})
}

// FuzzDecode: whatever the bytes, Decode returns (no panic, no read past
// the slice, at most MaxSamples samples).
func FuzzDecode(f *testing.F) {
	f.Add(Encode([]Sample{{At: 1, Value: 1.5}, {At: 2, Value: 2, Status: 1}}))
	f.Add(Encode([]Sample{{At: 1, Value: 1.0 / 3}}))
	f.Add([]byte{Version, 0xff, 0xff, 0x03, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		_, _ = Decode(b, func(Sample) bool { n++; return true })
		if n > MaxSamples {
			t.Fatalf("%d samples", n)
		}
	})
}

func BenchmarkEncodeDecode(b *testing.B) {
	xs := make([]Sample, 256)
	v := 50.0
	for i := range xs {
		v = math.Round((v+float64(i%7-3)*0.13)*100) / 100
		xs[i] = Sample{At: int64(i) * 10_000_000, Value: v}
	}
	b.ReportAllocs()
	for b.Loop() {
		enc := Encode(xs)
		if _, err := Decode(enc, func(Sample) bool { return true }); err != nil {
			b.Fatal(err)
		}
	}
}
