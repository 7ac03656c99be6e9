package uabin

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// DecodePublishNotifications decodes a service message — the FourByte
// type id AppendResponse writes, then the body — holding a PublishResponse
// that carries data changes, the message otopcua's server sends a
// subscriber, and returns its SubscriptionID and NotificationMessage as
// ua.DecodeService would build them. The rest of
// the response is checked to be well formed and empty — no
// ServiceDiagnostics, StringTable, AdditionalHeader, Results or
// DiagnosticInfos — and not returned.
//
// It decodes scalar values of the built-in types a tag holds (Boolean,
// the integers, Float, Double, String, DateTime, ByteString, StatusCode,
// XmlElement) and Null. Anything else — an array or structured value,
// an event or status-change notification, diagnostics — and a malformed
// or truncated body, and another type id, give ErrUnhandled: the caller
// decodes those with ua.DecodeService, which also says what is wrong with
// a malformed one.
func DecodePublishNotifications(b []byte) (subscriptionID uint32, msg *ua.NotificationMessage, err error) {
	r := reader{b: b}
	r.expect(publishTypeID...)
	// ResponseHeader: Timestamp, RequestHandle, ServiceResult, then an
	// empty ServiceDiagnostics, StringTable and AdditionalHeader.
	r.skip(16)
	r.expect(0x00)             // DiagnosticInfo mask: nothing
	r.emptyArray()             // StringTable
	r.expect(0x00, 0x00, 0x00) // ExtensionObject: TwoByte NodeId 0, no body
	subscriptionID = r.u32()
	r.emptyArray() // AvailableSequenceNumbers
	r.skip(1)      // MoreNotifications
	msg = &ua.NotificationMessage{SequenceNumber: r.u32(), PublishTime: r.time()}
	n := r.length(8)
	if n >= 0 {
		msg.NotificationData = make([]*ua.ExtensionObject, n)
		for i := range msg.NotificationData {
			msg.NotificationData[i] = r.dataChange()
		}
	}
	r.emptyArray() // Results
	r.emptyArray() // DiagnosticInfos
	if r.bad || len(r.b) != 0 {
		return 0, nil, ErrUnhandled
	}
	return subscriptionID, msg, nil
}

// publishTypeID is the FourByte type id of a PublishResponse, as
// AppendResponse writes it.
var publishTypeID = appendTypeID(nil, id.PublishResponse_Encoding_DefaultBinary)

// dataChangeTypeID is the type id of a DataChangeNotification body, as
// decoded.
var dataChangeTypeID = ua.NewFourByteExpandedNodeID(0, id.DataChangeNotification_Encoding_DefaultBinary)

// reader reads a little-endian OPC UA binary body; after the first
// mismatch (bad) every read returns zero values.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) skip(n int) { r.take(n) }

// expect consumes want or marks the body unhandled.
func (r *reader) expect(want ...byte) {
	got := r.take(len(want))
	for i := range got {
		if got[i] != want[i] {
			r.bad = true
		}
	}
}

func (r *reader) u8() uint8 {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if v := r.take(2); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

// time reads a DateTime as Buffer.ReadTime does.
func (r *reader) time() time.Time {
	ts := r.u64()
	if ts == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64((ts-116444736000000000)*100)).UTC()
}

// length reads an array or string length: -1 (null) or a count whose
// elements, each at least min bytes, fit in what is left.
func (r *reader) length(min int) int {
	n := int32(r.u32())
	switch {
	case r.bad:
		return -1
	case n == -1:
		return -1
	case n < 0 || int64(n)*int64(min) > int64(len(r.b)):
		r.bad = true
		return -1
	}
	return int(n)
}

// emptyArray consumes a null or empty array.
func (r *reader) emptyArray() {
	if n := r.length(0); n > 0 {
		r.bad = true
	}
}

