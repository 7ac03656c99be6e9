// Package block is the on-disk form of a run of one tag's history
// samples: a compact, self-describing encoding that the history store
// (package history) writes once a tag has gathered enough samples, and
// reads back whole.
//
// A block holds samples oldest first, each a time, a float64 value and an
// OPC UA status code. Times are OPC UA DateTime ticks (100 ns since
// 1601-01-01 UTC), the resolution of a source timestamp on the wire, so
// that a sample's identity (tag, source timestamp) survives the round trip
// exactly. Values are written in one of two modes, chosen per block:
//
//   - mode ModeXOR: the value XOR-ed with the previous one, without its
//     leading and trailing zero bytes (a byte: leading zero bytes ‹4 |
//     bytes kept, then the bytes kept) — an unchanged value takes one byte;
//   - mode ModeDecimal+p, used when every value of the block has at most
//     p decimals (p ≤ MaxDecimals): round(value × 10^p) as a delta from
//     the previous one — a process value after a deadband takes one or two
//     bytes.
//
// # Version 2 (Encode writes it)
//
// Header: the version byte, the sample count (uvarint), the first time
// (varint), the unit byte and the value mode. The unit byte holds, in its
// low 5 bits, e: the time unit is 10^e ticks (e ≤ MaxUnitExp), the
// coarsest power of ten that divides every time delta of the block —
// 10,000, a millisecond, for a polled driver's samples, which are stamped
// to the millisecond; in its high bit the layout of the samples; in bits
// 5–6 the packed layout's split (s below, 0 in the plain layout). Each
// sample is the delta of deltas of its time in that unit (dd; 0 for the
// first sample), its status when it changed, and its value (mode
// ModeDecimal+p: the delta as a zigzag varint; ModeXOR: the XOR form).
//
//   - Packed layout (high bit set). The low bit of a sample's first byte
//     tells its form. Short, when the status did not change: one byte, in
//     mode ModeDecimal+p zigzag(value delta) ‹(k+1) | zigzag(dd) ‹1 with
//     k = 2+s bits for zigzag(dd) and 7−k for the value's (a polled analog
//     moving a few counts takes one byte; k follows the poll jitter: 3 for
//     ±4 ms, 5 for ±16 ms); in mode ModeXOR zigzag(dd) ‹1 (< 128) followed
//     by the value. Long: a uvarint f ‹2 | changed ‹1 | 1, where f is
//     zigzag(dd)+1, or 0 and then zigzag(dd) as a uvarint when it does not
//     fit; the status (uvarint) when changed; the value.
//   - Plain layout (high bit clear), version 1's: a uvarint zigzag(dd) ‹1 |
//     changed, the status when changed, the value — shorter for times
//     that are not whole milliseconds (the OPC UA client driver passes its
//     upstream's timestamps through), where a short form rarely fits and
//     the long form's extra bit costs.
//
// Encode counts the bytes of every layout and split and writes the
// shortest (chooseLayout).
//
// Deltas are computed with wrapping int64 arithmetic on both sides, so
// any times in order (equal ones allowed) come back exactly.
//
// # Version 1 (still decoded)
//
// Header: version, count, first time, value mode; the samples in the plain
// layout with dd in ticks. A poll's jitter at 100 ns made a time cost
// about 3 bytes; the blocks of a store written before version 2 stay
// readable (testdata/*.v1).
//
// bench/historystore measured 3.9 bytes a sample on a deadbanded random
// walk polled every second with version 1 (SQLite rows: 29.4; Pebble keys:
// 18.2); docs/benchmarks.md "Sustained recording" has version 2's figures.
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
const Version = 2

// Version1 is the first byte of the blocks written before Version 2;
// Decode still reads them.
const Version1 = 1

// Value modes.
const (
	ModeXOR     = 0
	ModeDecimal = 1 // ModeDecimal + p: values with at most p decimals
	// MaxDecimals is the most decimals of ModeDecimal.
	MaxDecimals = 6
)

// MaxUnitExp is the largest time unit exponent: 10^18 ticks.
const MaxUnitExp = 18

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

