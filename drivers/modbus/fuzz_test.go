package modbus

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

// FuzzDecode feeds the decoder what a device might answer: the first bytes
// describe up to 16 tags, the rest are the registers and bits of the
// answers, too few, too many or just right. Decode must never panic; an
// answer of the right length must decode, and a plain register tag's value
// must encode back to the registers it came from.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{2, 0x00, 0, 0, 0x12, 0, 2, 0xff, 0xfe, 0x12, 0x34, 0x56, 0x78})
	f.Add([]byte{3, 0x25, 0, 10, 0x41, 0, 12, 0x82, 0, 0, 0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{1, 0x05, 0xff, 0xfc, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		n := int(data[0] % 17)
		data = data[1:]
		var tags []deployment.Tag
		for k := 0; k < n && len(data) >= 3; k++ {
			tags = append(tags, fuzzTag(data[:3]))
			data = data[3:]
		}
		plan, err := Plan(tags, DefaultLimits)
		if err != nil {
			return // a tag the planner refuses (top of the address space)
		}
		for _, r := range plan {
			// Take the answer from the data: the right length unless the
			// next byte says otherwise.
			count := int(r.Count)
			if len(data) > 0 && data[0]&0x80 != 0 {
				count = int(data[0] & 0x7f)
			}
			if len(data) > 0 {
				data = data[1:]
			}
			words := make([]uint16, 0, count)
			bits := make([]bool, 0, count)
			for k := 0; k < count; k++ {
				var w uint16
				if len(data) >= 2 {
					w = binary.BigEndian.Uint16(data)
					data = data[2:]
				}
				words = append(words, w)
				bits = append(bits, w&1 == 1)
			}
			var ws []uint16
			var bs []bool
			if isBitTable(r.Table) {
				bs = bits
			} else {
				ws = words
			}
			vals, err := Decode(r, tags, ws, bs)
			if count != int(r.Count) {
				if err == nil {
					t.Fatalf("%d values for a request of %d decoded", count, r.Count)
				}
				continue
			}
			if err != nil {
				t.Fatalf("Decode(%+v): %v", r, err)
			}
			for k, i := range r.Tags {
				tag := tags[i]
				if isBitTable(r.Table) || drivers.Scaled(tag) {
					continue
				}
				off := *tag.Address - int(r.Start)
				w, err := Encode(tag, vals[k])
				if err != nil || !reflect.DeepEqual(w, ws[off:off+Width(tag.Type)]) {
					t.Fatalf("tag %d: %04x → %v → %04x, %v", i, ws[off:off+Width(tag.Type)], vals[k], w, err)
				}
			}
		}
		// A request that does not match its tags is refused, not a panic.
		if len(data) >= 5 && len(tags) > 0 {
			r := Request{Table: tableOrder[data[0]%4], Start: binary.BigEndian.Uint16(data[1:]), Count: uint16(data[3]), Tags: []int{int(data[4]) - 3}}
			_, _ = Decode(r, tags, make([]uint16, data[3]), make([]bool, data[3]))
			_ = SplitAtGaps(r, tags)
		}
	})
}

// fuzzTag is a tag from 3 bytes: table (2 bits), type (3 bits), word order
// (1 bit), scaled (1 bit); a 16-bit address, near 0 or near the top.
func fuzzTag(b []byte) deployment.Tag {
	table := tableOrder[b[0]&3]
	typ := "bool"
	if !isBitTable(table) {
		typ = types[int(b[0]>>2&7)%len(types)]
	}
	addr := int(binary.BigEndian.Uint16(b[1:]))
	if addr < 0xff00 {
		addr %= 300
	}
	tag := tg(table, addr, typ)
	if b[0]&0x20 != 0 {
		tag.WordOrder = deployment.WordOrderLittle
	}
	if b[0]&0x40 != 0 {
		tag.Scale = ptr(0.5)
	}
	return tag
}
