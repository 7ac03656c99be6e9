package uabin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gopcua/opcua/ua"
)

// ErrUnhandled means the fast path met a value ua.Encode would refuse or
// panic on; AppendResponse then uses ua.Encode for the whole response.
var ErrUnhandled = errors.New("uabin: value not handled by the fast encoder")

// null is the length of a null String, ByteString or array.
const null = 0xffffffff

// Canonical quiet NaNs, as gopcua writes every NaN.
const (
	f32qnan = 0xffc00000
	f64qnan = 0xfff8000000000000
)

// AppendResponse appends the service body of resp as uasc writes it into a
// MSG chunk: the FourByte ExpandedNodeId typeID (the response's binary
// encoding id) followed by the response. PublishResponse,
// HistoryReadResponse and ServiceFault take the fast path; other types, and responses the fast path hands back
// with ErrUnhandled, are encoded with ua.Encode, whose errors are returned
// (its panics are not recovered here).
func AppendResponse(b []byte, typeID uint16, resp ua.Response) ([]byte, error) {
	start := len(b)
	b = appendTypeID(b, typeID)
	var err error
	switch r := resp.(type) {
	case *ua.PublishResponse:
		b, err = AppendPublishResponse(b, r)
	case *ua.HistoryReadResponse:
		b, err = AppendHistoryReadResponse(b, r)
	case *ua.ServiceFault:
		if r == nil {
			err = ErrUnhandled
			break
		}
		b, err = appendResponseHeader(b, r.ResponseHeader)
	default:
		err = ErrUnhandled
	}
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, ErrUnhandled) {
		return b[:start], err
	}
	b = appendTypeID(b[:start], typeID)
	body, err := ua.Encode(resp)
	if err != nil {
		return b[:start], fmt.Errorf("encode %T: %w", resp, err)
	}
	return append(b, body...), nil
}

// appendTypeID writes the FourByte NodeId form of ns=0;i=id, which is how
// ua.NewFourByteExpandedNodeID(0, id) encodes.
func appendTypeID(b []byte, id uint16) []byte {
	return binary.LittleEndian.AppendUint16(append(b, 0x01, 0x00), id)
}

// AppendPublishResponse appends r as ua.Encode(r) writes it. On ErrUnhandled
// the bytes appended so far are left in place; callers truncate.
func AppendPublishResponse(b []byte, r *ua.PublishResponse) ([]byte, error) {
	if r == nil {
		return b, nil // ua.Encode writes nothing for a nil struct pointer
	}
	var err error
	if b, err = appendResponseHeader(b, r.ResponseHeader); err != nil {
		return b, err
	}
	b = appendU32(b, r.SubscriptionID)
	b = appendU32s(b, r.AvailableSequenceNumbers)
	b = appendBool(b, r.MoreNotifications)
	if b, err = appendNotificationMessage(b, r.NotificationMessage); err != nil {
		return b, err
	}
	b = appendStatusCodes(b, r.Results)
	return appendDiagnosticInfos(b, r.DiagnosticInfos)
}

// AppendHistoryReadResponse appends r as ua.Encode(r) writes it: the
// DataValues of a HistoryData result on the fast path (a raw read of
// 10,000 values is a response of 10,000 DataValues), any other result's
// HistoryData (events) by its ExtensionObject's Encode. On ErrUnhandled the
// bytes appended so far are left in place; callers truncate.
func AppendHistoryReadResponse(b []byte, r *ua.HistoryReadResponse) ([]byte, error) {
	if r == nil {
		return b, nil // ua.Encode writes nothing for a nil struct pointer
	}
	var err error
	if b, err = appendResponseHeader(b, r.ResponseHeader); err != nil {
		return b, err
	}
	if r.Results == nil {
		b = appendU32(b, null)
	} else {
		b = appendU32(b, uint32(len(r.Results)))
		for _, res := range r.Results {
			if res == nil {
				continue // a nil struct pointer writes nothing
			}
			b = appendByteString(appendU32(b, uint32(res.StatusCode)), res.ContinuationPoint)
			if b, err = appendExtensionObject(b, res.HistoryData); err != nil {
				return b, err
			}
		}
	}
	return appendDiagnosticInfos(b, r.DiagnosticInfos)
}