// pow10 is 10^e as an int64, e ≤ MaxUnitExp.
var pow10 = func() (p [MaxUnitExp + 1]int64) {
	p[0] = 1
	for e := 1; e <= MaxUnitExp; e++ {
		p[e] = p[e-1] * 10
	}
	return p
}()

// Encode packs xs, which must be oldest first (equal times allowed) and
// at most MaxSamples long; it panics otherwise (a caller's bug). Of the
// layouts it writes the one that takes the fewest bytes.
func Encode(xs []Sample) []byte {
	if len(xs) == 0 || len(xs) > MaxSamples {
		panic(fmt.Sprintf("block: Encode of %d samples (1–%d)", len(xs), MaxSamples))
	}
	e := unitExp(xs)
	p, decimal := decimals(xs)
	return encode(xs, e, p, decimal, chooseLayout(xs, e, p, decimal))
}

// The unit byte of a version 2 block: e in its low bits, the packed
// layout in its high bit, the split of a short form (ddBits − minDDBits)
// between them.
const (
	packedBit  = 0x80
	splitShift = 5
	unitMask   = 1<<splitShift - 1
	minDDBits  = 2 // bits of zigzag(dd) in a short form of mode ModeDecimal+p
	maxDDBits  = 5 // the value has the other 7 − ddBits
)

// layout is how a version 2 block's samples are written.
type layout struct {
	packed bool
	ddBits int // packed, mode ModeDecimal+p: the short form's split
}

// unitByte is the unit byte of a block with this layout and unit 10^e.
func (l layout) unitByte(e int) byte {
	if !l.packed {
		return byte(e)
	}
	return packedBit | byte(l.ddBits-minDDBits)<<splitShift | byte(e)
}

// short reports whether a sample takes the packed layout's short form.
func (l layout) short(decimal, changed bool, zd, zv uint64) bool {
	if changed {
		return false
	}
	if !decimal {
		return zd < 128
	}
	return zd < 1<<l.ddBits && zv < 1<<(7-l.ddBits)
}

// walk calls fn with every sample of xs and its zigzag(dd) in the unit
// 10^e, its zigzag(value delta) in mode ModeDecimal+p (decimal), and
// whether its status differs from the one before (from 0 for the first).
func walk(xs []Sample, e, p int, decimal bool, fn func(x Sample, zd, zv uint64, changed bool)) {
	unit, scale := pow10[e], math.Pow10(p)
	prevT, prevD := xs[0].At, int64(0)
	var prevN int64
	var prevS uint32
	for _, x := range xs {
		d := (x.At - prevT) / unit // exact: unit divides every delta
		zd := zigzag(d - prevD)
		prevT, prevD = x.At, d
		var zv uint64
		if decimal {
			n := int64(math.Round(x.Value * scale))
			zv = zigzag(n - prevN)
			prevN = n
		}
		fn(x, zd, zv, x.Status != prevS)
		prevS = x.Status
	}
}

// chooseLayout is the layout that writes xs in the fewest bytes: it
// counts, in one walk, the bytes of each (a value's XOR form is the same
// in all of them and not counted).
func chooseLayout(xs []Sample, e, p int, decimal bool) layout {
	var packed [maxDDBits + 1]int // by ddBits; [0] in mode ModeXOR
	plain, plainOK := 0, true
	walk(xs, e, p, decimal, func(x Sample, zd, zv uint64, changed bool) {
		rest := 0 // the status and the value after a head
		if changed {
			rest = uvarintLen(uint64(x.Status))
		}
		if decimal {
			rest += uvarintLen(zv)
		}
		if zd>>63 != 0 {
			plainOK = false
		}
		plain += uvarintLen(zd<<1) + rest
		long := longHeadLen(zd) + rest
		if !decimal {
			packed[0] += long
			if (layout{packed: true}).short(false, changed, zd, zv) {
				packed[0] += 1 - long
			}
			return
		}
		for k := minDDBits; k <= maxDDBits; k++ {
			if (layout{packed: true, ddBits: k}).short(true, changed, zd, zv) {
				packed[k]++
			} else {
				packed[k] += long
			}
		}
	})
	best, size := layout{packed: true, ddBits: minDDBits}, packed[0]
	if decimal {
		for k := minDDBits; k <= maxDDBits; k++ {
			if k == minDDBits || packed[k] < size {
				best, size = layout{packed: true, ddBits: k}, packed[k]
			}
		}
	}
	if plainOK && plain < size {
		return layout{}
	}
	return best
}

