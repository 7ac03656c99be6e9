package events

import (
	"crypto/rand"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// FieldKey names an event field by the browse path of its
// InstanceDeclaration below the event type (the BrowsePath of a
// SimpleAttributeOperand, Part 4 §7.4.4.5), for example the Severity
// property or the Id of a condition's EnabledState. Build keys with Field,
// FieldPath or Key and compare them; their text is for logs only.
type FieldKey string

// Field is the key of a path of namespace 0 browse names:
// Field("Severity"), Field("EnabledState", "Id").
func Field(names ...string) FieldKey {
	var b strings.Builder
	for i, n := range names {
		writeElem(&b, i, 0, n)
	}
	return FieldKey(b.String())
}

// FieldPath is the key of a path of qualified names.
func FieldPath(path ...ua.QualifiedName) FieldKey {
	var b strings.Builder
	for i, q := range path {
		writeElem(&b, i, q.NamespaceIndex, q.Name)
	}
	return FieldKey(b.String())
}

// Key is the key of a SimpleAttributeOperand's BrowsePath. A nil element
// is read as an empty name in namespace 0.
func Key(path []*ua.QualifiedName) FieldKey {
	var b strings.Builder
	for i, q := range path {
		if q == nil {
			writeElem(&b, i, 0, "")
			continue
		}
		writeElem(&b, i, q.NamespaceIndex, q.Name)
	}
	return FieldKey(b.String())
}

// writeElem writes "/ns:name", escaping '\' and '/' in the name so that
// no two paths share a key.
func writeElem(b *strings.Builder, i int, ns uint16, name string) {
	if i > 0 {
		b.WriteByte('/')
	}
	b.WriteString(strconv.Itoa(int(ns)))
	b.WriteByte(':')
	for _, r := range name {
		if r == '/' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

// Keys of the fields of BaseEventType (Part 5 §6.4.2).
var (
	KeyEventID     = Field("EventId")
	KeyEventType   = Field("EventType")
	KeySourceNode  = Field("SourceNode")
	KeySourceName  = Field("SourceName")
	KeyTime        = Field("Time")
	KeyReceiveTime = Field("ReceiveTime")
	KeyLocalTime   = Field("LocalTime")
	KeyMessage     = Field("Message")
	KeySeverity    = Field("Severity")
)

// Event is one event occurrence. The owner fills the fields it knows and
// raises it (addrspace.AddressSpace.RaiseEvent), which completes a copy
// with Prepare; the prepared copy is what subscribers see.
type Event struct {
	// EventID identifies this occurrence (ByteString). Prepare assigns a
	// NewEventID when it is empty.
	EventID []byte
	// EventType is the NodeId of the event's type: BaseEventType or a
	// subtype (ObjectType). Required.
	EventType *ua.NodeID
	// SourceNode is the node the event originated in. RaiseEvent uses the
	// notifier it is raised on when nil.
	SourceNode *ua.NodeID
	// SourceName describes the source; RaiseEvent uses SourceNode's
	// BrowseName when empty.
	SourceName string
	// Time is when the event occurred; Prepare uses ReceiveTime when zero.
	Time time.Time
	// ReceiveTime is when the server received the event; Prepare uses the
	// time of the raise when zero.
	ReceiveTime time.Time
	// Message is the human-readable text; Prepare uses an empty text when
	// nil.
	Message *ua.LocalizedText
	// Severity is the urgency, 1 (lowest) to 1000 (highest).
	Severity uint16
	// ConditionID is the NodeId of the node the event is an instance of,
	// for events visible in the address space (the ConditionId of a Part 9
	// condition): what a SimpleAttributeOperand with an empty BrowsePath
	// and AttributeId NodeId selects. Nil for other events.
	ConditionID *ua.NodeID
	// Fields are the values of the type-specific fields (and optional
	// BaseEventType ones such as LocalTime), by browse path. A prepared
	// event holds the standard fields above here too, as Variants.
	Fields map[FieldKey]*ua.Variant
	// Types is EventType followed by its supertypes, nearest first,
	// ending with BaseEventType. Prepare sets it; owners leave it nil.
	Types []*ua.NodeID
}

// Set stores value (any type ua.NewVariant accepts, or a *ua.Variant) as
// field k.
func (e *Event) Set(k FieldKey, value any) error {
	v, err := variant(value)
	if err != nil {
		return err
	}
	if e.Fields == nil {
		e.Fields = make(map[FieldKey]*ua.Variant)
	}
	e.Fields[k] = v
	return nil
}

func variant(value any) (*ua.Variant, error) {
	if v, ok := value.(*ua.Variant); ok {
		if v == nil {
			return null(), nil
		}
		return v, nil
	}
	return ua.NewVariant(value)
}

// Field returns field k of a prepared event, nil when the event has none.
func (e *Event) Field(k FieldKey) *ua.Variant { return e.Fields[k] }

// OfType reports whether the event is of type t or of a subtype of it: t
// is in Types.
func (e *Event) OfType(t *ua.NodeID) bool {
	for _, x := range e.Types {
		if SameNode(x, t) {
			return true
		}
	}
	return false
}

// Prepare returns the event as subscribers see it: a copy of e with
// EventID, ReceiveTime (now), Time and Message defaulted, Types set to
// types (EventType and its supertypes, nearest first) and every standard
// field also stored in Fields, where a typed field wins over an entry of
// the same key. The result must not be modified.
func (e Event) Prepare(now time.Time, types []*ua.NodeID) *Event {
	p := e
	if len(p.EventID) == 0 {
		p.EventID = NewEventID()
	} else {
		p.EventID = slices.Clone(p.EventID)
	}
	if p.ReceiveTime.IsZero() {
		p.ReceiveTime = now
	}
	if p.Time.IsZero() {
		p.Time = p.ReceiveTime
	}
	if p.Message == nil {
		p.Message = &ua.LocalizedText{}
	}
	p.Types = slices.Clone(types)
	p.Fields = make(map[FieldKey]*ua.Variant, len(e.Fields)+8)
	for k, v := range e.Fields {
		if v == nil {
			v = null()
		}
		p.Fields[k] = v
	}
	p.Fields[KeyEventID] = ua.MustVariant(p.EventID)
	p.Fields[KeyEventType] = nodeVariant(p.EventType)
	p.Fields[KeySourceNode] = nodeVariant(p.SourceNode)
	p.Fields[KeySourceName] = ua.MustVariant(p.SourceName)
	p.Fields[KeyTime] = ua.MustVariant(p.Time)
	p.Fields[KeyReceiveTime] = ua.MustVariant(p.ReceiveTime)
	p.Fields[KeyMessage] = ua.MustVariant(p.Message)
	p.Fields[KeySeverity] = ua.MustVariant(p.Severity)
	return &p
}

func nodeVariant(n *ua.NodeID) *ua.Variant {
	if n == nil {
		return null()
	}
	return ua.MustVariant(n)
}

func null() *ua.Variant { return ua.MustVariant(nil) }

// SameNode reports whether a and b name the same node: the three numeric
// encodings of one identifier are the same node. Nil equals only nil.
func SameNode(a, b *ua.NodeID) bool {
	if a == nil || b == nil {
		return a == b
	}
	return KeyOf(a) == KeyOf(b)
}

// NodeKey is a comparable form of a NodeId, for map keys: the three
// numeric encodings (two-byte, four-byte, numeric) of one identifier share
// a key, as SameNode has them the same node.
type NodeKey struct {
	ns   uint16
	kind ua.NodeIDType // NodeIDTypeNumeric for every numeric encoding
	num  uint32
	str  string // string, GUID or opaque identifier
}

// KeyOf returns the NodeKey of n, which must not be nil.
func KeyOf(n *ua.NodeID) NodeKey {
	switch t := n.Type(); t {
	case ua.NodeIDTypeTwoByte, ua.NodeIDTypeFourByte, ua.NodeIDTypeNumeric:
		return NodeKey{ns: n.Namespace(), kind: ua.NodeIDTypeNumeric, num: n.IntID()}
	default:
		return NodeKey{ns: n.Namespace(), kind: t, str: n.StringID()}
	}
}

// idPrefix is this process's random EventId prefix; idSeq counts events.
var (
	idPrefix = func() uint64 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic("events: no randomness for EventIds: " + err.Error())
		}
		return binary.BigEndian.Uint64(b[:])
	}()
	idSeq atomic.Uint64
)

// NewEventID returns a new 16-byte EventId: the process's random prefix and
// a counter. Safe for concurrent use.
func NewEventID() []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, idPrefix)
	binary.BigEndian.PutUint64(b[8:], idSeq.Add(1))
	return b
}

