package drivers

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/otopcua/otopcua/deployment"
)

func ptr[T any](v T) *T { return &v }

func TestValueType(t *testing.T) {
	for _, c := range []struct {
		tag  deployment.Tag
		want string
	}{
		{deployment.Tag{Type: "int16"}, "int16"},
		{deployment.Tag{Type: "int16", Scale: ptr(0.1)}, "float64"},
		{deployment.Tag{Type: "uint32", Offset: ptr(-40.0)}, "float64"},
		{deployment.Tag{Type: "float32", Scale: ptr(1.0)}, "float64"},
		{deployment.Tag{Type: "bool", Scale: ptr(2.0)}, "bool"},
		{deployment.Tag{Type: "float32"}, "float32"},
	} {
		if got := ValueType(c.tag); got != c.want {
			t.Errorf("ValueType(%+v) = %s, want %s", c.tag, got, c.want)
		}
	}
}

func TestConvert(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		v       any
		typ     string
		want    any
		wantErr error
	}{
		{true, "bool", true, nil},
		{1, "bool", nil, ErrTypeMismatch},
		{true, "int16", nil, ErrTypeMismatch},
		{"12", "int16", nil, ErrTypeMismatch},
		{nil, "float64", nil, ErrTypeMismatch},
		{int64(32767), "int16", int16(32767), nil},
		{int64(32768), "int16", nil, ErrOutOfRange},
		{-32768, "int16", int16(-32768), nil},
		{-32769, "int16", nil, ErrOutOfRange},
		{uint64(65535), "uint16", uint16(65535), nil},
		{65536, "uint16", nil, ErrOutOfRange},
		{-1, "uint16", nil, ErrOutOfRange},
		{int8(-1), "uint32", nil, ErrOutOfRange},
		{uint64(math.MaxUint32), "uint32", uint32(math.MaxUint32), nil},
		{uint64(math.MaxUint32 + 1), "uint32", nil, ErrOutOfRange},
		{uint64(math.MaxUint64), "int32", nil, ErrOutOfRange},
		{int64(math.MinInt32), "int32", int32(math.MinInt32), nil},
		{int64(math.MinInt32 - 1), "int32", nil, ErrOutOfRange},
		{12.0, "int16", int16(12), nil},
		{12.5, "int16", nil, ErrOutOfRange},
		{nan, "int32", nil, ErrOutOfRange},
		{math.Inf(1), "uint32", nil, ErrOutOfRange},
		{float32(-3), "int16", int16(-3), nil},
		{1e39, "float32", nil, ErrOutOfRange},
		{-1e39, "float32", nil, ErrOutOfRange},
		{math.Inf(-1), "float32", float32(math.Inf(-1)), nil},
		{3.5, "float32", float32(3.5), nil},
		{int16(-7), "float64", -7.0, nil},
		{uint32(7), "float32", float32(7), nil},
		{float32(1.25), "float64", 1.25, nil},
		{1, "int64", nil, nil}, // unknown type: an error, not a sentinel
	} {
		got, err := Convert(c.v, c.typ)
		switch {
		case c.typ == "int64":
			if err == nil {
				t.Errorf("Convert(%v, %s): no error", c.v, c.typ)
			}
		case c.wantErr != nil:
			if !errors.Is(err, c.wantErr) {
				t.Errorf("Convert(%v (%T), %s) = %v, %v; want %v", c.v, c.v, c.typ, got, err, c.wantErr)
			}
		case err != nil || got != c.want:
			t.Errorf("Convert(%v (%T), %s) = %v (%T), %v; want %v (%T)", c.v, c.v, c.typ, got, got, err, c.want, c.want)
		}
	}
	// A float32 NaN keeps its bits.
	odd := math.Float32frombits(0x7fa00001)
	got, err := Convert(odd, "float32")
	if err != nil || math.Float32bits(got.(float32)) != 0x7fa00001 {
		t.Errorf("Convert(float32 NaN) = %v, %v", got, err)
	}
}

// TestConvertIntegers checks Convert against the plain definition: an
// integer fits a type iff it lies within the type's bounds, and then the
// conversion keeps it.
func TestConvertIntegers(t *testing.T) {
	bounds := map[string][2]int64{
		"int16": {math.MinInt16, math.MaxInt16}, "uint16": {0, math.MaxUint16},
		"int32": {math.MinInt32, math.MaxInt32}, "uint32": {0, math.MaxUint32},
	}
	rapid.Check(t, func(t *rapid.T) {
		typ := rapid.SampledFrom([]string{"int16", "uint16", "int32", "uint32"}).Draw(t, "typ")
		v := rapid.OneOf(rapid.Int64(), rapid.Int64Range(-70000, 70000),
			rapid.Int64Range(math.MinInt32-2, math.MinInt32+2), rapid.Int64Range(math.MaxUint32-2, math.MaxUint32+2)).Draw(t, "v")
		asFloat := rapid.Bool().Draw(t, "asFloat")
		var in any = v
		if asFloat {
			in = float64(v)
			if int64(float64(v)) != v {
				return // not exact in float64
			}
		}
		got, err := Convert(in, typ)
		b := bounds[typ]
		fits := v >= b[0] && v <= b[1]
		if !fits {
			if !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("Convert(%v, %s) = %v, %v; want ErrOutOfRange", in, typ, got, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Convert(%v, %s): %v", in, typ, err)
		}
		back, _ := Convert(got, "float64")
		if back.(float64) != float64(v) {
			t.Fatalf("Convert(%v, %s) = %v", in, typ, got)
		}
	})
}