// encode writes xs in version 2 with the time unit 10^e, the value mode of
// p and decimal, and layout l.
func encode(xs []Sample, e, p int, decimal bool, l layout) []byte {
	b := make([]byte, 0, 16+2*len(xs))
	b = append(b, Version)
	b = binary.AppendUvarint(b, uint64(len(xs)))
	b = binary.AppendVarint(b, xs[0].At)
	b = append(b, l.unitByte(e))
	mode := byte(ModeXOR)
	if decimal {
		mode = byte(ModeDecimal + p)
	}
	b = append(b, mode)
	var prevBits uint64
	walk(xs, e, p, decimal, func(x Sample, zd, zv uint64, changed bool) {
		switch {
		case !l.packed:
			if zd>>63 != 0 {
				panic("block: plain layout of a delta of deltas beyond 2^62 (chooseLayout did not refuse it)")
			}
			b = appendPlainHead(b, zd, changed, x.Status)
		case !l.short(decimal, changed, zd, zv):
			b = appendLongHead(b, zd, changed, x.Status)
		case decimal:
			b = append(b, byte(zv<<(l.ddBits+1)|zd<<1))
			return
		default:
			b = append(b, byte(zd<<1))
		}
		if decimal {
			b = binary.AppendUvarint(b, zv)
			return
		}
		v := math.Float64bits(x.Value)
		b = appendXOR(b, v^prevBits)
		prevBits = v
	})
	return b
}

// unitExp is the largest e ≤ MaxUnitExp such that 10^e divides every time
// delta of xs, which it checks are in order.
func unitExp(xs []Sample) int {
	e := MaxUnitExp
	for i := 1; i < len(xs); i++ {
		if xs[i].At < xs[i-1].At {
			panic("block: Encode of samples out of time order")
		}
		d := xs[i].At - xs[i-1].At
		for e > 0 && d%pow10[e] != 0 {
			e--
		}
	}
	return e
}

// appendLongHead appends the head of a sample's long form in the packed
// layout, and the new status when it changed.
func appendLongHead(b []byte, zd uint64, changed bool, status uint32) []byte {
	var h uint64 = 1
	if changed {
		h |= 2
	}
	if zd < 1<<62-1 {
		b = binary.AppendUvarint(b, (zd+1)<<2|h)
	} else {
		b = binary.AppendUvarint(b, h)
		b = binary.AppendUvarint(b, zd)
	}
	if changed {
		b = binary.AppendUvarint(b, uint64(status))
	}
	return b
}

// appendPlainHead appends a sample's head in the plain layout (version
// 1's), zd < 2^63, and the new status when it changed.
func appendPlainHead(b []byte, zd uint64, changed bool, status uint32) []byte {
	h := zd << 1
	if changed {
		h |= 1
	}
	b = binary.AppendUvarint(b, h)
	if changed {
		b = binary.AppendUvarint(b, uint64(status))
	}
	return b
}

// longHeadLen is the length of appendLongHead's head, before the status.
func longHeadLen(zd uint64) int {
	if zd < 1<<62-1 {
		return uvarintLen((zd + 1) << 2)
	}
	return 1 + uvarintLen(zd)
}

// uvarintLen is the length of u as a uvarint.
func uvarintLen(u uint64) int { return (bits.Len64(u|1) + 6) / 7 }

