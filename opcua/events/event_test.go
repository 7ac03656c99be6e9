package events

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

func TestKeysAreDistinct(t *testing.T) {
	keys := []FieldKey{
		Field("a/b"),
		Field("a", "b"),
		Field(`a\`, "b"),
		Field(`a\/b`),
		FieldPath(ua.QualifiedName{NamespaceIndex: 1, Name: "a"}, ua.QualifiedName{Name: "b"}),
		Field("a"),
		Field(""),
		Field(),
	}
	seen := map[FieldKey]int{}
	for i, k := range keys {
		if j, ok := seen[k]; ok {
			t.Fatalf("keys %d and %d are both %q", j, i, k)
		}
		seen[k] = i
	}
	if got := Key([]*ua.QualifiedName{{Name: "EnabledState"}, {Name: "Id"}}); got != Field("EnabledState", "Id") {
		t.Fatalf("Key of a browse path = %q, want %q", got, Field("EnabledState", "Id"))
	}
	if Key([]*ua.QualifiedName{nil}) != Field("") {
		t.Fatal("a nil path element is not the empty name")
	}
}

func TestPrepareFillsDefaultsAndCopies(t *testing.T) {
	now := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	src := ua.NewStringNodeID(1, "press1/Speed")
	ev := Event{EventType: AuditWriteUpdateEventType, SourceNode: src, SourceName: "Speed", Severity: 300}
	if err := ev.Set(KeyNewValue, 42.5); err != nil {
		t.Fatal(err)
	}
	ev.Fields[KeyEventID] = ua.MustVariant("not the EventId") // a typed field wins
	types := []*ua.NodeID{AuditWriteUpdateEventType, AuditUpdateEventType, AuditEventType, BaseEventType}
	p := ev.Prepare(now, types)
	types[0] = nil
	ev.Fields[KeyNewValue] = ua.MustVariant(int32(1))

	if len(p.EventID) != 16 || !p.ReceiveTime.Equal(now) || !p.Time.Equal(now) || p.Message == nil {
		t.Fatalf("defaults: id %x receive %v time %v message %v", p.EventID, p.ReceiveTime, p.Time, p.Message)
	}
	if got := p.Field(KeyEventID).Value(); !bytes.Equal(got.([]byte), p.EventID) {
		t.Fatalf("EventId field %v, want the EventID %x", got, p.EventID)
	}
	if got := p.Field(KeyNewValue).Value(); got != 42.5 {
		t.Fatalf("NewValue %v: Prepare did not copy Fields", got)
	}
	if got := p.Field(KeySeverity).Value(); got != uint16(300) {
		t.Fatalf("Severity field %v (%T)", got, got)
	}
	if got := p.Field(KeySourceNode).Value().(*ua.NodeID); !SameNode(got, src) {
		t.Fatalf("SourceNode field %v", got)
	}
	if !p.OfType(AuditEventType) || !p.OfType(ua.NewFourByteNodeID(0, 2041)) || p.OfType(EventQueueOverflowEventType) {
		t.Fatalf("OfType over %v is wrong", p.Types)
	}
	if p.Field(Field("Nonexistent")) != nil {
		t.Fatal("a field the event lacks must be nil")
	}
	if q := ev.Prepare(now, types); bytes.Equal(q.EventID, p.EventID) {
		t.Fatal("two prepared events share an EventId")
	}
}

func TestSameNode(t *testing.T) {
	for _, tc := range []struct {
		a, b *ua.NodeID
		want bool
	}{
		{ua.NewTwoByteNodeID(5), ua.NewNumericNodeID(0, 5), true},
		{ua.NewFourByteNodeID(1, 5), ua.NewNumericNodeID(1, 5), true},
		{ua.NewNumericNodeID(1, 5), ua.NewNumericNodeID(2, 5), false},
		{ua.NewStringNodeID(1, "5"), ua.NewNumericNodeID(1, 5), false},
		{ua.NewStringNodeID(1, "x"), ua.NewStringNodeID(1, "x"), true},
		{nil, ua.NewNumericNodeID(0, 0), false},
		{nil, nil, true},
	} {
		if got := SameNode(tc.a, tc.b); got != tc.want {
			t.Errorf("SameNode(%v, %v) = %v", tc.a, tc.b, got)
		}
	}
}

func TestAuditWriteUpdateFields(t *testing.T) {
	node := ua.NewStringNodeID(2, "press1/Setpoint")
	ev, err := AuditWriteUpdate{
		Node: node, Status: false, ServerID: "urn:a", ClientUserID: "operator",
		AttributeID: ua.AttributeIDValue, OldValue: int16(5), NewValue: int16(7), Message: "not primary",
	}.Event()
	if err != nil {
		t.Fatal(err)
	}
	p := ev.Prepare(time.Now(), []*ua.NodeID{AuditWriteUpdateEventType})
	want := map[FieldKey]any{
		KeyStatus: false, KeyServerID: "urn:a", KeyClientUserID: "operator",
		KeyAttributeID: uint32(13), KeyOldValue: int16(5), KeyNewValue: int16(7),
		KeySourceName: "Attribute/Write", KeySeverity: uint16(500),
	}
	for k, w := range want {
		if got := p.Field(k); got == nil || got.Value() != w {
			t.Errorf("field %s = %v, want %v", k, got, w)
		}
	}
	if p.Field(KeyActionTimeStamp) != nil {
		t.Error("a zero ActionTimeStamp must leave the field absent")
	}
	if p.Message.Text != "not primary" || !SameNode(p.SourceNode, node) {
		t.Errorf("message %q source %v", p.Message.Text, p.SourceNode)
	}
}
