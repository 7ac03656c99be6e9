package uawire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
)

// The wire check guards gopcua's decoder against hostile lengths.
//
// gopcua's ua.Decode allocates a slice of the element count read from the
// wire before it reads a single element (up to 2^31 elements), and a
// Variant's ArrayDimensions likewise; nesting of Variants, DataValues,
// ExtensionObjects and DiagnosticInfos is unbounded. A message of a few
// dozen bytes can therefore exhaust memory or the stack, which is fatal to
// the whole process and cannot be recovered. CheckService walks the
// encoded message the way gopcua's decoder will, without allocating, and
// rejects it when a count exceeds what the remaining bytes can hold (every
// element takes at least one byte) or when nesting exceeds maxWireDepth.
// A message it accepts decodes with memory proportional to its size.

const (
	// maxWireDepth bounds the nesting of structures in one message.
	maxWireDepth = 64
)

// maxVariantArray is gopcua's own limit on Variant array lengths (a
// variable in gopcua; read once).
var maxVariantArray = int32(min(ua.MaxVariantArrayLength, math.MaxInt32))

var (
	errWireTruncated = errors.New("message truncated")
	errWireTooDeep   = errors.New("message nested too deeply")

	tBinaryDecoder = reflect.TypeOf((*ua.BinaryDecoder)(nil)).Elem()
	tTime          = reflect.TypeOf(time.Time{})
	tNodeID        = reflect.TypeOf((*ua.NodeID)(nil))
	tExpandedID    = reflect.TypeOf((*ua.ExpandedNodeID)(nil))
	tExtObject     = reflect.TypeOf((*ua.ExtensionObject)(nil))
	tVariant       = reflect.TypeOf((*ua.Variant)(nil))
	tDataValue     = reflect.TypeOf((*ua.DataValue)(nil))
	tDiagInfo      = reflect.TypeOf((*ua.DiagnosticInfo)(nil))
	tLocalized     = reflect.TypeOf((*ua.LocalizedText)(nil))
	tGUID          = reflect.TypeOf((*ua.GUID)(nil))
)

// typeCache maps a service or extension object type id (NodeId string) to
// its registered Go type. Only registered ids are cached, so the map is
// bounded by gopcua's registry.
var typeCache sync.Map

// serviceType returns the Go type gopcua decodes the service typeID into,
// or nil when the id is not a registered service.
func serviceType(typeID []byte, key string) reflect.Type {
	if t, ok := typeCache.Load("svc:" + key); ok {
		return t.(reflect.Type)
	}
	// DecodeService allocates the registered type before decoding into it;
	// with no body the decode stops at the first field.
	_, v, _ := ua.DecodeService(typeID)
	if v == nil {
		return nil
	}
	t := reflect.TypeOf(v)
	typeCache.Store("svc:"+key, t)
	return t
}

// extObjectType returns the Go type gopcua decodes an extension object
// with the encoded type id typeID into, or nil when it is not registered.
func extObjectType(typeID []byte, key string) reflect.Type {
	if t, ok := typeCache.Load("eo:" + key); ok {
		return t.(reflect.Type)
	}
	// A binary body of one zero byte: Decode allocates the registered type,
	// then stops at the end of the body.
	b := append(append([]byte{}, typeID...), 0x01, 1, 0, 0, 0, 0)
	eo := new(ua.ExtensionObject)
	_, _ = eo.Decode(b)
	if eo.Value == nil {
		return nil
	}
	t := reflect.TypeOf(eo.Value)
	typeCache.Store("eo:"+key, t)
	return t
}

// CheckService checks an encoded service message (type id, then body) —
// a request a server received or a response a client received. It returns BadServiceUnsupported for an unregistered type id and
// BadDecodingError for a message gopcua must not decode.
func CheckService(b []byte) ua.StatusCode {
	w := &wire{b: b}
	start := w.pos
	id, err := w.expandedNodeID()
	if err != nil {
		return ua.StatusBadDecodingError
	}
	t := serviceType(b[start:w.pos], id)
	if t == nil {
		return ua.StatusBadServiceUnsupported
	}
	if err := w.value(t); err != nil {
		return ua.StatusBadDecodingError
	}
	return ua.StatusOK
}

// wire is a read cursor over one encoded value.
type wire struct {
	b     []byte
	pos   int
	depth int
}

func (w *wire) rest() int { return len(w.b) - w.pos }

func (w *wire) skip(n int) error {
	if n < 0 || n > w.rest() {
		return errWireTruncated
	}
	w.pos += n
	return nil
}

func (w *wire) u8() (byte, error) {
	if w.rest() < 1 {
		return 0, errWireTruncated
	}
	w.pos++
	return w.b[w.pos-1], nil
}

