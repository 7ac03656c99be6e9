package opcua

import (
	"bytes"
	"context"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// auditFields are the select clauses of the audit item: every field of
// BaseEventType otopcua fills, of AuditEventType and of
// AuditWriteUpdateEventType, each selected on the type that declares it.
var auditFields = []struct {
	typ  uint32
	name string
}{
	{id.BaseEventType, "EventId"},
	{id.BaseEventType, "EventType"},
	{id.BaseEventType, "SourceNode"},
	{id.BaseEventType, "SourceName"},
	{id.BaseEventType, "Time"},
	{id.BaseEventType, "ReceiveTime"},
	{id.BaseEventType, "Message"},
	{id.BaseEventType, "Severity"},
	{id.AuditEventType, "ActionTimeStamp"},
	{id.AuditEventType, "Status"},
	{id.AuditEventType, "ServerId"},
	{id.AuditEventType, "ClientAuditEntryId"},
	{id.AuditEventType, "ClientUserId"},
	{id.AuditWriteUpdateEventType, "AttributeId"},
	{id.AuditWriteUpdateEventType, "IndexRange"},
	{id.AuditWriteUpdateEventType, "OldValue"},
	{id.AuditWriteUpdateEventType, "NewValue"},
}

// eventItem builds an event monitored item on the Server object the way
// gopcua's subscribe example does (ExtensionObjects with explicit binary
// type ids and struct values).
func eventItem(handle uint32, selects []*ua.SimpleAttributeOperand, where *ua.ContentFilter) *ua.MonitoredItemCreateRequest {
	if where == nil {
		// gopcua's encoder writes nothing for a nil struct pointer: the
		// request would be truncated (the server answers
		// BadDecodingError). An empty where clause is no filter.
		where = &ua.ContentFilter{}
	}
	filter := ua.EventFilter{SelectClauses: selects, WhereClause: where}
	return &ua.MonitoredItemCreateRequest{
		ItemToMonitor: &ua.ReadValueID{
			NodeID:       nsid(id.Server),
			AttributeID:  ua.AttributeIDEventNotifier,
			DataEncoding: &ua.QualifiedName{},
		},
		MonitoringMode: ua.MonitoringModeReporting,
		RequestedParameters: &ua.MonitoringParameters{
			ClientHandle:  handle,
			DiscardOldest: true,
			QueueSize:     10,
			Filter: &ua.ExtensionObject{
				EncodingMask: ua.ExtensionObjectBinary,
				TypeID:       &ua.ExpandedNodeID{NodeID: ua.NewNumericNodeID(0, id.EventFilter_Encoding_DefaultBinary)},
				Value:        filter,
			},
		},
	}
}

func ofTypeFilter(typ uint32) *ua.ContentFilter {
	return &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{
		FilterOperator: ua.FilterOperatorOfType,
		FilterOperands: []*ua.ExtensionObject{{
			EncodingMask: ua.ExtensionObjectBinary,
			TypeID:       &ua.ExpandedNodeID{NodeID: ua.NewNumericNodeID(0, id.LiteralOperand_Encoding_DefaultBinary)},
			Value:        ua.LiteralOperand{Value: ua.MustVariant(nsid(typ))},
		}},
	}}}
}