// Decode calls fn for every sample of b, oldest first, and returns the
// count. fn may stop the walk by returning false. It reads every version
// this package ever wrote.
func Decode(b []byte, fn func(Sample) bool) (int, error) {
	r := reader{b: b}
	version := r.byte()
	if r.err != nil {
		return 0, r.err
	}
	if version != Version && version != Version1 {
		return 0, r.fail(fmt.Sprintf("version %d, this otopcua reads %d and %d", version, Version1, Version))
	}
	h := header{n: r.uvarint(), t: r.varint(), unit: 1}
	l := layout{}
	if version == Version {
		u := r.byte()
		e := u & unitMask
		l = layout{packed: u&packedBit != 0, ddBits: minDDBits + int(u>>splitShift&3)}
		if r.err == nil && (e > MaxUnitExp || (!l.packed && u != e)) {
			return 0, r.fail(fmt.Sprintf("unit byte %#x", u))
		}
		h.unit = pow10[min(e, MaxUnitExp)]
	}
	mode := r.byte()
	if r.err != nil {
		return 0, r.err
	}
	if h.n == 0 || h.n > MaxSamples {
		return 0, r.fail(fmt.Sprintf("%d samples", h.n))
	}
	if mode > ModeDecimal+MaxDecimals {
		return 0, r.fail(fmt.Sprintf("value mode %d", mode))
	}
	h.decimal = mode >= ModeDecimal
	h.scale = math.Pow10(int(mode) - ModeDecimal)
	var k int
	if l.packed {
		k = decodePacked(&r, h, l.ddBits, fn)
	} else {
		k = decodePlain(&r, h, fn)
	}
	if r.err != nil {
		return k, r.err
	}
	if k == int(h.n) && len(r.b) != 0 {
		return k, r.fail(fmt.Sprintf("%d bytes after the last sample", len(r.b)))
	}
	return k, nil
}

// header is what Decode read before the samples.
type header struct {
	n       uint64
	t       int64 // the first time
	unit    int64 // ticks
	decimal bool
	scale   float64 // 10^p of ModeDecimal+p
}

// decodePacked walks the samples of a version 2 block in the packed
// layout (ddBits: its short form's split) and returns how many it gave
// fn; r.err is set when the block is damaged.
func decodePacked(r *reader, h header, ddBits int, fn func(Sample) bool) int {
	t, d, prevN := h.t, int64(0), int64(0)
	var v uint64
	var st uint32
	for i := range int(h.n) {
		c := r.peek()
		if r.err != nil {
			return i
		}
		var zd, zv uint64
		short := c&1 == 0
		switch {
		case short && h.decimal:
			r.b = r.b[1:]
			zd, zv = uint64(c>>1)&(1<<ddBits-1), uint64(c>>(ddBits+1))
		case short:
			r.b = r.b[1:]
			zd = uint64(c >> 1)
		default:
			head := r.uvarint()
			if f := head >> 2; f != 0 {
				zd = f - 1
			} else {
				zd = r.uvarint()
			}
			if head&2 != 0 {
				st = r.status()
			}
			if h.decimal {
				zv = r.uvarint()
			}
		}
		if i > 0 {
			d += unzigzag(zd)
			t += d * h.unit
		}
		var value float64
		if h.decimal {
			prevN += unzigzag(zv)
			value = float64(prevN) / h.scale
		} else {
			v ^= r.xor()
			value = math.Float64frombits(v)
		}
		if r.err != nil {
			return i
		}
		if !fn(Sample{At: t, Value: value, Status: st}) {
			return i + 1
		}
	}
	return int(h.n)
}

// decodePlain walks the samples of a version 1 block, or of a version 2
// block in the plain layout, as decodePacked.
func decodePlain(r *reader, h header, fn func(Sample) bool) int {
	t, d, prevN := h.t, int64(0), int64(0)
	var v uint64
	var st uint32
	for i := range int(h.n) {
		head := r.uvarint()
		if i > 0 {
			d += unzigzag(head >> 1)
			t += d * h.unit
		}
		if head&1 == 1 {
			st = r.status()
		}
		var value float64
		if h.decimal {
			prevN += r.varint()
			value = float64(prevN) / h.scale
		} else {
			v ^= r.xor()
			value = math.Float64frombits(v)
		}
		if r.err != nil {
			return i
		}
		if !fn(Sample{At: t, Value: value, Status: st}) {
			return i + 1
		}
	}
	return int(h.n)
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

// peek is the next byte, not read yet.
func (r *reader) peek() byte {
	if r.err != nil || len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	return r.b[0]
}

// status reads a status code.
func (r *reader) status() uint32 {
	s := r.uvarint()
	if s > math.MaxUint32 {
		r.fail("status out of range")
	}
	return uint32(s)
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
