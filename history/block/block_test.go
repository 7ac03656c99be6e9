package block

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
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

// TestSize: a polled, deadbanded value takes a few bytes a sample; a
// polled analog stamped to the millisecond, moving a count a poll, one.
func TestSize(t *testing.T) {
	for _, c := range []struct {
		name string
		xs   []Sample
		max  float64 // bytes a sample
	}{
		{"deadbanded, 1 s polls, ms jitter", deadbanded(), 2.2},
		{"unchanged, polled on time", unchanged(), 1.1},
		{"±1 walk, 100 ms polls stamped to the ms", polled(true, 1), 1.1},
		{"±1 walk, polls 0–8 ms late, to the ms", polled(true, 8), 1.2},
		{"±1 walk, 100 ms polls stamped to 100 ns", polled(false, 1), 4},
	} {
		n := float64(len(Encode(c.xs))) / float64(len(c.xs))
		t.Logf("%-40s version 2: %.2f bytes a sample, version 1: %.2f", c.name, n, float64(len(encodeV1(c.xs)))/float64(len(c.xs)))
		if n > c.max {
			t.Errorf("%s: %.2f bytes a sample, more than %.1f", c.name, n, c.max)
		}
	}
}

// deadbanded: a value after a deadband (two decimals, steps up to ±0.39),
// polled every second, 0–4 ms late.
func deadbanded() []Sample {
	const s = 10_000_000
	xs := make([]Sample, 256)
	v := 50.0
	for i := range xs {
		v = math.Round((v+float64(i%7-3)*0.13)*100) / 100
		xs[i] = Sample{At: int64(i)*s + int64(i%5)*10_000, Value: v}
	}
	return xs
}

func unchanged() []Sample {
	xs := make([]Sample, 256)
	for i := range xs {
		xs[i] = Sample{At: int64(i) * 10_000_000, Value: 7}
	}
	return xs
}

// polled is bench/historyrecord's signal as one tag's block: a poll every
// 100 ms from the end of the last one's timer (0–late ms late), read
// 0.1–0.6 ms after it starts, a ±1 step each time; times stamped to the
// millisecond (ms) or to the tick.
func polled(ms bool, late int64) []Sample {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]Sample, 256)
	start, v := int64(134_000_000_000_000_000), 1000.0
	for i := range xs {
		start += 1_000_000 + r.Int64N(late*10_000)
		at := start + 1_000 + r.Int64N(5_000)
		if ms {
			at -= at % 10_000
		}
		v += float64(2*r.IntN(2) - 1)
		xs[i] = Sample{At: at, Value: v}
	}
	return xs
}

// TestTimeUnit: the unit is the coarsest power of ten that divides every
// delta; the first time need not be a multiple of it.
func TestTimeUnit(t *testing.T) {
	for _, c := range []struct {
		ats  []int64
		want int
	}{
		{[]int64{5}, MaxUnitExp},
		{[]int64{5, 5, 5}, MaxUnitExp},
		{[]int64{3, 1_000_003, 1_990_003}, 4},
		{[]int64{3, 1_000_003, 1_990_004}, 0},
		{[]int64{-7, 2_999_999_993}, 9},
		{[]int64{math.MinInt64, math.MaxInt64}, 0}, // the delta wraps to −1
	} {
		xs := make([]Sample, len(c.ats))
		for i, at := range c.ats {
			xs[i] = Sample{At: at, Value: 1}
		}
		if got := unitExp(xs); got != c.want {
			t.Errorf("%v: unit 10^%d, want 10^%d", c.ats, got, c.want)
		}
		checkSame(t, decodeAll(t, Encode(xs)), xs)
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
		{"zero samples", []byte{Version, 0, 2, 0, 0}},
		{"too many samples", append([]byte{Version}, 0x80, 0x80, 0x80, 0x80, 0x01, 2, 0, 0)},
		{"bad unit", []byte{Version, 1, 2, MaxUnitExp + 1, 0, 0}},
		{"bad mode", []byte{Version, 1, 2, 0, 99, 0}},
		{"bad packed unit", []byte{Version, 1, 2, packedBit | (MaxUnitExp + 1), 0, 0}},
		{"short form truncated", []byte{Version, 2, 2, packedBit, 1, 0}},
		{"long form truncated", []byte{Version, 1, 2, packedBit, 1, 0x83}},
		{"status out of range", []byte{Version, 1, 2, packedBit, 1, 0x07, 0xff, 0xff, 0xff, 0xff, 0x7f, 0}},
		{"plain layout truncated", []byte{Version, 2, 2, 4, 1, 0, 0}},
		{"plain layout with a split", []byte{Version, 1, 2, 1 << splitShift, 1, 0, 0}},
		{"plain status out of range", []byte{Version, 1, 2, 4, 1, 0x01, 0xff, 0xff, 0xff, 0xff, 0x7f, 0}},
		{"version 1 zero samples", []byte{Version1, 0, 2, 0}},
		{"version 1 bad mode", []byte{Version1, 1, 2, 99, 0, 0}},
		{"version 1 truncated", []byte{Version1, 2, 2, 1, 0, 0}},
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

// TestRoundTripProperty: any samples in time order come back bit for bit:
// times anywhere in int64 (wrapping deltas included), on a grid of any
// power of ten with or without jitter, not whole milliseconds; values
// decimal, walking a few counts (the short form) or any float64 bits.
func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := drawSamples(t, math.MinInt64, math.MaxInt64)
		b := Encode(xs)
		checkSame(t, decodeAll(t, b), xs)
		e := int(b[1+len(binary.AppendUvarint(nil, uint64(len(xs))))+len(binary.AppendVarint(nil, xs[0].At))] & unitMask)
		if e != unitExp(xs) {
			t.Fatalf("unit 10^%d written, 10^%d chosen", e, unitExp(xs))
		}
		all := e < MaxUnitExp
		for i := 1; i < len(xs); i++ {
			d := xs[i].At - xs[i-1].At
			if d%pow10[e] != 0 {
				t.Fatalf("unit 10^%d does not divide delta %d", e, d)
			}
			all = all && d%pow10[e+1] == 0
		}
		if all {
			t.Fatalf("unit 10^%d, but 10^%d divides every delta", e, e+1)
		}
		// Every layout, whichever Encode chose; none is shorter.
		p, decimal := decimals(xs)
		plainOK := true
		walk(xs, e, p, decimal, func(_ Sample, zd, _ uint64, _ bool) { plainOK = plainOK && zd>>63 == 0 })
		ls := []layout{}
		if plainOK {
			ls = append(ls, layout{})
		}
		for k := minDDBits; k <= maxDDBits; k++ {
			ls = append(ls, layout{packed: true, ddBits: k})
		}
		for _, l := range ls {
			b := encode(xs, e, p, decimal, l)
			checkSame(t, decodeAll(t, b), xs)
			if len(b) < len(Encode(xs)) {
				t.Fatalf("%+v: %d bytes, Encode chose %d", l, len(b), len(Encode(xs)))
			}
		}
	})
}