// TestClientReceivesAuditWriteUpdateEvents subscribes gopcua's client to
// the Server object's events with two items: one selecting every audit
// field, one filtered OfType AuditEventType. The test raises a plain
// BaseEventType event and an AuditWriteUpdateEventType event: the first
// item gets both (the audit fields of the plain one null), the second only
// the audit event, with every selected field as raised.
func TestClientReceivesAuditWriteUpdateEvents(t *testing.T) {
	s, c := startServer(t, Config{})
	speed := ua.NewStringNodeID(1, "press1/Speed")
	if _, err := s.AddressSpace().AddVariable(speed, "Speed", "", nsid(id.ObjectsFolder), nsid(id.Double), 1.5,
		byte(ua.AccessLevelTypeCurrentRead|ua.AccessLevelTypeCurrentWrite)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	notes := make(chan *gopcua.PublishNotificationData, 16)
	sub, err := c.Subscribe(ctx, &gopcua.SubscriptionParameters{Interval: 50 * time.Millisecond}, notes)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer func() { _ = sub.Cancel(context.Background()) }()

	selects := make([]*ua.SimpleAttributeOperand, len(auditFields))
	for k, f := range auditFields {
		selects[k] = &ua.SimpleAttributeOperand{TypeDefinitionID: nsid(f.typ),
			BrowsePath: []*ua.QualifiedName{{Name: f.name}}, AttributeID: ua.AttributeIDValue}
	}
	typed := []*ua.SimpleAttributeOperand{
		{TypeDefinitionID: nsid(id.BaseEventType), BrowsePath: []*ua.QualifiedName{{Name: "EventType"}}, AttributeID: ua.AttributeIDValue},
		{TypeDefinitionID: nsid(id.BaseEventType), BrowsePath: []*ua.QualifiedName{{Name: "Message"}}, AttributeID: ua.AttributeIDValue},
	}
	mr, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth,
		eventItem(1, selects, nil),
		eventItem(2, typed, ofTypeFilter(id.AuditEventType)))
	if err != nil {
		t.Fatalf("Monitor: %v", err)
	}
	for k, r := range mr.Results {
		if r.StatusCode != ua.StatusOK || r.RevisedQueueSize != 10 {
			t.Fatalf("item %d: %v queue %d", k, r.StatusCode, r.RevisedQueueSize)
		}
	}

	before := time.Now()
	plain := events.Event{EventType: nsid(id.BaseEventType), Message: ua.NewLocalizedText("plain"), Severity: 100}
	if err := s.AddressSpace().RaiseEvent(nsid(id.Server), plain); err != nil {
		t.Fatal(err)
	}
	occurred := time.Date(2026, 4, 5, 6, 7, 8, 123456700, time.UTC)
	action := occurred.Add(-time.Second)
	audit, err := events.AuditWriteUpdate{
		Node: speed, ActionTimeStamp: action, Status: false, ServerID: selfURI, ClientAuditEntryID: "entry-7",
		ClientUserID: "operator", AttributeID: ua.AttributeIDValue, IndexRange: "", OldValue: 1.5, NewValue: 9.25,
		Message: "not primary", Severity: 600,
	}.Event()
	if err != nil {
		t.Fatal(err)
	}
	audit.Time = occurred
	if err := s.AddressSpace().RaiseEvent(nsid(id.Server), audit); err != nil {
		t.Fatal(err)
	}
	after := time.Now()

	got := map[uint32][]*ua.EventFieldList{}
	kick := time.NewTicker(time.Second)
	defer kick.Stop()
	for len(got[1]) < 2 || len(got[2]) < 1 {
		select {
		case <-kick.C:
			kickPublishLoop(ctx, t, c)
		case n := <-notes:
			if n.Error != nil {
				t.Fatalf("notification error: %v", n.Error)
			}
			if l, ok := n.Value.(*ua.EventNotificationList); ok {
				for _, e := range l.Events {
					got[e.ClientHandle] = append(got[e.ClientHandle], e)
				}
			}
		case <-ctx.Done():
			t.Fatalf("events before the deadline: item 1 %d of 2, item 2 %d of 1", len(got[1]), len(got[2]))
		}
	}

	// Item 1, the audit event: every selected field.
	f := got[1][1].EventFields
	if len(f) != len(auditFields) {
		t.Fatalf("%d fields, want %d", len(f), len(auditFields))
	}
	val := func(k int) any { return f[k].Value() }
	if b, ok := val(0).([]byte); !ok || len(b) != 16 {
		t.Errorf("EventId %v", val(0))
	}
	checkNode := func(name string, v any, want *ua.NodeID) {
		t.Helper()
		if n, ok := v.(*ua.NodeID); !ok || !events.SameNode(n, want) {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	checkNode("EventType", val(1), nsid(id.AuditWriteUpdateEventType))
	checkNode("SourceNode", val(2), speed)
	if val(3) != "Attribute/Write" {
		t.Errorf("SourceName %v", val(3))
	}
	if tm, ok := val(4).(time.Time); !ok || !tm.Equal(occurred) {
		t.Errorf("Time %v, want %v", val(4), occurred)
	}
	if tm, ok := val(5).(time.Time); !ok || tm.Before(before.Truncate(time.Microsecond)) || tm.After(after) {
		t.Errorf("ReceiveTime %v, want between %v and %v", val(5), before, after)
	}
	if lt, ok := val(6).(*ua.LocalizedText); !ok || lt.Text != "not primary" {
		t.Errorf("Message %v", val(6))
	}
	want := map[int]any{7: uint16(600), 9: false, 10: selfURI, 11: "entry-7", 12: "operator",
		13: uint32(ua.AttributeIDValue), 15: 1.5, 16: 9.25}
	for k, w := range want {
		if val(k) != w {
			t.Errorf("%s = %#v, want %#v", auditFields[k].name, val(k), w)
		}
	}
	if tm, ok := val(8).(time.Time); !ok || !tm.Equal(action) {
		t.Errorf("ActionTimeStamp %v, want %v", val(8), action)
	}
	if v := val(14); v != nil && v != "" {
		t.Errorf("IndexRange %#v, want empty", v)
	}

	// Item 1, the plain event: its own fields, the audit ones null.
	p := got[1][0].EventFields
	checkNode("plain EventType", p[1].Value(), nsid(id.BaseEventType))
	checkNode("plain SourceNode", p[2].Value(), nsid(id.Server))
	if p[3].Value() != "Server" || p[7].Value() != uint16(100) {
		t.Errorf("plain SourceName %v Severity %v", p[3].Value(), p[7].Value())
	}
	for k := 8; k < len(p); k++ {
		if p[k].Value() != nil {
			t.Errorf("plain event field %s = %v, want null", auditFields[k].name, p[k].Value())
		}
	}
	if bytes.Equal(p[0].Value().([]byte), val(0).([]byte)) {
		t.Error("the two events share an EventId")
	}

	// Item 2 got the audit event only.
	if len(got[2]) != 1 {
		t.Fatalf("OfType(AuditEventType) item got %d events, want 1", len(got[2]))
	}
	checkNode("filtered EventType", got[2][0].EventFields[0].Value(), nsid(id.AuditWriteUpdateEventType))
}

// TestClientEventFilterRefused: an item whose where clause uses an
// operator otopcua does not support is refused with BadEventFilterInvalid
// and an EventFilterResult naming the element, over the wire.
func TestClientEventFilterRefused(t *testing.T) {
	_, c := startServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := c.Subscribe(ctx, &gopcua.SubscriptionParameters{Interval: 100 * time.Millisecond}, make(chan *gopcua.PublishNotificationData, 4))
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	defer func() { _ = sub.Cancel(context.Background()) }()
	like := &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{
		FilterOperator: ua.FilterOperatorLike,
		FilterOperands: []*ua.ExtensionObject{
			ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant("a")}),
			ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant("a%")}),
		},
	}}}
	selects := []*ua.SimpleAttributeOperand{
		{TypeDefinitionID: nsid(id.BaseEventType), BrowsePath: []*ua.QualifiedName{{Name: "Message"}}, AttributeID: ua.AttributeIDValue},
		{TypeDefinitionID: nsid(id.BaseEventType), BrowsePath: []*ua.QualifiedName{{Name: "NoSuchField"}}, AttributeID: ua.AttributeIDValue},
	}
	mr, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, eventItem(1, selects, like))
	if err != nil {
		t.Fatalf("Monitor: %v", err)
	}
	r := mr.Results[0]
	if r.StatusCode != ua.StatusBadEventFilterInvalid {
		t.Fatalf("status %v, want BadEventFilterInvalid", r.StatusCode)
	}
	fr, ok := r.FilterResult.Value.(*ua.EventFilterResult)
	if !ok {
		t.Fatalf("FilterResult %T", r.FilterResult.Value)
	}
	if len(fr.SelectClauseResults) != 2 || fr.SelectClauseResults[0] != ua.StatusOK || fr.SelectClauseResults[1] != ua.StatusBadBrowseNameInvalid {
		t.Errorf("select clause results %v", fr.SelectClauseResults)
	}
	if er := fr.WhereClauseResult.ElementResults; len(er) != 1 || er[0].StatusCode != ua.StatusBadFilterOperatorUnsupported {
		t.Errorf("where clause results %+v", er)
	}
}
