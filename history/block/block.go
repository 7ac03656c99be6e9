// Package block is the on-disk form of a run of one tag's history
// samples: a compact, self-describing encoding that the history store
// (package history) writes once a tag has gathered enough samples, and
// reads back whole.
//
// A block holds samples oldest first, each a time, a float64 value and an
// OPC UA status code. It starts with a version byte, the sample count, the
// first time and a value mode; then, per sample, the delta of deltas of
// the time (zig-zag varint shifted left once: the low bit says that the
// status changed, the new status following as a uvarint) and the value:
//
//   - mode ModeXOR: the value XOR-ed with the previous one, without its
//     leading and trailing zero bytes (a byte: leading zero bytes ‹4 |
//     bytes kept, then the bytes kept) — an unchanged value takes one byte;
//   - mode ModeDecimal+p, used when every value of the block has at most
//     p decimals (p ≤ MaxDecimals): round(value × 10^p) as a zig-zag varint
//     delta from the previous one — a process value after a deadband takes
//     one or two bytes.
//
// Times are OPC UA DateTime ticks (100 ns since 1601-01-01 UTC), the
// resolution of a source timestamp on the wire, so that a sample's
// identity (tag, source timestamp) survives the round trip exactly. A
// poll-driven tag's regular intervals make most deltas of deltas small.
// bench/historystore measured 3.9 bytes a sample on a deadbanded random
// walk polled every second (SQLite rows: 29.4; Pebble keys: 18.2).
//
// Decode checks every length it reads: a damaged block is an error, never
// a panic or a read beyond the slice (FuzzDecode).
package block

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Version is the first byte of every block this package writes.
const Version = 1

// Value modes.
const (
	ModeXOR     = 0
	ModeDecimal = 1 // ModeDecimal + p: values with at most p decimals
	// MaxDecimals is the most decimals of ModeDecimal.
	MaxDecimals = 6
)

// MaxSamples bounds the samples of one block, so that a damaged count
// cannot make Decode allocate or loop without end.
const MaxSamples = 1 << 16

// ErrDamaged is wrapped by Decode's errors.
var ErrDamaged = errors.New("history block damaged")

// Sample is one recorded value.
type Sample struct {
	At     int64 // OPC UA DateTime ticks
	Value  float64
	Status uint32
}

// Encode packs xs, which must be oldest first (equal times allowed) and
// at most MaxSamples long; it panics otherwise (a caller's bug).
func Encode(xs []Sample) []byte {
	if len(xs) == 0 || len(xs) > MaxSamples {
		panic(fmt.Sprintf("block: Encode of %d samples (1–%d)", len(xs), MaxSamples))
	}
	b := make([]byte, 0, 16+3*len(xs))
	b = append(b, Version)
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
		if x.At < prevT {
			panic("block: Encode of samples out of time order")
		}
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

// Decode calls fn for every sample of b, oldest first, and returns the
// count. fn may stop the walk by returning false.
func Decode(b []byte, fn func(Sample) bool) (int, error) {
	r := reader{b: b}
	if v := r.byte(); v != Version {
		return 0, r.fail(fmt.Sprintf("version %d, this otopcua reads %d", v, Version))
	}
	n := r.uvarint()
	t := r.varint()
	mode := r.byte()
	if r.err != nil {
		return 0, r.err
	}
	if n == 0 || n > MaxSamples {
		return 0, r.fail(fmt.Sprintf("%d samples", n))
	}
	if mode > ModeDecimal+MaxDecimals {
		return 0, r.fail(fmt.Sprintf("value mode %d", mode))
	}
	decimal := mode >= ModeDecimal
	scale := math.Pow10(int(mode) - ModeDecimal)
	var d, prevN int64
	var v uint64
	var st uint32
	for i := range int(n) {
		head := r.uvarint()
		if i > 0 {
			d += unzigzag(head >> 1)
			t += d
		}
		if head&1 == 1 {
			s := r.uvarint()
			if s > math.MaxUint32 {
				return i, r.fail("status out of range")
			}
			st = uint32(s)
		}
		var value float64
		if decimal {
			prevN += r.varint()
			value = float64(prevN) / scale
		} else {
			v ^= r.xor()
			value = math.Float64frombits(v)
		}
		if r.err != nil {
			return i, r.err
		}
		if !fn(Sample{At: t, Value: value, Status: st}) {
			return i + 1, nil
		}
	}
	if len(r.b) != 0 {
		return int(n), r.fail(fmt.Sprintf("%d bytes after the last sample", len(r.b)))
	}
	return int(n), nil
}

// decimals is the fewest decimals (0–MaxDecimals) that write every value
// of xs exactly, false when more are needed (or a value is not finite).
func decimals(xs []Sample) (int, bool) {
	for p := 0; p <= MaxDecimals; p++ {
		scale := math.Pow10(p)
		ok := true
		for _, x := range xs {
			n := math.Round(x.Value * scale)
			if math.IsNaN(n) || math.Abs(n) >= 1<<53 || n/scale != x.Value || (x.Value == 0 && math.Signbit(x.Value)) {
				ok = false
				break
			}
		}
		if ok {
			return p, true
		}
	}
	return 0, false
}

func appendXOR(b []byte, x uint64) []byte {
	if x == 0 {
		return append(b, 8<<4)
	}
	lead, trail := bits.LeadingZeros64(x)/8, bits.TrailingZeros64(x)/8
	keep := 8 - lead - trail
	b = append(b, byte(lead<<4|keep))
	for k := keep - 1; k >= 0; k-- {
		b = append(b, byte(x>>(8*(trail+k))))
	}
	return b
}

func zigzag(x int64) uint64   { return uint64(x<<1) ^ uint64(x>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// reader reads b, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(why string) error {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrDamaged, why)
	}
	return r.err
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	u, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[k:]
	return u
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	x, k := binary.Varint(r.b)
	if k <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[k:]
	return x
}

func (r *reader) xor() uint64 {
	h := r.byte()
	if r.err != nil {
		return 0
	}
	lead, keep := int(h>>4), int(h&15)
	if lead == 8 && keep == 0 {
		return 0
	}
	trail := 8 - lead - keep
	if keep == 0 || trail < 0 || keep > len(r.b) {
		r.fail("bad value")
		return 0
	}
	var x uint64
	for _, c := range r.b[:keep] {
		x = x<<8 | uint64(c)
	}
	r.b = r.b[keep:]
	return x << (8 * trail)
}