func appendResponseHeader(b []byte, h *ua.ResponseHeader) ([]byte, error) {
	if h == nil {
		return b, nil
	}
	b = appendTime(b, h.Timestamp)
	b = appendU32(b, h.RequestHandle)
	b = appendU32(b, uint32(h.ServiceResult))
	var err error
	if b, err = appendDiagnosticInfo(b, h.ServiceDiagnostics); err != nil {
		return b, err
	}
	if h.StringTable == nil {
		b = appendU32(b, null)
	} else {
		b = appendU32(b, uint32(len(h.StringTable)))
		for _, s := range h.StringTable {
			b = appendString(b, s)
		}
	}
	return appendExtensionObject(b, h.AdditionalHeader)
}

func appendNotificationMessage(b []byte, m *ua.NotificationMessage) ([]byte, error) {
	if m == nil {
		return b, nil
	}
	b = appendU32(b, m.SequenceNumber)
	b = appendTime(b, m.PublishTime)
	if m.NotificationData == nil {
		return appendU32(b, null), nil
	}
	b = appendU32(b, uint32(len(m.NotificationData)))
	var err error
	for _, eo := range m.NotificationData {
		if b, err = appendExtensionObject(b, eo); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendExtensionObject writes eo; a DataChangeNotification,
// StatusChangeNotification, EventNotificationList or HistoryData body is
// written here,
// anything else by eo.Encode.
func appendExtensionObject(b []byte, eo *ua.ExtensionObject) ([]byte, error) {
	if eo == nil {
		// ExtensionObject.Encode writes a nil one as an empty object.
		return append(b, 0x00, 0x00, ua.ExtensionObjectEmpty), nil
	}
	if eo.TypeID == nil {
		return b, ErrUnhandled
	}
	switch v := eo.Value.(type) {
	case *ua.DataChangeNotification:
		if v == nil || eo.EncodingMask != ua.ExtensionObjectBinary {
			break
		}
		return appendBody(b, eo, func(b []byte) ([]byte, error) { return appendDataChange(b, v) })
	case *ua.StatusChangeNotification:
		if v == nil || eo.EncodingMask != ua.ExtensionObjectBinary {
			break
		}
		return appendBody(b, eo, func(b []byte) ([]byte, error) {
			return appendDiagnosticInfo(appendU32(b, uint32(v.Status)), v.DiagnosticInfo)
		})
	case *ua.EventNotificationList:
		if v == nil || eo.EncodingMask != ua.ExtensionObjectBinary {
			break
		}
		return appendBody(b, eo, func(b []byte) ([]byte, error) { return appendEventList(b, v) })
	case *ua.HistoryData:
		if v == nil || eo.EncodingMask != ua.ExtensionObjectBinary {
			break
		}
		return appendBody(b, eo, func(b []byte) ([]byte, error) { return appendDataValues(b, v.DataValues) })
	}
	enc, err := eo.Encode()
	if err != nil {
		return b, ErrUnhandled
	}
	return append(b, enc...), nil
}

// appendBody writes eo's type id, its mask and the length-prefixed body
// written by body.
func appendBody(b []byte, eo *ua.ExtensionObject, body func([]byte) ([]byte, error)) ([]byte, error) {
	tid, err := eo.TypeID.Encode()
	if err != nil {
		return b, ErrUnhandled
	}
	b = append(append(b, tid...), eo.EncodingMask)
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	if b, err = body(b); err != nil {
		return b, err
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b, nil
}

func appendDataChange(b []byte, d *ua.DataChangeNotification) ([]byte, error) {
	var err error
	if d.MonitoredItems == nil {
		b = appendU32(b, null)
	} else {
		b = appendU32(b, uint32(len(d.MonitoredItems)))
		for _, n := range d.MonitoredItems {
			if n == nil {
				continue // a nil struct pointer writes nothing
			}
			b = appendU32(b, n.ClientHandle)
			if b, err = AppendDataValue(b, n.Value); err != nil {
				return b, err
			}
		}
	}
	return appendDiagnosticInfos(b, d.DiagnosticInfos)
}

// appendDataValues writes an array of DataValues.
func appendDataValues(b []byte, dvs []*ua.DataValue) ([]byte, error) {
	if dvs == nil {
		return appendU32(b, null), nil
	}
	b = appendU32(b, uint32(len(dvs)))
	var err error
	for _, dv := range dvs {
		if b, err = AppendDataValue(b, dv); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendEventList writes an EventNotificationList body: its EventFieldLists,
// each a client handle and the selected fields.
func appendEventList(b []byte, l *ua.EventNotificationList) ([]byte, error) {
	if l.Events == nil {
		return appendU32(b, null), nil
	}
	b = appendU32(b, uint32(len(l.Events)))
	var err error
	for _, e := range l.Events {
		if e == nil {
			continue // a nil struct pointer writes nothing
		}
		b = appendU32(b, e.ClientHandle)
		if e.EventFields == nil {
			b = appendU32(b, null)
			continue
		}
		b = appendU32(b, uint32(len(e.EventFields)))
		for _, f := range e.EventFields {
			if b, err = AppendVariant(b, f); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}

// AppendDataValue appends dv as dv.Encode writes it.
func AppendDataValue(b []byte, dv *ua.DataValue) ([]byte, error) {
	if dv == nil {
		return b, ErrUnhandled
	}
	m := dv.EncodingMask
	b = append(b, m)
	var err error
	if m&ua.DataValueValue != 0 {
		if b, err = AppendVariant(b, dv.Value); err != nil {
			return b, err
		}
	}
	if m&ua.DataValueStatusCode != 0 {
		b = appendU32(b, uint32(dv.Status))
	}
	if m&ua.DataValueSourceTimestamp != 0 {
		b = appendTime(b, dv.SourceTimestamp)
	}
	if m&ua.DataValueSourcePicoseconds != 0 {
		b = binary.LittleEndian.AppendUint16(b, dv.SourcePicoseconds)
	}
	if m&ua.DataValueServerTimestamp != 0 {
		b = appendTime(b, dv.ServerTimestamp)
	}
	if m&ua.DataValueServerPicoseconds != 0 {
		b = binary.LittleEndian.AppendUint16(b, dv.ServerPicoseconds)
	}
	return b, nil
}

// AppendVariant appends v as v.Encode writes it.
func AppendVariant(b []byte, v *ua.Variant) ([]byte, error) {
	if v == nil {
		return b, ErrUnhandled
	}
	mask := v.EncodingMask()
	if v.Type() == ua.TypeIDNull {
		return append(b, mask), nil
	}
	if mask&ua.VariantArrayDimensions == 0 {
		start := len(b)
		b = append(b, mask)
		if mask&ua.VariantArrayValues != 0 {
			b = appendU32(b, uint32(v.ArrayLength()))
		}
		if out, ok := appendValue(b, v.Type(), v.Value()); ok {
			return out, nil
		}
		b = b[:start]
	}
	enc, err := v.Encode()
	if err != nil {
		return b, ErrUnhandled
	}
	return append(b, enc...), nil
}

// appendValue writes a Variant's value (a scalar or the elements of a
// one-dimensional array) the way Variant.encode does. It reports false for
// value types it leaves to Variant.Encode.
func appendValue(b []byte, typ ua.TypeID, val any) ([]byte, bool) {
	switch x := val.(type) {
	case bool:
		return appendBool(b, x), true
	case int8:
		return append(b, byte(x)), true
	case uint8:
		return append(b, x), true
	case int16:
		return binary.LittleEndian.AppendUint16(b, uint16(x)), true
	case uint16:
		return binary.LittleEndian.AppendUint16(b, x), true
	case int32:
		return appendU32(b, uint32(x)), true
	case uint32:
		return appendU32(b, x), true
	case int64:
		return appendU64(b, uint64(x)), true
	case uint64:
		return appendU64(b, x), true
	case float32:
		return appendF32(b, x), true
	case float64:
		return appendF64(b, x), true
	case string:
		return appendString(b, x), true
	case ua.XMLElement:
		return appendString(b, string(x)), true
	case time.Time:
		return appendTime(b, x), true
	case ua.StatusCode:
		return appendU32(b, uint32(x)), true
	case []byte:
		// Variant.encode writes a []byte whole only for a ByteString;
		// otherwise it iterates its elements.
		if typ != ua.TypeIDByteString {
			return b, false
		}
		return appendByteString(b, x), true
	case *ua.NodeID:
		return appendNodeID(b, x)
	case *ua.LocalizedText:
		if x == nil {
			return b, false
		}
		return appendLocalizedText(b, x), true
	case *ua.QualifiedName:
		if x == nil {
			return b, false
		}
		return appendString(binary.LittleEndian.AppendUint16(b, x.NamespaceIndex), x.Name), true
	}
	if typ == ua.TypeIDByteString {
		return b, false // Variant.encode's treatment of other values
	}
	return appendArray(b, val)
}

// appendNodeID writes the numeric NodeId forms and the String form as
// NodeID.Encode does; GUID, ByteString and an empty String identifier
// (whose null-or-empty form the exported methods do not tell) are left to
// it.
func appendNodeID(b []byte, n *ua.NodeID) ([]byte, bool) {
	if n == nil {
		return b, false
	}
	b = append(b, byte(n.EncodingMask()))
	switch n.Type() {
	case ua.NodeIDTypeTwoByte:
		return append(b, byte(n.IntID())), true
	case ua.NodeIDTypeFourByte:
		return binary.LittleEndian.AppendUint16(append(b, byte(n.Namespace())), uint16(n.IntID())), true
	case ua.NodeIDTypeNumeric:
		return appendU32(binary.LittleEndian.AppendUint16(b, n.Namespace()), n.IntID()), true
	case ua.NodeIDTypeString:
		if s := n.StringID(); s != "" {
			return append(appendU32(binary.LittleEndian.AppendUint16(b, n.Namespace()), uint32(len(s))), s...), true
		}
	}
	return b[:len(b)-1], false
}

// appendLocalizedText writes l as LocalizedText.Encode does: the mask, then
// the fields it announces.
func appendLocalizedText(b []byte, l *ua.LocalizedText) []byte {
	b = append(b, l.EncodingMask)
	if l.EncodingMask&ua.LocalizedTextLocale != 0 {
		b = appendString(b, l.Locale)
	}
	if l.EncodingMask&ua.LocalizedTextText != 0 {
		b = appendString(b, l.Text)
	}
	return b
}

// appendArray writes the elements of a one-dimensional array value.
func appendArray(b []byte, val any) ([]byte, bool) {
	switch x := val.(type) {
	case []bool:
		for _, v := range x {
			b = appendBool(b, v)
		}
	case []int8:
		for _, v := range x {
			b = append(b, byte(v))
		}
	case ua.ByteArray:
		b = append(b, x...)
	case []int16:
		for _, v := range x {
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		}
	case []uint16:
		for _, v := range x {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
	case []int32:
		for _, v := range x {
			b = appendU32(b, uint32(v))
		}
	case []uint32:
		b = appendU32Elems(b, x)
	case []int64:
		for _, v := range x {
			b = appendU64(b, uint64(v))
		}
	case []uint64:
		for _, v := range x {
			b = appendU64(b, v)
		}
	case []float32:
		for _, v := range x {
			b = appendF32(b, v)
		}
	case []float64:
		for _, v := range x {
			b = appendF64(b, v)
		}
	case []string:
		for _, v := range x {
			b = appendString(b, v)
		}
	case []time.Time:
		for _, v := range x {
			b = appendTime(b, v)
		}
	case []ua.StatusCode:
		b = appendStatusElems(b, x)
	default:
		return b, false
	}
	return b, true
}

func appendDiagnosticInfos(b []byte, ds []*ua.DiagnosticInfo) ([]byte, error) {
	if ds == nil {
		return appendU32(b, null), nil
	}
	b = appendU32(b, uint32(len(ds)))
	var err error
	for _, d := range ds {
		if b, err = appendDiagnosticInfo(b, d); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendDiagnosticInfo writes d as d.Encode does (which panics on nil).
func appendDiagnosticInfo(b []byte, d *ua.DiagnosticInfo) ([]byte, error) {
	if d == nil {
		return b, ErrUnhandled
	}
	m := d.EncodingMask
	b = append(b, m)
	if m&ua.DiagnosticInfoSymbolicID != 0 {
		b = appendU32(b, uint32(d.SymbolicID))
	}
	if m&ua.DiagnosticInfoNamespaceURI != 0 {
		b = appendU32(b, uint32(d.NamespaceURI))
	}
	if m&ua.DiagnosticInfoLocale != 0 {
		b = appendU32(b, uint32(d.Locale))
	}
	if m&ua.DiagnosticInfoLocalizedText != 0 {
		b = appendU32(b, uint32(d.LocalizedText))
	}
	if m&ua.DiagnosticInfoAdditionalInfo != 0 {
		b = appendString(b, d.AdditionalInfo)
	}
	if m&ua.DiagnosticInfoInnerStatusCode != 0 {
		b = appendU32(b, uint32(d.InnerStatusCode))
	}
	if m&ua.DiagnosticInfoInnerDiagnosticInfo != 0 {
		return appendDiagnosticInfo(b, d.InnerDiagnosticInfo)
	}
	return b, nil
}

func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendF32(b []byte, v float32) []byte {
	if v != v {
		return appendU32(b, f32qnan)
	}
	return appendU32(b, math.Float32bits(v))
}

func appendF64(b []byte, v float64) []byte {
	if v != v {
		return appendU64(b, f64qnan)
	}
	return appendU64(b, math.Float64bits(v))
}

// appendString writes s; gopcua writes the empty string as the null String.
func appendString(b []byte, s string) []byte {
	if s == "" {
		return appendU32(b, null)
	}
	return append(appendU32(b, uint32(len(s))), s...)
}

func appendByteString(b []byte, s []byte) []byte {
	if s == nil {
		return appendU32(b, null)
	}
	return append(appendU32(b, uint32(len(s))), s...)
}

// appendTime writes t as 100 ns intervals since 1601-01-01, the zero Time
// as 0, with gopcua's arithmetic (which wraps outside 1678–2262).
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return appendU64(b, 0)
	}
	return appendU64(b, uint64(t.UnixNano()/100+116444736000000000))
}

func appendU32s(b []byte, vs []uint32) []byte {
	if vs == nil {
		return appendU32(b, null)
	}
	return appendU32Elems(appendU32(b, uint32(len(vs))), vs)
}

func appendU32Elems(b []byte, vs []uint32) []byte {
	for _, v := range vs {
		b = appendU32(b, v)
	}
	return b
}

func appendStatusCodes(b []byte, vs []ua.StatusCode) []byte {
	if vs == nil {
		return appendU32(b, null)
	}
	return appendStatusElems(appendU32(b, uint32(len(vs))), vs)
}

func appendStatusElems(b []byte, vs []ua.StatusCode) []byte {
	for _, v := range vs {
		b = appendU32(b, uint32(v))
	}
	return b
}
