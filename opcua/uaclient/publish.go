package uaclient

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// Publish is what DecodePublish reads from a PublishResponse (or from the
// ServiceFault sent in its place).
type Publish struct {
	RequestHandle  uint32
	ServiceResult  ua.StatusCode
	Fault          bool // the body was a ServiceFault
	SubscriptionID uint32
	MoreNotes      bool
	SequenceNumber uint32
	// PublishTime in Unix nanoseconds (0 when absent).
	PublishTime int64
	// DataChanges counts DataChangeNotification objects, Items their
	// monitored-item notifications.
	DataChanges, Items int
	// StatusChange is set when a StatusChangeNotification arrived; Status is
	// its status.
	StatusChange bool
	Status       ua.StatusCode
	// EventLists counts EventNotificationList objects, Events their
	// event notifications (EventFieldLists).
	EventLists, Events int
	// Other counts notification objects of any other type.
	Other int
	// AckResults are the results of the acknowledgements of the request.
	AckResults []ua.StatusCode
}

// Keepalive reports whether the message carries no notification.
func (p *Publish) Keepalive() bool {
	return p.DataChanges == 0 && p.EventLists == 0 && !p.StatusChange && p.Other == 0
}

// Item is one monitored-item notification of a DataChangeNotification.
type Item struct {
	ClientHandle uint32
	// Mask is the DataValue encoding mask (ua.DataValueValue, ...).
	Mask   byte
	Status ua.StatusCode
	// Source is the SourceTimestamp in Unix nanoseconds, 0 when absent.
	Source int64
}

// ErrDecode wraps every malformed-body error of DecodePublish.
var ErrDecode = errors.New("uaclient: malformed PublishResponse")

// DecodePublish reads a PublishResponse body (as in Reply.Body) into p and
// calls fn for every monitored-item notification, in wire order. It decodes
// only headers, handles and timestamps and skips values, which makes it
// some thirty times cheaper than ua.DecodeService on large messages.
func DecodePublish(body []byte, p *Publish, fn func(Item)) error {
	*p = Publish{}
	r := reader{b: body}
	ns, typ, ok := r.nodeID()
	if !ok || ns != 0 {
		return r.fail("type id")
	}
	switch typ {
	case id.PublishResponse_Encoding_DefaultBinary:
	case id.ServiceFault_Encoding_DefaultBinary:
		p.Fault = true
		r.responseHeader(p)
		if r.err != nil {
			return r.err
		}
		if p.ServiceResult == ua.StatusOK {
			p.ServiceResult = ua.StatusBad // a fault always means failure
		}
		return nil
	default:
		return fmt.Errorf("%w: type i=%d, not a PublishResponse", ErrDecode, typ)
	}
	r.responseHeader(p)
	p.SubscriptionID = r.u32()
	for n := r.count(4); n > 0; n-- { // AvailableSequenceNumbers
		r.u32()
	}
	p.MoreNotes = r.u8() != 0
	p.SequenceNumber = r.u32()
	p.PublishTime = ticksToUnixNano(r.i64())
	for n := r.count(1); n > 0 && r.err == nil; n-- {
		r.notification(p, fn)
	}
	if n := r.count(4); n > 0 {
		p.AckResults = make([]ua.StatusCode, 0, n)
		for ; n > 0; n-- {
			p.AckResults = append(p.AckResults, ua.StatusCode(r.u32()))
		}
	}
	for n := r.count(1); n > 0 && r.err == nil; n-- {
		r.diagnosticInfo(0)
	}
	return r.err
}

// ticksToUnixNano converts an OPC UA DateTime (100 ns ticks since
// 1601-01-01 UTC) to Unix nanoseconds; 0 stays 0 (no timestamp).
func ticksToUnixNano(t int64) int64 {
	if t == 0 {
		return 0
	}
	return (t - 116444736000000000) * 100
}

