package modbus

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

// rawCases are values and the registers that hold them, both word orders.
var rawCases = []struct {
	typ        string
	big, small []uint16 // big and little word order
	value      any
}{
	{"int16", []uint16{0xfffe}, []uint16{0xfffe}, int16(-2)},
	{"int16", []uint16{0x7fff}, []uint16{0x7fff}, int16(math.MaxInt16)},
	{"uint16", []uint16{0xfffe}, []uint16{0xfffe}, uint16(65534)},
	{"int32", []uint16{0xffff, 0xfffe}, []uint16{0xfffe, 0xffff}, int32(-2)},
	{"int32", []uint16{0x8000, 0x0000}, []uint16{0x0000, 0x8000}, int32(math.MinInt32)},
	{"uint32", []uint16{0x1234, 0x5678}, []uint16{0x5678, 0x1234}, uint32(0x12345678)},
	{"float32", []uint16{0x3f80, 0x0000}, []uint16{0x0000, 0x3f80}, float32(1)},
	{"float32", []uint16{0xc2f6, 0xe979}, []uint16{0xe979, 0xc2f6}, math.Float32frombits(0xc2f6e979)},
	{"float64", []uint16{0x3ff0, 0, 0, 0}, []uint16{0, 0, 0, 0x3ff0}, 1.0},
	{"float64", []uint16{0x0123, 0x4567, 0x89ab, 0xcdef}, []uint16{0xcdef, 0x89ab, 0x4567, 0x0123}, math.Float64frombits(0x0123456789abcdef)},
}

func TestRawCodec(t *testing.T) {
	for _, c := range rawCases {
		for _, o := range []struct {
			order string
			words []uint16
		}{{"", c.big}, {"big", c.big}, {"little", c.small}} {
			got, err := DecodeRaw(c.typ, o.order, o.words)
			if err != nil || !sameValue(got, c.value) {
				t.Errorf("DecodeRaw(%s, %q, %04x) = %v, %v; want %v", c.typ, o.order, o.words, got, err, c.value)
			}
			w, err := EncodeRaw(c.typ, o.order, c.value)
			if err != nil || !reflect.DeepEqual(w, o.words) {
				t.Errorf("EncodeRaw(%s, %q, %v) = %04x, %v; want %04x", c.typ, o.order, c.value, w, err, o.words)
			}
		}
	}
	for _, bad := range []struct {
		typ string
		w   []uint16
	}{{"int32", []uint16{1}}, {"float64", []uint16{1, 2}}, {"bool", []uint16{1}}, {"int64", []uint16{1, 2, 3, 4}}} {
		if _, err := DecodeRaw(bad.typ, "", bad.w); err == nil {
			t.Errorf("DecodeRaw(%s, %v): no error", bad.typ, bad.w)
		}
	}
	if _, err := EncodeRaw("int32", "", int16(1)); err == nil {
		t.Error("EncodeRaw(int32, int16 value): no error")
	}
	if _, err := EncodeRaw("int16", "", "x"); err == nil {
		t.Error("EncodeRaw(int16, string): no error")
	}
}

// sameValue is ==, bit for bit for floats (NaN included).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	}
	return a == b
}

