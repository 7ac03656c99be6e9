package block

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"testing"

	"pgregory.net/rapid"
)

// goldenV1 are the samples of the blocks in testdata/*.v1, written by the
// version 1 encoder (otopcua before block version 2, 2026-12-07): a store
// on disk holds such blocks, and Decode must read them as long as it may.
var goldenV1 = map[string][]Sample{
	// A polled register: 100 ms polls with sub-ms jitter, a ±1 walk, a
	// device failure (BadCommunicationError keeping the last value).
	"decimal": {
		{At: 134_000_000_000_001_234, Value: 20},
		{At: 134_000_000_001_001_901, Value: 21},
		{At: 134_000_000_002_000_057, Value: 20},
		{At: 134_000_000_003_012_345, Value: 20, Status: 0x80130000},
		{At: 134_000_000_013_012_345, Value: 20, Status: 0x80130000},
		{At: 134_000_000_013_912_345, Value: 19},
		{At: 134_000_000_013_912_345, Value: 18.5},
	},
	// Values no decimal mode writes: XOR of the float64 bits.
	"xor": {
		{At: 134_000_000_000_000_000, Value: 1.0 / 3},
		{At: 134_000_000_000_010_000, Value: math.Pi, Status: 0x40A40000},
		{At: 134_000_000_000_020_001, Value: math.Inf(-1)},
		{At: 134_000_000_000_030_001, Value: math.Copysign(0, -1)},
		{At: 134_000_000_000_030_002, Value: 1e300},
	},
}

// TestDecodeVersion1: the blocks the version 1 encoder wrote (bytes kept
// in testdata) decode to their samples; encodeV1 below writes the same
// bytes, so the property test of version 1 tests that encoder.
func TestDecodeVersion1(t *testing.T) {
	for name, want := range goldenV1 {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile("testdata/" + name + ".v1")
			if err != nil {
				t.Fatal(err)
			}
			if b[0] != Version1 {
				t.Fatalf("version byte %d", b[0])
			}
			if !bytes.Equal(encodeV1(want), b) {
				t.Fatalf("encodeV1 does not write the golden bytes:\n%x\n%x", encodeV1(want), b)
			}
			got := decodeAll(t, b)
			if len(got) != len(want) {
				t.Fatalf("%d samples back, want %d", len(got), len(want))
			}
			for i := range got {
				if !same(got[i], want[i]) {
					t.Fatalf("sample %d: %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestVersion1RoundTripProperty: whatever version 1 wrote comes back.
func TestVersion1RoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := drawSamples(t, -1<<50, 1<<50)
		checkSame(t, decodeAll(t, encodeV1(xs)), xs)
	})
}

// encodeV1 is the version 1 encoder as it was (block.go before version 2),
// kept to test the decoder of the blocks it left on disk.
func encodeV1(xs []Sample) []byte {
	b := make([]byte, 0, 16+3*len(xs))
	b = append(b, Version1)
	b = binary.AppendUvarint(b, uint64(len(xs)))
	b = binary.AppendVarint(b, xs[0].At)
	p, decimal := decimals(xs)
	mode := byte(ModeXOR)
	if decimal {
		mode = byte(ModeDecimal + p)
	}
	b = append(b, mode)
	scale := math.Pow10(p)
	prevT, prevD := xs[0].At, int64(0)
	var prevBits uint64
	var prevN int64
	var prevS uint32
	for i, x := range xs {
		d := x.At - prevT
		dd := d - prevD
		if i == 0 {
			dd = 0
		}
		prevT, prevD = x.At, d
		changed := x.Status != prevS
		head := zigzag(dd) << 1
		if changed {
			head |= 1
		}
		b = binary.AppendUvarint(b, head)
		if changed {
			b = binary.AppendUvarint(b, uint64(x.Status))
			prevS = x.Status
		}
		if decimal {
			n := int64(math.Round(x.Value * scale))
			b = binary.AppendVarint(b, n-prevN)
			prevN = n
			continue
		}
		v := math.Float64bits(x.Value)
		b = appendXOR(b, v^prevBits)
		prevBits = v
	}
	return b
}