// reader is a bounds-checked little-endian cursor. After the first error
// every read returns zero and err keeps the first error.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) fail(what string) error {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d of %d", ErrDecode, what, r.pos, len(r.b))
	}
	return r.err
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b)-r.pos < n {
		r.fail(fmt.Sprintf("%d bytes wanted", n))
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *reader) u8() byte {
	if s := r.take(1); s != nil {
		return s[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if s := r.take(2); s != nil {
		return binary.LittleEndian.Uint16(s)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if s := r.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *reader) i64() int64 {
	if s := r.take(8); s != nil {
		return int64(binary.LittleEndian.Uint64(s))
	}
	return 0
}

// count reads an array length (-1 is a null array, read as 0). Each element
// takes at least minSize bytes, so a length the rest of the body cannot hold
// is an error, not a huge loop.
func (r *reader) count(minSize int) int {
	n := int32(r.u32())
	if n <= 0 || r.err != nil {
		return 0
	}
	if int(n) > (len(r.b)-r.pos)/minSize {
		r.fail(fmt.Sprintf("array of %d elements", n))
		return 0
	}
	return int(n)
}

// bytesField skips a String, ByteString or XmlElement (length -1 is null).
func (r *reader) bytesField() {
	n := int32(r.u32())
	if n > 0 {
		r.take(int(n))
	}
}

// nodeID reads a NodeId (or, with its flags, an ExpandedNodeId) and returns
// its namespace and, when numeric, its identifier.
func (r *reader) nodeID() (ns uint16, numeric uint32, ok bool) {
	enc := r.u8()
	ok = true
	switch enc & 0x3f {
	case 0:
		numeric = uint32(r.u8())
	case 1:
		ns = uint16(r.u8())
		numeric = uint32(r.u16())
	case 2:
		ns = r.u16()
		numeric = r.u32()
	case 3, 5: // String, ByteString
		ns = r.u16()
		r.bytesField()
		ok = false
	case 4: // Guid
		ns = r.u16()
		r.take(16)
		ok = false
	default:
		r.fail(fmt.Sprintf("NodeId encoding 0x%02x", enc))
		return 0, 0, false
	}
	if enc&0x80 != 0 { // NamespaceUri
		r.bytesField()
	}
	if enc&0x40 != 0 { // ServerIndex
		r.u32()
	}
	return ns, numeric, ok && r.err == nil
}

func (r *reader) responseHeader(p *Publish) {
	r.i64() // Timestamp
	p.RequestHandle = r.u32()
	p.ServiceResult = ua.StatusCode(r.u32())
	r.diagnosticInfo(0)
	for n := r.count(4); n > 0; n-- { // StringTable
		r.bytesField()
	}
	r.extensionObject()
}

// extensionObject skips an ExtensionObject and returns its type id and,
// for a binary body, the body.
func (r *reader) extensionObject() (typ uint32, body []byte) {
	_, typ, _ = r.nodeID()
	switch enc := r.u8(); enc {
	case 0:
	case 1, 2:
		n := int32(r.u32())
		if n > 0 {
			body = r.take(int(n))
		}
		if enc == 2 {
			body = nil // XML: skipped, not decoded
		}
	default:
		r.fail(fmt.Sprintf("ExtensionObject encoding %d", enc))
	}
	return typ, body
}

const maxNesting = 16

func (r *reader) diagnosticInfo(depth int) {
	if depth > maxNesting {
		r.fail("DiagnosticInfo nested too deep")
		return
	}
	m := r.u8()
	for _, bit := range []byte{ua.DiagnosticInfoSymbolicID, ua.DiagnosticInfoNamespaceURI, ua.DiagnosticInfoLocale, ua.DiagnosticInfoLocalizedText} {
		if m&bit != 0 {
			r.u32()
		}
	}
	if m&ua.DiagnosticInfoAdditionalInfo != 0 {
		r.bytesField()
	}
	if m&ua.DiagnosticInfoInnerStatusCode != 0 {
		r.u32()
	}
	if m&ua.DiagnosticInfoInnerDiagnosticInfo != 0 {
		r.diagnosticInfo(depth + 1)
	}
}

func (r *reader) notification(p *Publish, fn func(Item)) {
	typ, body := r.extensionObject()
	if r.err != nil {
		return
	}
	switch typ {
	case id.DataChangeNotification_Encoding_DefaultBinary:
		p.DataChanges++
		sub := reader{b: body}
		p.Items += sub.dataChange(fn)
		if sub.err != nil {
			r.err = sub.err
		}
	case id.EventNotificationList_Encoding_DefaultBinary:
		p.EventLists++
		sub := reader{b: body}
		p.Events += sub.eventList()
		if sub.err != nil {
			r.err = sub.err
		}
	case id.StatusChangeNotification_Encoding_DefaultBinary:
		p.StatusChange = true
		sub := reader{b: body}
		p.Status = ua.StatusCode(sub.u32())
		if sub.err != nil {
			r.err = sub.err
		}
	default:
		p.Other++
	}
}

// dataChange reads a DataChangeNotification body, calls fn per item and
// returns the number of items.
func (r *reader) dataChange(fn func(Item)) int {
	n := r.count(5)
	for i := 0; i < n; i++ {
		it := Item{ClientHandle: r.u32()}
		r.dataValue(&it, 0)
		if r.err != nil {
			return i
		}
		fn(it)
	}
	for d := r.count(1); d > 0 && r.err == nil; d-- {
		r.diagnosticInfo(0)
	}
	return n
}

// eventList reads an EventNotificationList body, skipping the fields, and
// returns the number of events (EventFieldLists) it read.
func (r *reader) eventList() int {
	n := r.count(8) // ClientHandle and the field count
	for i := 0; i < n; i++ {
		r.u32() // ClientHandle
		for f := r.count(1); f > 0 && r.err == nil; f-- {
			r.variant(0)
		}
		if r.err != nil {
			return i
		}
	}
	return n
}

func (r *reader) dataValue(it *Item, depth int) {
	m := r.u8()
	if it != nil {
		it.Mask = m
	}
	if m&ua.DataValueValue != 0 {
		r.variant(depth + 1)
	}
	if m&ua.DataValueStatusCode != 0 {
		s := ua.StatusCode(r.u32())
		if it != nil {
			it.Status = s
		}
	}
	if m&ua.DataValueSourceTimestamp != 0 {
		t := ticksToUnixNano(r.i64())
		if it != nil {
			it.Source = t
		}
	}
	if m&ua.DataValueSourcePicoseconds != 0 {
		r.u16()
	}
	if m&ua.DataValueServerTimestamp != 0 {
		r.i64()
	}
	if m&ua.DataValueServerPicoseconds != 0 {
		r.u16()
	}
}

// fixedSize is the encoded size of the fixed-size built-in types, by type
// id (Part 6, 5.1.2); 0 for variable-size ones.
var fixedSize = [26]int{
	1: 1, 2: 1, 3: 1, // Boolean, SByte, Byte
	4: 2, 5: 2, // Int16, UInt16
	6: 4, 7: 4, 10: 4, 19: 4, // Int32, UInt32, Float, StatusCode
	8: 8, 9: 8, 11: 8, 13: 8, // Int64, UInt64, Double, DateTime
	14: 16, // Guid
}

func (r *reader) variant(depth int) {
	if depth > maxNesting {
		r.fail("Variant nested too deep")
		return
	}
	m := r.u8()
	typ := m & 0x3f
	if typ > 25 {
		r.fail(fmt.Sprintf("Variant type %d", typ))
		return
	}
	if m&0x80 == 0 {
		if typ != 0 {
			r.builtin(typ, depth)
		}
		return
	}
	n := r.count(1)
	if sz := fixedSize[typ]; sz > 0 {
		r.take(n * sz)
	} else {
		for ; n > 0 && r.err == nil; n-- {
			r.builtin(typ, depth)
		}
	}
	if m&0x40 != 0 { // ArrayDimensions
		r.take(4 * r.count(4))
	}
}

// builtin skips one value of built-in type typ.
func (r *reader) builtin(typ byte, depth int) {
	if sz := fixedSize[typ]; sz > 0 {
		r.take(sz)
		return
	}
	switch typ {
	case 12, 15, 16: // String, ByteString, XmlElement
		r.bytesField()
	case 17, 18: // NodeId, ExpandedNodeId
		r.nodeID()
	case 20: // QualifiedName
		r.u16()
		r.bytesField()
	case 21: // LocalizedText
		m := r.u8()
		if m&1 != 0 {
			r.bytesField()
		}
		if m&2 != 0 {
			r.bytesField()
		}
	case 22:
		r.extensionObject()
	case 23:
		r.dataValue(nil, depth+1)
	case 24:
		r.variant(depth + 1)
	case 25:
		r.diagnosticInfo(depth + 1)
	default:
		r.fail(fmt.Sprintf("built-in type %d", typ))
	}
}