// Well-known event types.
var (
	BaseEventType               = ua.NewNumericNodeID(0, id.BaseEventType)
	EventQueueOverflowEventType = ua.NewNumericNodeID(0, id.EventQueueOverflowEventType)
	AuditEventType              = ua.NewNumericNodeID(0, id.AuditEventType)
	AuditUpdateEventType        = ua.NewNumericNodeID(0, id.AuditUpdateEventType)
	AuditWriteUpdateEventType   = ua.NewNumericNodeID(0, id.AuditWriteUpdateEventType)
)

// ServerObject is the NodeId of the Server object (i=2253), the notifier
// every event reaches.
var ServerObject = ua.NewNumericNodeID(0, id.Server)

// QueueOverflow returns the prepared EventQueueOverflowEventType event a
// monitored item queues when its event queue overflows (Part 4 §5.12.1.5,
// Part 5 §6.4.34): SourceNode the Server object, SourceName
// "Internal/EventQueueOverflow".
func QueueOverflow(now time.Time) *Event {
	e := Event{
		EventType:  EventQueueOverflowEventType,
		SourceNode: ServerObject,
		SourceName: "Internal/EventQueueOverflow",
		Message:    ua.NewLocalizedText("Event queue overflow: events were discarded"),
		Severity:   1,
	}
	return e.Prepare(now, []*ua.NodeID{EventQueueOverflowEventType, BaseEventType})
}
