package modbus

import (
	"fmt"
	"math"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

// Decode maps the answer to req back to the value of each of its tags, in
// req.Tags order: words for a holding or input request, bits for a coil or
// discrete one, each exactly req.Count long. tags are the planned tags.
// Values have the tag's drivers.ValueType. Decode is pure and fails (never
// panics) on an answer of the wrong length or a request that does not fit
// its tags.
func Decode(req Request, tags []deployment.Tag, words []uint16, bits []bool) ([]any, error) {
	n := len(words)
	if isBitTable(req.Table) {
		n = len(bits)
	}
	if n != int(req.Count) {
		return nil, fmt.Errorf("modbus: %d values for a request of %d", n, req.Count)
	}
	out := make([]any, len(req.Tags))
	for k, i := range req.Tags {
		if i < 0 || i >= len(tags) {
			return nil, fmt.Errorf("modbus: request names tag %d of %d", i, len(tags))
		}
		t := tags[i]
		s, err := spanOf(t)
		if err != nil || t.Table != req.Table || s.start < int(req.Start) || s.end > req.End() {
			return nil, fmt.Errorf("modbus: tag %q is not in request %s %d+%d", t.Name, req.Table, req.Start, req.Count)
		}
		off := s.start - int(req.Start)
		if isBitTable(req.Table) {
			out[k] = bits[off]
			continue
		}
		raw, err := DecodeRaw(t.Type, t.WordOrder, words[off:off+Width(t.Type)])
		if err != nil {
			return nil, err
		}
		out[k] = scale(t, raw)
	}
	return out, nil
}

// DecodeRaw is the value of type typ held in w (Width(typ) registers) in
// word order order ("" is big: the most significant word first). Within a
// register the bytes are big-endian, as the protocol has it.
func DecodeRaw(typ, order string, w []uint16) (any, error) {
	if Width(typ) == 0 || typ == deployment.TypeBool || len(w) != Width(typ) {
		return nil, fmt.Errorf("modbus: %d registers for type %q", len(w), typ)
	}
	switch typ {
	case deployment.TypeInt16:
		return int16(w[0]), nil
	case deployment.TypeUint16:
		return w[0], nil
	}
	var u uint64
	for k := range w {
		u = u<<16 | uint64(w[wordIndex(order, k, len(w))])
	}
	switch typ {
	case deployment.TypeInt32:
		return int32(uint32(u)), nil
	case deployment.TypeUint32:
		return uint32(u), nil
	case deployment.TypeFloat32:
		return math.Float32frombits(uint32(u)), nil
	default: // float64
		return math.Float64frombits(u), nil
	}
}

// EncodeRaw is the registers that hold raw, a value of Go type typ, in word
// order order: the inverse of DecodeRaw.
func EncodeRaw(typ, order string, raw any) ([]uint16, error) {
	var u uint64
	var is string // the type name of raw
	switch v := raw.(type) {
	case int16:
		u, is = uint64(uint16(v)), deployment.TypeInt16
	case uint16:
		u, is = uint64(v), deployment.TypeUint16
	case int32:
		u, is = uint64(uint32(v)), deployment.TypeInt32
	case uint32:
		u, is = uint64(v), deployment.TypeUint32
	case float32:
		u, is = uint64(math.Float32bits(v)), deployment.TypeFloat32
	case float64:
		u, is = math.Float64bits(v), deployment.TypeFloat64
	}
	if is == "" || is != typ {
		return nil, fmt.Errorf("modbus: cannot encode %T as type %q", raw, typ)
	}
	w := make([]uint16, Width(typ))
	for k := len(w) - 1; k >= 0; k-- {
		w[wordIndex(order, k, len(w))] = uint16(u)
		u >>= 16
	}
	return w, nil
}

// Encode is the registers to write for value v of register tag t: inverse
// scaling for a scaled tag (raw = (v − offset) / scale, rounded to the
// nearest integer for an integer type), then a range-checked conversion to
// t.Type (drivers.Convert) and EncodeRaw. A value that does not fit is
// drivers.ErrOutOfRange, a bool drivers.ErrTypeMismatch.
func Encode(t deployment.Tag, v any) ([]uint16, error) {
	raw, err := unscale(t, v)
	if err != nil {
		return nil, err
	}
	return EncodeRaw(t.Type, t.WordOrder, raw)
}

// wordIndex is the register index of word k (0 = most significant) of a
// value of n registers in word order order.
func wordIndex(order string, k, n int) int {
	if order == deployment.WordOrderLittle {
		return n - 1 - k
	}
	return k
}

func scaleOffset(t deployment.Tag) (scale, offset float64) {
	scale = 1
	if t.Scale != nil {
		scale = *t.Scale
	}
	if t.Offset != nil {
		offset = *t.Offset
	}
	return scale, offset
}

// scale is raw × scale + offset for a scaled tag, raw otherwise.
func scale(t deployment.Tag, raw any) any {
	if !drivers.Scaled(t) {
		return raw
	}
	var f float64
	switch v := raw.(type) {
	case int16:
		f = float64(v)
	case uint16:
		f = float64(v)
	case int32:
		f = float64(v)
	case uint32:
		f = float64(v)
	case float32:
		f = float64(v)
	case float64:
		f = v
	}
	s, o := scaleOffset(t)
	return f*s + o
}

// unscale is the raw value of t.Type for the value v of t.
func unscale(t deployment.Tag, v any) (any, error) {
	if !drivers.Scaled(t) {
		return drivers.Convert(v, t.Type)
	}
	fv, err := drivers.Convert(v, deployment.TypeFloat64)
	if err != nil {
		return nil, err
	}
	f := fv.(float64)
	s, o := scaleOffset(t)
	if s == 0 {
		return nil, fmt.Errorf("%w: tag %q has scale 0", drivers.ErrOutOfRange, t.Name)
	}
	raw := (f - o) / s
	if math.IsInf(raw, 0) && !math.IsInf(f, 0) {
		return nil, fmt.Errorf("%w: %v for tag %q", drivers.ErrOutOfRange, f, t.Name)
	}
	if t.Type != deployment.TypeFloat32 && t.Type != deployment.TypeFloat64 {
		raw = math.Round(raw) // NaN and ±Inf stay, and Convert refuses them
	}
	return drivers.Convert(raw, t.Type)
}