// dataChange reads an ExtensionObject holding a DataChangeNotification.
func (r *reader) dataChange() *ua.ExtensionObject {
	r.expect(0x01, 0x00) // FourByte NodeId, namespace 0
	if r.u16() != id.DataChangeNotification_Encoding_DefaultBinary {
		r.bad = true
	}
	r.expect(ua.ExtensionObjectBinary)
	size := r.length(1)
	if size < 0 {
		r.bad = true
		return nil
	}
	body := reader{b: r.take(size), bad: r.bad}
	dc := &ua.DataChangeNotification{}
	if n := body.length(5); n >= 0 {
		dc.MonitoredItems = make([]*ua.MonitoredItemNotification, n)
		for i := range dc.MonitoredItems {
			dc.MonitoredItems[i] = &ua.MonitoredItemNotification{ClientHandle: body.u32(), Value: body.dataValue()}
		}
	}
	if n := body.length(0); n == 0 {
		dc.DiagnosticInfos = []*ua.DiagnosticInfo{}
	} else if n > 0 {
		body.bad = true
	}
	if body.bad || len(body.b) != 0 {
		r.bad = true
	}
	return &ua.ExtensionObject{EncodingMask: ua.ExtensionObjectBinary, TypeID: dataChangeTypeID, Value: dc}
}

// dataValue reads a DataValue as DataValue.Decode does (an empty Variant
// when the value is absent).
func (r *reader) dataValue() *ua.DataValue {
	dv := &ua.DataValue{EncodingMask: r.u8(), Value: &ua.Variant{}}
	m := dv.EncodingMask
	if m&ua.DataValueValue != 0 {
		dv.Value = r.variant()
	}
	if m&ua.DataValueStatusCode != 0 {
		dv.Status = ua.StatusCode(r.u32())
	}
	if m&ua.DataValueSourceTimestamp != 0 {
		dv.SourceTimestamp = r.time()
	}
	if m&ua.DataValueSourcePicoseconds != 0 {
		dv.SourcePicoseconds = r.u16()
	}
	if m&ua.DataValueServerTimestamp != 0 {
		dv.ServerTimestamp = r.time()
	}
	if m&ua.DataValueServerPicoseconds != 0 {
		dv.ServerPicoseconds = r.u16()
	}
	return dv
}

// variant reads a scalar Variant of a built-in type; anything else marks
// the body unhandled.
func (r *reader) variant() *ua.Variant {
	mask := r.u8()
	if mask&(ua.VariantArrayValues|ua.VariantArrayDimensions) != 0 {
		r.bad = true
		return &ua.Variant{}
	}
	var v any
	switch ua.TypeID(mask) {
	case ua.TypeIDNull:
		return &ua.Variant{}
	case ua.TypeIDBoolean:
		v = r.u8() != 0
	case ua.TypeIDSByte:
		v = int8(r.u8())
	case ua.TypeIDByte:
		v = r.u8()
	case ua.TypeIDInt16:
		v = int16(r.u16())
	case ua.TypeIDUint16:
		v = r.u16()
	case ua.TypeIDInt32:
		v = int32(r.u32())
	case ua.TypeIDUint32:
		v = r.u32()
	case ua.TypeIDInt64:
		v = int64(r.u64())
	case ua.TypeIDUint64:
		v = r.u64()
	case ua.TypeIDFloat:
		v = math.Float32frombits(r.u32())
	case ua.TypeIDDouble:
		v = math.Float64frombits(r.u64())
	case ua.TypeIDString:
		v = r.string()
	case ua.TypeIDXMLElement:
		v = ua.XMLElement(r.string())
	case ua.TypeIDDateTime:
		v = r.time()
	case ua.TypeIDByteString:
		v = r.byteString()
	case ua.TypeIDStatusCode:
		v = ua.StatusCode(r.u32())
	default:
		r.bad = true
		return &ua.Variant{}
	}
	if r.bad {
		return &ua.Variant{}
	}
	out, err := ua.NewVariant(v)
	if err != nil {
		r.bad = true
		return &ua.Variant{}
	}
	return out
}

// string reads a String as Buffer.ReadString does ("" for null).
func (r *reader) string() string {
	n := r.length(1)
	if n <= 0 {
		return ""
	}
	return string(r.take(n))
}

// byteString reads a ByteString as Buffer.ReadBytes does (nil for null
// and for empty), into a slice of its own.
func (r *reader) byteString() []byte {
	n := r.length(1)
	if n <= 0 {
		return nil
	}
	return append([]byte(nil), r.take(n)...)
}