func TestScaling(t *testing.T) {
	tag := func(typ string, scale, offset *float64) deployment.Tag {
		return deployment.Tag{Name: "t", Table: H, Address: ptr(0), Type: typ, Scale: scale, Offset: offset}
	}
	for _, c := range []struct {
		tag   deployment.Tag
		words []uint16
		want  float64
	}{
		{tag("int16", ptr(0.1), nil), []uint16{235}, 23.5},
		{tag("int16", ptr(0.1), ptr(0.0)), []uint16{0xffe7}, -2.5}, // -25
		{tag("uint16", nil, ptr(-40.0)), []uint16{100}, 60},
		{tag("int32", ptr(0.01), ptr(1.0)), []uint16{0x0001, 0x0000}, 656.36},
		{tag("float32", ptr(2.0), ptr(0.5)), []uint16{0x3f80, 0x0000}, 2.5},
		{tag("float64", ptr(-1.0), nil), []uint16{0x3ff0, 0, 0, 0}, -1},
	} {
		vals, err := Decode(rq(H, 0, len(c.words), 0), []deployment.Tag{c.tag}, c.words, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := vals[0].(float64)
		if !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s ×%v +%v of %04x = %v (%T), want %v", c.tag.Type, c.tag.Scale, c.tag.Offset, c.words, vals[0], vals[0], c.want)
		}
	}

	for _, c := range []struct {
		tag     deployment.Tag
		value   any
		want    []uint16
		wantErr error
	}{
		{tag("int16", ptr(0.1), nil), 23.4, []uint16{234}, nil}, // 233.99… rounds to 234
		{tag("int16", ptr(0.1), nil), -2.5, []uint16{0xffe7}, nil},
		{tag("int16", ptr(0.1), nil), 3276.7, []uint16{32767}, nil},
		{tag("int16", ptr(0.1), nil), 3276.8, nil, drivers.ErrOutOfRange}, // raw 32768
		{tag("uint16", nil, ptr(-40.0)), -40, []uint16{0}, nil},
		{tag("uint16", nil, ptr(-40.0)), -41, nil, drivers.ErrOutOfRange}, // raw -1
		{tag("uint16", ptr(0.0), nil), 1, nil, drivers.ErrOutOfRange},     // scale 0
		{tag("int32", ptr(0.5), nil), math.NaN(), nil, drivers.ErrOutOfRange},
		{tag("float32", ptr(1e-30), nil), 1e10, nil, drivers.ErrOutOfRange}, // raw 1e40
		{tag("float32", ptr(2.0), ptr(0.5)), 2.5, []uint16{0x3f80, 0}, nil},
		{tag("int16", ptr(0.1), nil), true, nil, drivers.ErrTypeMismatch},
		{tag("int16", nil, nil), 40000, nil, drivers.ErrOutOfRange},
		{tag("int16", nil, nil), 1.5, nil, drivers.ErrOutOfRange},
		{tag("uint32", nil, nil), -1, nil, drivers.ErrOutOfRange},
		{tag("int16", nil, nil), "1", nil, drivers.ErrTypeMismatch},
	} {
		got, err := Encode(c.tag, c.value)
		if c.wantErr != nil {
			if !errors.Is(err, c.wantErr) {
				t.Errorf("Encode(%s ×%v +%v, %v) = %v, %v; want %v", c.tag.Type, c.tag.Scale, c.tag.Offset, c.value, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Encode(%s ×%v +%v, %v) = %04x, %v; want %04x", c.tag.Type, c.tag.Scale, c.tag.Offset, c.value, got, err, c.want)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	tags := []deployment.Tag{tg(H, 0, "int32"), tg(C, 0, "bool"), tg(H, 10, "int16")}
	for _, c := range []struct {
		name  string
		req   Request
		words []uint16
		bits  []bool
	}{
		{"short answer", rq(H, 0, 2, 0), []uint16{1}, nil},
		{"long answer", rq(H, 0, 2, 0), []uint16{1, 2, 3}, nil},
		{"bits for registers", rq(H, 0, 2, 0), nil, []bool{true, true}},
		{"no such tag", rq(H, 0, 2, 7), []uint16{1, 2}, nil},
		{"negative tag", rq(H, 0, 2, -1), []uint16{1, 2}, nil},
		{"tag of another table", rq(H, 0, 1, 1), []uint16{1}, nil},
		{"tag outside", rq(H, 0, 2, 2), []uint16{1, 2}, nil},
		{"tag half outside", rq(H, 1, 1, 0), []uint16{1}, nil},
		{"bits short", rq(C, 0, 1, 1), nil, nil},
	} {
		if vals, err := Decode(c.req, tags, c.words, c.bits); err == nil {
			t.Errorf("%s: Decode = %v, no error", c.name, vals)
		}
	}
}

var types = []string{"int16", "uint16", "int32", "uint32", "float32", "float64"}

// genRaw draws a value of Go type typ, all bit patterns (NaNs too).
func genRaw(t *rapid.T, typ string) any {
	switch typ {
	case "int16":
		return rapid.Int16().Draw(t, "v")
	case "uint16":
		return rapid.Uint16().Draw(t, "v")
	case "int32":
		return rapid.Int32().Draw(t, "v")
	case "uint32":
		return rapid.Uint32().Draw(t, "v")
	case "float32":
		return math.Float32frombits(rapid.Uint32().Draw(t, "bits"))
	}
	return math.Float64frombits(rapid.Uint64().Draw(t, "bits"))
}

// TestCodecRoundTrip: for every type and word order, decode(encode(v)) == v
// bit for bit, and encode(decode(w)) == w: the codec is a bijection.
func TestCodecRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		typ := rapid.SampledFrom(types).Draw(t, "type")
		order := rapid.SampledFrom([]string{"", "big", "little"}).Draw(t, "order")
		v := genRaw(t, typ)
		w, err := EncodeRaw(typ, order, v)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRaw(typ, order, w)
		if err != nil || !sameValue(back, v) {
			t.Fatalf("%s %q: %v → %04x → %v, %v", typ, order, v, w, back, err)
		}
		words := rapid.SliceOfN(rapid.Uint16(), Width(typ), Width(typ)).Draw(t, "words")
		dv, err := DecodeRaw(typ, order, words)
		if err != nil {
			t.Fatal(err)
		}
		again, err := EncodeRaw(typ, order, dv)
		if err != nil || !reflect.DeepEqual(again, words) {
			t.Fatalf("%s %q: %04x → %v → %04x, %v", typ, order, words, dv, again, err)
		}
	})
}

// TestPlanDecodeRoundTrip runs the whole read path on a register image:
// tags get values, Encode writes them into the image, Plan + Decode of the
// image's slices give every tag its value back — exactly for a plain tag,
// within half a scale step for a scaled integer tag.
func TestPlanDecodeRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tags := genTags(t, true)
		values := make([]any, len(tags))
		image := map[string][]uint16{H: make([]uint16, 65536), I: make([]uint16, 65536)}
		bits := map[string][]bool{C: make([]bool, 65536), D: make([]bool, 65536)}
		for i := range tags {
			tag := &tags[i]
			a := *tag.Address
			if isBitTable(tag.Table) {
				b := rapid.Bool().Draw(t, "bit")
				values[i], bits[tag.Table][a] = b, b
				continue
			}
			if rapid.IntRange(0, 3).Draw(t, "scaled") == 0 {
				tag.Scale = ptr(rapid.SampledFrom([]float64{0.1, 0.5, 2, -1, 0.001}).Draw(t, "scale"))
				tag.Offset = ptr(rapid.Float64Range(-100, 100).Draw(t, "offset"))
			}
			raw := genRaw(t, tag.Type)
			w, err := EncodeRaw(tag.Type, tag.WordOrder, raw)
			if err != nil {
				t.Fatal(err)
			}
			copy(image[tag.Table][a:], w)
			values[i] = scale(*tag, raw)
			if drivers.Scaled(*tag) && !isFloat(tag.Type) {
				// The write path must find the same registers again.
				back, err := Encode(*tag, values[i])
				if err != nil || !reflect.DeepEqual(back, w) {
					t.Fatalf("Encode(%s ×%v +%v, %v) = %04x, %v; want %04x", tag.Type, *tag.Scale, *tag.Offset, values[i], back, err, w)
				}
			}
		}
		plan, err := Plan(tags, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range plan {
			var ws []uint16
			var bs []bool
			if isBitTable(r.Table) {
				bs = bits[r.Table][r.Start : r.End()+1]
			} else {
				ws = image[r.Table][r.Start : r.End()+1]
			}
			vals, err := Decode(r, tags, ws, bs)
			if err != nil {
				t.Fatal(err)
			}
			for k, i := range r.Tags {
				if !sameValue(vals[k], values[i]) {
					t.Fatalf("tag %d (%s %d %s %q): decoded %v, wrote %v", i, tags[i].Table, *tags[i].Address, tags[i].Type, tags[i].WordOrder, vals[k], values[i])
				}
				if !drivers.Scaled(tags[i]) && !isBitTable(r.Table) {
					w, err := Encode(tags[i], vals[k])
					off := *tags[i].Address - int(r.Start)
					if err != nil || !reflect.DeepEqual(w, ws[off:off+Width(tags[i].Type)]) {
						t.Fatalf("tag %d: Encode(%v) = %04x, %v; registers %04x", i, vals[k], w, err, ws[off:off+Width(tags[i].Type)])
					}
				}
			}
		}
	})
}

func isFloat(typ string) bool { return typ == "float32" || typ == "float64" }