func (w *wire) u32() (uint32, error) {
	if w.rest() < 4 {
		return 0, errWireTruncated
	}
	w.pos += 4
	return binary.LittleEndian.Uint32(w.b[w.pos-4:]), nil
}

func (w *wire) i32() (int32, error) {
	v, err := w.u32()
	return int32(v), err
}

// bytes skips a String, ByteString or XmlElement (-1 or 0 is empty).
func (w *wire) bytes() error {
	n, err := w.u32()
	if err != nil || n == 0 || n == math.MaxUint32 {
		return err
	}
	return w.skip(int(min(n, math.MaxInt32)))
}

func (w *wire) enter() error {
	w.depth++
	if w.depth > maxWireDepth {
		return errWireTooDeep
	}
	return nil
}

func (w *wire) leave() { w.depth-- }

// value checks one value of type t as gopcua's reflective decoder reads
// it: types with their own Decode first, then time, then by kind.
func (w *wire) value(t reflect.Type) error {
	if t.Implements(tBinaryDecoder) {
		return w.builtin(t)
	}
	if t.ConvertibleTo(tTime) {
		return w.skip(8)
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		return w.skip(1)
	case reflect.Int16, reflect.Uint16:
		return w.skip(2)
	case reflect.Int32, reflect.Uint32, reflect.Float32:
		return w.skip(4)
	case reflect.Int64, reflect.Uint64, reflect.Float64:
		return w.skip(8)
	case reflect.String:
		return w.bytes()
	case reflect.Slice, reflect.Array:
		return w.list(t)
	case reflect.Pointer:
		return w.value(t.Elem())
	case reflect.Struct:
		if err := w.enter(); err != nil {
			return err
		}
		defer w.leave()
		for i := range t.NumField() {
			if err := w.value(t.Field(i).Type); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("no wire check for %s", t)
}

// list checks a length-prefixed array: its count may not exceed the
// remaining bytes, as every element takes at least one.
func (w *wire) list(t reflect.Type) error {
	n, err := w.u32()
	if err != nil || n == math.MaxUint32 {
		return err
	}
	if n > math.MaxInt32 || int(n) > w.rest() || (t.Kind() == reflect.Array && int(n) > t.Len()) {
		return errWireTruncated
	}
	if t.Elem().Kind() == reflect.Uint8 {
		return w.skip(int(n))
	}
	for range n {
		if err := w.value(t.Elem()); err != nil {
			return err
		}
	}
	return nil
}

// builtin checks the types gopcua decodes with their own Decode method.
func (w *wire) builtin(t reflect.Type) error {
	switch t {
	case tNodeID:
		_, err := w.nodeID()
		return err
	case tExpandedID:
		_, err := w.expandedNodeID()
		return err
	case tExtObject:
		return w.extObject()
	case tVariant:
		return w.variant()
	case tDataValue:
		return w.dataValue()
	case tDiagInfo:
		return w.diagInfo()
	case tLocalized:
		return w.localizedText()
	case tGUID:
		return w.skip(16)
	}
	return fmt.Errorf("no wire check for %s", t)
}

// nodeID checks a NodeId and returns its encoding byte.
func (w *wire) nodeID() (byte, error) {
	mask, err := w.u8()
	if err != nil {
		return 0, err
	}
	switch mask & 0x0f {
	case 0: // two byte
		return mask, w.skip(1)
	case 1: // four byte
		return mask, w.skip(3)
	case 2: // numeric
		return mask, w.skip(6)
	case 3, 5: // string, byte string
		if err := w.skip(2); err != nil {
			return 0, err
		}
		return mask, w.bytes()
	case 4: // guid
		return mask, w.skip(18)
	}
	return 0, fmt.Errorf("invalid NodeId encoding %#x", mask)
}

// expandedNodeID checks an ExpandedNodeId and returns the NodeId part
// rendered as a registry key.
func (w *wire) expandedNodeID() (string, error) {
	start := w.pos
	mask, err := w.nodeID()
	if err != nil {
		return "", err
	}
	key := string(w.b[start:w.pos])
	if mask&0x80 != 0 {
		if err := w.bytes(); err != nil {
			return "", err
		}
	}
	if mask&0x40 != 0 {
		if err := w.skip(4); err != nil {
			return "", err
		}
	}
	return key, nil
}

func (w *wire) extObject() error {
	if err := w.enter(); err != nil {
		return err
	}
	defer w.leave()
	start := w.pos
	key, err := w.expandedNodeID()
	if err != nil {
		return err
	}
	typeID := w.b[start:w.pos]
	mask, err := w.u8()
	if err != nil || mask == ua.ExtensionObjectEmpty {
		return err
	}
	n, err := w.u32()
	if err != nil || n == 0 || n == math.MaxUint32 {
		return err
	}
	if n > math.MaxInt32 || int(n) > w.rest() {
		return errWireTruncated
	}
	body := w.b[w.pos : w.pos+int(n)]
	w.pos += int(n)
	if mask == ua.ExtensionObjectXML {
		return nil // read as one bounded string
	}
	t := extObjectType(typeID, key)
	if t == nil {
		return nil // unknown types are not decoded
	}
	sub := &wire{b: body, depth: w.depth}
	return sub.value(t)
}

// variant checks a Variant (Part 6 §5.2.2.16).
func (w *wire) variant() error {
	if err := w.enter(); err != nil {
		return err
	}
	defer w.leave()
	mask, err := w.u8()
	if err != nil {
		return err
	}
	typ := mask & 0x3f
	switch {
	case typ == 0:
		return nil
	case typ > 25:
		return fmt.Errorf("invalid Variant type %d", typ)
	case mask&0x80 == 0:
		return w.variantValue(typ)
	}
	n, err := w.i32()
	if err != nil {
		return err
	}
	if n < -1 || n > maxVariantArray || int(n) > w.rest() {
		return errWireTruncated
	}
	for range max(n, 0) {
		if err := w.variantValue(typ); err != nil {
			return err
		}
	}
	if mask&0x40 == 0 {
		return nil
	}
	dims, err := w.i32()
	if err != nil {
		return err
	}
	if dims < 0 || int(dims) > w.rest()/4 {
		return errWireTruncated
	}
	count := int64(1)
	for range dims {
		d, err := w.i32()
		if err != nil {
			return err
		}
		if d < 1 {
			return fmt.Errorf("invalid Variant dimension %d", d)
		}
		count = min(count*int64(d), int64(maxVariantArray)+1)
	}
	if dims > 0 && count != int64(n) {
		return fmt.Errorf("Variant dimensions do not match its %d elements", n)
	}
	return nil
}

func (w *wire) variantValue(typ byte) error {
	switch typ {
	case 1, 2, 3: // Boolean, SByte, Byte
		return w.skip(1)
	case 4, 5: // Int16, UInt16
		return w.skip(2)
	case 6, 7, 10, 19: // Int32, UInt32, Float, StatusCode
		return w.skip(4)
	case 8, 9, 11, 13: // Int64, UInt64, Double, DateTime
		return w.skip(8)
	case 12, 15, 16: // String, ByteString, XmlElement
		return w.bytes()
	case 14: // Guid
		return w.skip(16)
	case 17:
		_, err := w.nodeID()
		return err
	case 18:
		_, err := w.expandedNodeID()
		return err
	case 20: // QualifiedName
		if err := w.skip(2); err != nil {
			return err
		}
		return w.bytes()
	case 21:
		return w.localizedText()
	case 22:
		return w.extObject()
	case 23:
		return w.dataValue()
	case 24:
		return w.variant()
	case 25:
		return w.diagInfo()
	}
	return fmt.Errorf("invalid Variant type %d", typ)
}

func (w *wire) dataValue() error {
	if err := w.enter(); err != nil {
		return err
	}
	defer w.leave()
	mask, err := w.u8()
	if err != nil {
		return err
	}
	if mask&ua.DataValueValue != 0 {
		if err := w.variant(); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		bit  byte
		size int
	}{
		{ua.DataValueStatusCode, 4}, {ua.DataValueSourceTimestamp, 8}, {ua.DataValueSourcePicoseconds, 2},
		{ua.DataValueServerTimestamp, 8}, {ua.DataValueServerPicoseconds, 2},
	} {
		if mask&f.bit != 0 {
			if err := w.skip(f.size); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *wire) diagInfo() error {
	if err := w.enter(); err != nil {
		return err
	}
	defer w.leave()
	mask, err := w.u8()
	if err != nil {
		return err
	}
	for _, bit := range []byte{ua.DiagnosticInfoSymbolicID, ua.DiagnosticInfoNamespaceURI,
		ua.DiagnosticInfoLocale, ua.DiagnosticInfoLocalizedText} {
		if mask&bit != 0 {
			if err := w.skip(4); err != nil {
				return err
			}
		}
	}
	if mask&ua.DiagnosticInfoAdditionalInfo != 0 {
		if err := w.bytes(); err != nil {
			return err
		}
	}
	if mask&ua.DiagnosticInfoInnerStatusCode != 0 {
		if err := w.skip(4); err != nil {
			return err
		}
	}
	if mask&ua.DiagnosticInfoInnerDiagnosticInfo != 0 {
		return w.diagInfo()
	}
	return nil
}

func (w *wire) localizedText() error {
	mask, err := w.u8()
	if err != nil {
		return err
	}
	for _, bit := range []byte{ua.LocalizedTextLocale, ua.LocalizedTextText} {
		if mask&bit != 0 {
			if err := w.bytes(); err != nil {
				return err
			}
		}
	}
	return nil
}