// drawSamples draws 1–300 samples in time order, the first time in
// [lo, hi].
func drawSamples(t *rapid.T, lo, hi int64) []Sample {
	n := rapid.IntRange(1, 300).Draw(t, "n")
	at := rapid.Int64Range(lo, hi).Draw(t, "start")
	times := rapid.SampledFrom([]string{"steps", "grid", "anywhere"}).Draw(t, "times")
	if lo != math.MinInt64 || hi != math.MaxInt64 {
		times = "steps"
	}
	values := rapid.SampledFrom([]string{"decimal", "walk", "bits"}).Draw(t, "values")
	e := rapid.IntRange(0, MaxUnitExp).Draw(t, "unit")
	jitter := rapid.Bool().Draw(t, "jitter")
	ats := make([]int64, n)
	for i := range ats {
		switch times {
		case "steps":
			at += rapid.Int64Range(0, 1<<40).Draw(t, "step")
		case "grid":
			step := rapid.Int64Range(0, 3).Draw(t, "k") * pow10[e]
			if jitter {
				step += rapid.Int64Range(0, 2).Draw(t, "jitter")
			}
			if at > math.MaxInt64-step {
				step = 0
			}
			at += step
		case "anywhere":
			at = rapid.Int64().Draw(t, "at")
		}
		ats[i] = at
	}
	slices.Sort(ats)
	xs := make([]Sample, n)
	v := float64(rapid.Int64Range(-1e6, 1e6).Draw(t, "v0"))
	for i := range xs {
		switch values {
		case "decimal":
			v = float64(rapid.Int64Range(-1e12, 1e12).Draw(t, "n")) / math.Pow10(rapid.IntRange(0, 6).Draw(t, "p"))
		case "walk":
			v += float64(rapid.Int64Range(-9, 9).Draw(t, "delta"))
		case "bits":
			v = math.Float64frombits(rapid.Uint64().Draw(t, "bits"))
		}
		xs[i] = Sample{At: ats[i], Value: v, Status: rapid.SampledFrom([]uint32{0, 0, 0, 0x80320000, 0x40A40000}).Draw(t, "status")}
	}
	return xs
}

func checkSame(t fataler, got, want []Sample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d back, want %d", len(got), len(want))
	}
	for i := range want {
		if !same(got[i], want[i]) {
			t.Fatalf("sample %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// FuzzDecode: whatever the bytes, Decode returns (no panic, no read past
// the slice, at most MaxSamples samples).
func FuzzDecode(f *testing.F) {
	f.Add(Encode([]Sample{{At: 1, Value: 1.5}, {At: 2, Value: 2, Status: 1}}))
	f.Add(Encode([]Sample{{At: 1, Value: 1.0 / 3}}))
	f.Add([]byte{Version, 0xff, 0xff, 0x03, 0, 0, 1})
	f.Add(Encode(polled(true, 1)))
	f.Add(Encode([]Sample{{At: 1, Value: 2}, {At: 1 << 62, Value: 3, Status: 5}, {At: 1<<62 + 1, Value: 1e9}}))
	f.Add(encodeV1([]Sample{{At: 1, Value: 1.5}, {At: 2, Value: 2, Status: 1}}))
	f.Add([]byte{Version1, 0xff, 0xff, 0x03, 0, 1})
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

// BenchmarkDecode: HistoryRead's part, per block of 256 samples of the
// polled ±1 walk, in both versions.
func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"v2 ms", Encode(polled(true, 1))},
		{"v2 100ns", Encode(polled(false, 1))},
		{"v1 100ns", encodeV1(polled(false, 1))},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Decode(c.b, func(Sample) bool { return true }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode: the recorder's part, per block of 256 samples of the
// polled ±1 walk; "v1" is the encoder before version 2 (encodeV1).
func BenchmarkEncode(b *testing.B) {
	xs := polled(true, 1)
	b.Run("v2", func(b *testing.B) {
		for b.Loop() {
			Encode(xs)
		}
	})
	b.Run("v1", func(b *testing.B) {
		for b.Loop() {
			encodeV1(xs)
		}
	})
}
