package drivers

import (
	"fmt"
	"math"

	"github.com/otopcua/otopcua/deployment"
)

// Scaled reports whether t's readings are raw × scale + offset: Scale or
// Offset is set and the tag is not a bool (a bool is never scaled).
func Scaled(t deployment.Tag) bool {
	return t.Type != deployment.TypeBool && (t.Scale != nil || t.Offset != nil)
}

// ValueType is the type of t's readings, a deployment.Type* name: float64
// for a scaled tag, else t.Type. Reading.Value holds the Go type of that
// name, and the tag's OPC UA DataType is the matching built-in type.
func ValueType(t deployment.Tag) string {
	if Scaled(t) {
		return deployment.TypeFloat64
	}
	return t.Type
}

// Convert returns v, a Go bool, integer or float, as the Go type that typ
// (a deployment.Type* name) names, or an error:
//
//   - ErrTypeMismatch for a bool where a number is wanted, a number where a
//     bool is wanted, or a v that is neither;
//   - ErrOutOfRange for an integer type when v is outside the type's range,
//     or a float that is not a whole number (NaN and ±Inf included), and
//     for float32 when a finite v exceeds float32's range.
//
// It never wraps: a value that does not fit is an error.
func Convert(v any, typ string) (any, error) {
	if typ == deployment.TypeBool {
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("%w: %T for bool", ErrTypeMismatch, v)
	}
	if f, ok := v.(float32); ok && typ == deployment.TypeFloat32 {
		return f, nil // as it is, NaN payload included
	}
	n, err := numberOf(v)
	if err != nil {
		return nil, err
	}
	switch typ {
	case deployment.TypeFloat64:
		return n.float(), nil
	case deployment.TypeFloat32:
		f := n.float()
		f32 := float32(f)
		if math.IsInf(float64(f32), 0) && !math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: %v for float32", ErrOutOfRange, f)
		}
		return f32, nil
	case deployment.TypeInt16:
		i, err := n.integer(math.MinInt16, math.MaxInt16, typ)
		return int16(i), err
	case deployment.TypeUint16:
		i, err := n.integer(0, math.MaxUint16, typ)
		return uint16(i), err
	case deployment.TypeInt32:
		i, err := n.integer(math.MinInt32, math.MaxInt32, typ)
		return int32(i), err
	case deployment.TypeUint32:
		i, err := n.integer(0, math.MaxUint32, typ)
		return uint32(i), err
	}
	return nil, fmt.Errorf("unknown tag type %q", typ)
}

// number is a Go numeric value in one of three exact forms.
type number struct {
	kind byte // 'i' signed, 'u' unsigned, 'f' float
	i    int64
	u    uint64
	f    float64
}

func numberOf(v any) (number, error) {
	switch x := v.(type) {
	case int:
		return number{kind: 'i', i: int64(x)}, nil
	case int8:
		return number{kind: 'i', i: int64(x)}, nil
	case int16:
		return number{kind: 'i', i: int64(x)}, nil
	case int32:
		return number{kind: 'i', i: int64(x)}, nil
	case int64:
		return number{kind: 'i', i: x}, nil
	case uint:
		return number{kind: 'u', u: uint64(x)}, nil
	case uint8:
		return number{kind: 'u', u: uint64(x)}, nil
	case uint16:
		return number{kind: 'u', u: uint64(x)}, nil
	case uint32:
		return number{kind: 'u', u: uint64(x)}, nil
	case uint64:
		return number{kind: 'u', u: x}, nil
	case float32:
		return number{kind: 'f', f: float64(x)}, nil
	case float64:
		return number{kind: 'f', f: x}, nil
	}
	return number{}, fmt.Errorf("%w: %T is not a number", ErrTypeMismatch, v)
}

func (n number) float() float64 {
	switch n.kind {
	case 'i':
		return float64(n.i)
	case 'u':
		return float64(n.u)
	}
	return n.f
}

// integer returns n as an int64 in [lo, hi] (bounds of a type no wider than
// 32 bits, so exact in float64) or ErrOutOfRange.
func (n number) integer(lo, hi int64, typ string) (int64, error) {
	switch n.kind {
	case 'i':
		if n.i >= lo && n.i <= hi {
			return n.i, nil
		}
	case 'u':
		if n.u <= uint64(hi) {
			return int64(n.u), nil
		}
	case 'f':
		if n.f == math.Trunc(n.f) && n.f >= float64(lo) && n.f <= float64(hi) {
			return int64(n.f), nil
		}
	}
	return 0, fmt.Errorf("%w: %v for %s", ErrOutOfRange, n.value(), typ)
}

func (n number) value() any {
	switch n.kind {
	case 'i':
		return n.i
	case 'u':
		return n.u
	}
	return n.f
}
