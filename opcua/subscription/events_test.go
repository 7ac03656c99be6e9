package subscription

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
	ualimits "github.com/otopcua/otopcua/opcua/limits"
)

// auditEvent is an AuditWriteUpdateEventType event as the write path
// raises it.
func auditEvent(t *testing.T, user string, old, new int32) events.Event {
	t.Helper()
	ev, err := events.AuditWriteUpdate{
		Node: nodeID(3), Status: false, ServerID: "urn:otopcua:test", ClientUserID: user,
		AttributeID: ua.AttributeIDValue, OldValue: old, NewValue: new, Message: "not primary",
	}.Event()
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func baseEvent(severity uint16, text string) events.Event {
	return events.Event{EventType: events.BaseEventType, SourceNode: notifierNode, SourceName: "Press",
		Message: ua.NewLocalizedText(text), Severity: severity}
}

// publishOne answers one Publish request after one publishing interval.
func (v *env) publishOne(sess SessionID, reqID uint32) ua.Response {
	v.t.Helper()
	snd := &fakeSender{}
	v.publish(sess, snd, reqID)
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 1 {
		v.t.Fatalf("%d responses, want 1", len(got))
	}
	return got[0].resp
}

func fieldValues(l *ua.EventFieldList) []any {
	out := make([]any, len(l.EventFields))
	for i, f := range l.EventFields {
		out[i] = f.Value()
	}
	return out
}

func TestEventSelectClausesInOrder(t *testing.T) {
	v, evs := newEventEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	selects := []*ua.SimpleAttributeOperand{
		sao(events.AuditWriteUpdateEventType, "NewValue"),
		sao(events.BaseEventType, "Severity"),
		sao(nil, "Message"), // a null TypeDefinitionId is BaseEventType
		sao(events.BaseEventType, "EventType"),
		sao(events.AuditEventType, "ClientUserId"),
		sao(events.BaseEventType, "SourceNode"),
		sao(events.AuditWriteUpdateEventType, "OldValue"),
		sao(events.BaseEventType, "LocalTime"), // declared, never set: null
		sao(events.BaseEventType, "EventId"),
		sao(events.AuditWriteUpdateEventType, "EventId"), // inherited field, typed
	}
	res := v.createEventItems(sessA, sub, eventSpec{filter: eventFilterEO(selects)})
	if r := res[0]; r.StatusCode != ua.StatusGood || r.MonitoredItemID == 0 || r.RevisedSamplingInterval != 0 || r.RevisedQueueSize != 1000 {
		t.Fatalf("create: %v id %d sampling %v queue %d", r.StatusCode, r.MonitoredItemID, r.RevisedSamplingInterval, r.RevisedQueueSize)
	}
	audit := evs.raise(notifierNode, auditEvent(t, "operator", 5, 7))
	base := evs.raise(serverNode, baseEvent(300, "plain"))

	lists := eventLists(t, v.publishOne(sessA, 1))
	if len(lists) != 1 {
		t.Fatalf("%d events, want 1: the Server's event does not reach notifierNode's item", len(lists))
	}
	got := fieldValues(lists[0])
	if lists[0].ClientHandle != 7000 || len(got) != len(selects) {
		t.Fatalf("handle %d, %d fields", lists[0].ClientHandle, len(got))
	}
	want := []any{int32(7), uint16(500), "not primary", events.AuditWriteUpdateEventType, "operator", nodeID(3), int32(5), nil, audit.EventID, audit.EventID}
	for i := range want {
		if !sameField(got[i], want[i]) {
			t.Errorf("field %d (%s) = %v (%T), want %v", i, selects[i].BrowsePath[0].Name, got[i], got[i], want[i])
		}
	}

	// On the Server, the BaseEventType event's typed audit fields are null.
	sub2 := v.createSub(sessA, subParams{}).SubscriptionID
	v.createEventItems(sessA, sub2, eventSpec{notifier: serverNode, filter: eventFilterEO(selects)})
	base = evs.raise(serverNode, baseEvent(300, "plain"))
	snd := &fakeSender{}
	v.publish(sessA, snd, 2)
	v.publish(sessA, snd, 3)
	v.advance(100 * time.Millisecond)
	for _, s := range snd.all() {
		if s.resp.(*ua.PublishResponse).SubscriptionID != sub2 {
			continue
		}
		lists := eventLists(t, s.resp)
		if len(lists) != 1 {
			t.Fatalf("Server item: %d events, want the one raised after it was created", len(lists))
		}
		got := fieldValues(lists[0])
		want := []any{nil, uint16(300), "plain", events.BaseEventType, nil, notifierNode, nil, nil, base.EventID, nil}
		for i := range want {
			if !sameField(got[i], want[i]) {
				t.Errorf("Server item field %d = %v, want %v", i, got[i], want[i])
			}
		}
		return
	}
	t.Fatal("no message for the Server's subscription")
}

func sameField(got, want any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case *ua.NodeID:
		g, ok := got.(*ua.NodeID)
		return ok && events.SameNode(g, w)
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(g, w)
	case string:
		if lt, ok := got.(*ua.LocalizedText); ok {
			return lt.Text == w
		}
	}
	return got == want
}

func TestEventOfTypeIncludesSubtypes(t *testing.T) {
	v, evs := newEventEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	selects := []*ua.SimpleAttributeOperand{sao(events.BaseEventType, "Message")}
	res := v.createEventItems(sessA, sub,
		eventSpec{handle: 1, filter: eventFilterEO(selects, ofType(events.AuditEventType))},
		eventSpec{handle: 2, filter: eventFilterEO(selects, ofType(deviceEventType))},
		eventSpec{handle: 3, filter: eventFilterEO(selects, &ua.ContentFilterElement{
			FilterOperator: ua.FilterOperatorNot,
			FilterOperands: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.ElementOperand{Index: 1})},
		}, ofType(events.AuditEventType))},
	)
	for i, r := range res {
		if r.StatusCode != ua.StatusGood {
			t.Fatalf("item %d: %v", i, r.StatusCode)
		}
	}
	evs.raise(notifierNode, auditEvent(t, "u", 1, 2)) // AuditWriteUpdate: a subtype of AuditEventType
	evs.raise(notifierNode, baseEvent(100, "base"))
	evs.raise(notifierNode, events.Event{EventType: pressEventType, Message: ua.NewLocalizedText("press")})
	evs.raise(notifierNode, events.Event{EventType: deviceEventType, Message: ua.NewLocalizedText("device")})

	got := map[uint32][]string{}
	for _, l := range eventLists(t, v.publishOne(sessA, 1)) {
		got[l.ClientHandle] = append(got[l.ClientHandle], l.EventFields[0].Value().(*ua.LocalizedText).Text)
	}
	want := map[uint32][]string{
		1: {"not primary"},
		2: {"press", "device"},
		3: {"base", "press", "device"},
	}
	for h, w := range want {
		if !equalSlices(got[h], w) {
			t.Errorf("item %d got %v, want %v", h, got[h], w)
		}
	}
}

func TestEventQueueOverflowInsertsOverflowEvent(t *testing.T) {
	for _, tc := range []struct {
		discardOldest bool
		want          []string // Message, or "overflow"
	}{
		{true, []string{"overflow", "e3", "e4", "e5"}},
		{false, []string{"e1", "e2", "overflow", "e5"}},
	} {
		v, evs := newEventEnv(t, Options{})
		sub := v.createSub(sessA, subParams{}).SubscriptionID
		selects := []*ua.SimpleAttributeOperand{sao(nil, "EventType"), sao(nil, "Message"), sao(nil, "SourceNode"), sao(nil, "SourceName")}
		res := v.createEventItems(sessA, sub, eventSpec{queue: 3, discardOldest: tc.discardOldest,
			filter: eventFilterEO(selects, ofType(events.AuditEventType))})
		if res[0].RevisedQueueSize != 3 {
			t.Fatalf("revised queue %d", res[0].RevisedQueueSize)
		}
		for _, m := range []string{"e1", "e2", "e3", "e4", "e5"} {
			ev := auditEvent(t, "u", 0, 1)
			ev.Message = ua.NewLocalizedText(m)
			evs.raise(notifierNode, ev)
		}
		var got []string
		for _, l := range eventLists(t, v.publishOne(sessA, 1)) {
			typ := l.EventFields[0].Value().(*ua.NodeID)
			if events.SameNode(typ, events.EventQueueOverflowEventType) {
				// The overflow event passes a where clause that excludes
				// its type, and names the Server as its source.
				if !events.SameNode(l.EventFields[2].Value().(*ua.NodeID), serverNode) ||
					l.EventFields[3].Value() != "Internal/EventQueueOverflow" {
					t.Errorf("overflow event source %v %v", l.EventFields[2].Value(), l.EventFields[3].Value())
				}
				got = append(got, "overflow")
				continue
			}
			got = append(got, l.EventFields[1].Value().(*ua.LocalizedText).Text)
		}
		if !equalSlices(got, tc.want) {
			t.Errorf("discardOldest=%v: queue %v, want %v", tc.discardOldest, got, tc.want)
		}
	}
}

func TestDataAndEventItemsShareMessagesAndBudget(t *testing.T) {
	v, evs := newEventEnv(t, Options{})
	sub := v.createSub(sessA, subParams{maxNotif: 3}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1}, itemSpec{node: 2})
	v.createEventItems(sessA, sub, eventSpec{filter: eventFilterEO([]*ua.SimpleAttributeOperand{sao(nil, "Severity")})})
	evs.raise(notifierNode, baseEvent(10, "a"))
	evs.raise(notifierNode, baseEvent(20, "b"))

	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.publish(sessA, snd, 2)
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 2 {
		t.Fatalf("%d responses, want 2 (4 notifications, 3 per message)", len(got))
	}
	first, second := got[0].resp.(*ua.PublishResponse), got[1].resp.(*ua.PublishResponse)
	if !first.MoreNotifications || second.MoreNotifications {
		t.Fatalf("MoreNotifications %v, %v", first.MoreNotifications, second.MoreNotifications)
	}
	if len(first.NotificationMessage.NotificationData) != 2 {
		t.Fatalf("first message holds %d notification objects, want a DataChangeNotification and an EventNotificationList",
			len(first.NotificationMessage.NotificationData))
	}
	total := 0
	var severities []uint16
	for _, g := range got {
		n, e := notifications(t, g.resp), eventLists(t, g.resp)
		if len(n)+len(e) > 3 {
			t.Errorf("a message carries %d notifications, over MaxNotificationsPerPublish 3", len(n)+len(e))
		}
		total += len(n) + len(e)
		for _, l := range e {
			severities = append(severities, l.EventFields[0].Value().(uint16))
		}
	}
	if total != 4 || !equalSlices(severities, []uint16{10, 20}) {
		t.Fatalf("%d notifications, severities %v; want 4 and [10 20]", total, severities)
	}
	if first.NotificationMessage.SequenceNumber+1 != second.NotificationMessage.SequenceNumber {
		t.Fatalf("sequence numbers %d, %d", first.NotificationMessage.SequenceNumber, second.NotificationMessage.SequenceNumber)
	}
	if _, err := ua.Encode(first); err != nil {
		t.Fatalf("the mixed message does not encode: %v", err)
	}
}

func TestRepublishAndAckEventMessage(t *testing.T) {
	v, evs := newEventEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	v.createEventItems(sessA, sub, eventSpec{filter: eventFilterEO([]*ua.SimpleAttributeOperand{sao(nil, "EventId")})})
	raised := evs.raise(notifierNode, baseEvent(1, "x"))
	pr := v.publishOne(sessA, 1).(*ua.PublishResponse)
	seq := pr.NotificationMessage.SequenceNumber
	if !equalSlices(pr.AvailableSequenceNumbers, []uint32{seq}) {
		t.Fatalf("available %v, want [%d]", pr.AvailableSequenceNumbers, seq)
	}
	rep, err := v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: seq})
	if err != nil {
		t.Fatal(err)
	}
	lists := eventLists(t, &ua.PublishResponse{NotificationMessage: rep.NotificationMessage})
	if len(lists) != 1 || !bytes.Equal(lists[0].EventFields[0].Value().([]byte), raised.EventID) {
		t.Fatalf("republished %+v, want the event %x", lists, raised.EventID)
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 2, &ua.SubscriptionAcknowledgement{SubscriptionID: sub, SequenceNumber: seq})
	v.settle()
	if _, err := v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: seq}); err != ua.StatusBadMessageNotAvailable {
		t.Fatalf("Republish after the ack: %v, want BadMessageNotAvailable", err)
	}
}

func TestEventItemsCountAgainstItemLimits(t *testing.T) {
	v, _ := newEventEnv(t, Options{Limits: ualimits.Limits{MaxMonitoredItemsPerSubscription: 2, MaxMonitoredItems: 3}})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	f := eventFilterEO([]*ua.SimpleAttributeOperand{sao(nil, "Message")})
	res := v.createEventItems(sessA, sub, eventSpec{filter: f}, eventSpec{filter: f}, eventSpec{filter: f})
	if res[0].StatusCode != ua.StatusGood || res[1].StatusCode != ua.StatusGood || res[2].StatusCode != ua.StatusBadTooManyMonitoredItems {
		t.Fatalf("per subscription: %v %v %v", res[0].StatusCode, res[1].StatusCode, res[2].StatusCode)
	}
	sub2 := v.createSub(sessA, subParams{}).SubscriptionID
	data := v.createItems(sessA, sub2, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	ev := v.createEventItems(sessA, sub2, eventSpec{filter: f})
	if data[0].StatusCode != ua.StatusGood || ev[0].StatusCode != ua.StatusBadTooManyMonitoredItems {
		t.Fatalf("server-wide: data %v, event %v", data[0].StatusCode, ev[0].StatusCode)
	}
	st := v.e.Stats()
	if st.MonitoredItems != 3 || st.Refusals[LimitMonitoredItems] != 1 || st.Refusals[LimitMonitoredItemsPerSubscription] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestEventFilterRefusals(t *testing.T) {
	v, evs := newEventEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	good := []*ua.SimpleAttributeOperand{sao(nil, "Message")}
	literal := func(val any) *ua.ExtensionObject {
		return ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(val)})
	}
	elem := func(op ua.FilterOperator, args ...*ua.ExtensionObject) *ua.ContentFilterElement {
		return &ua.ContentFilterElement{FilterOperator: op, FilterOperands: args}
	}
	type want struct {
		item    ua.StatusCode
		selects []ua.StatusCode          // nil: not checked
		element map[int]ua.StatusCode    // where clause element results
		operand map[[2]int]ua.StatusCode // operand results by element, operand
	}
	for _, tc := range []struct {
		name string
		spec eventSpec
		want want
	}{
		{"no filter", eventSpec{}, want{item: ua.StatusBadEventFilterInvalid}},
		{"no select clauses", eventSpec{filter: eventFilterEO(nil)}, want{item: ua.StatusBadEventFilterInvalid}},
		{"data change filter", eventSpec{filter: dcf(ua.DataChangeTriggerStatus, ua.DeadbandTypeNone, 0)}, want{item: ua.StatusBadFilterNotAllowed}},
		{"foreign filter", eventSpec{filter: ua.NewExtensionObject(&ua.Range{})}, want{item: ua.StatusBadMonitoredItemFilterInvalid}},
		{"unknown node", eventSpec{notifier: ua.NewNumericNodeID(1, 7777), filter: eventFilterEO(good)}, want{item: ua.StatusBadNodeIDUnknown}},
		{"a variable", eventSpec{notifier: nodeID(1), filter: eventFilterEO(good)}, want{item: ua.StatusBadAttributeIDInvalid}},
		{"not a notifier", eventSpec{notifier: objectNode, filter: eventFilterEO(good)}, want{item: ua.StatusBadNotSupported}},
		{"select clause errors", eventSpec{filter: eventFilterEO([]*ua.SimpleAttributeOperand{
			sao(nil, "Message"),
			sao(nodeID(5), "Message"),
			sao(ua.NewNumericNodeID(3, 3), "Message"),
			sao(nil, "NoSuchField"),
			{TypeDefinitionID: events.BaseEventType, BrowsePath: []*ua.QualifiedName{{Name: "Message"}}, AttributeID: ua.AttributeIDDisplayName},
			{TypeDefinitionID: events.BaseEventType, BrowsePath: []*ua.QualifiedName{{Name: "Message"}}, AttributeID: ua.AttributeIDValue, IndexRange: "1"},
			{TypeDefinitionID: events.BaseEventType, AttributeID: ua.AttributeIDValue},
			nil,
		})}, want{item: ua.StatusBadEventFilterInvalid, selects: []ua.StatusCode{
			ua.StatusGood, ua.StatusBadTypeDefinitionInvalid, ua.StatusBadNodeIDUnknown, ua.StatusBadBrowseNameInvalid,
			ua.StatusBadAttributeIDInvalid, ua.StatusBadIndexRangeInvalid, ua.StatusBadAttributeIDInvalid, ua.StatusBadStructureMissing,
		}}},
		{"unsupported operator", eventSpec{filter: eventFilterEO(good, elem(ua.FilterOperatorLike, literal("a"), literal("b")))},
			want{item: ua.StatusBadEventFilterInvalid, element: map[int]ua.StatusCode{0: ua.StatusBadFilterOperatorUnsupported}}},
		{"invalid operator", eventSpec{filter: eventFilterEO(good, elem(99, literal(true)))},
			want{item: ua.StatusBadEventFilterInvalid, element: map[int]ua.StatusCode{0: ua.StatusBadFilterOperatorInvalid}}},
		{"operand count", eventSpec{filter: eventFilterEO(good, elem(ua.FilterOperatorEquals, literal(int32(1))))},
			want{item: ua.StatusBadEventFilterInvalid, element: map[int]ua.StatusCode{0: ua.StatusBadFilterOperandCountMismatch}}},
		{"attribute operand", eventSpec{filter: eventFilterEO(good, elem(ua.FilterOperatorIsNull, ua.NewExtensionObject(&ua.AttributeOperand{NodeID: nodeID(1), AttributeID: ua.AttributeIDValue})))},
			want{item: ua.StatusBadEventFilterInvalid, element: map[int]ua.StatusCode{0: ua.StatusBadFilterOperandInvalid},
				operand: map[[2]int]ua.StatusCode{{0, 0}: ua.StatusBadFilterOperandInvalid}}},
		{"element operand pointing back", eventSpec{filter: eventFilterEO(good,
			elem(ua.FilterOperatorNot, ua.NewExtensionObject(&ua.ElementOperand{Index: 1})),
			elem(ua.FilterOperatorNot, ua.NewExtensionObject(&ua.ElementOperand{Index: 1})))},
			want{item: ua.StatusBadEventFilterInvalid, element: map[int]ua.StatusCode{0: ua.StatusGood, 1: ua.StatusBadFilterOperandInvalid},
				operand: map[[2]int]ua.StatusCode{{1, 0}: ua.StatusBadFilterElementInvalid}}},
		{"OfType of a non-type", eventSpec{filter: eventFilterEO(good, elem(ua.FilterOperatorOfType, literal("BaseEventType")))},
			want{item: ua.StatusBadEventFilterInvalid, operand: map[[2]int]ua.StatusCode{{0, 0}: ua.StatusBadFilterOperandInvalid}}},
		{"where field unknown", eventSpec{filter: eventFilterEO(good, elem(ua.FilterOperatorIsNull, ua.NewExtensionObject(sao(nil, "Nope"))))},
			want{item: ua.StatusBadEventFilterInvalid, operand: map[[2]int]ua.StatusCode{{0, 0}: ua.StatusBadBrowseNameInvalid}}},
	} {
		before := evs.count()
		r := v.createEventItems(sessA, sub, tc.spec)[0]
		if r.StatusCode != tc.want.item || r.MonitoredItemID != 0 {
			t.Errorf("%s: status %v id %d, want %v", tc.name, r.StatusCode, r.MonitoredItemID, tc.want.item)
			continue
		}
		if evs.count() != before {
			t.Errorf("%s: a refused item left a registration", tc.name)
		}
		if _, err := ua.Encode(&ua.CreateMonitoredItemsResponse{ResponseHeader: v.e.header(0, 0), Results: []*ua.MonitoredItemCreateResult{r}}); err != nil {
			t.Errorf("%s: the result does not encode: %v", tc.name, err)
		}
		if tc.want.selects == nil && tc.want.element == nil && tc.want.operand == nil {
			continue
		}
		fr, ok := r.FilterResult.Value.(*ua.EventFilterResult)
		if !ok {
			t.Errorf("%s: FilterResult %T, want an EventFilterResult", tc.name, r.FilterResult.Value)
			continue
		}
		if tc.want.selects != nil && !equalSlices(fr.SelectClauseResults, tc.want.selects) {
			t.Errorf("%s: select results %v, want %v", tc.name, fr.SelectClauseResults, tc.want.selects)
		}
		for i, st := range tc.want.element {
			if got := fr.WhereClauseResult.ElementResults[i].StatusCode; got != st {
				t.Errorf("%s: element %d result %v, want %v", tc.name, i, got, st)
			}
		}
		for k, st := range tc.want.operand {
			if got := fr.WhereClauseResult.ElementResults[k[0]].OperandStatusCodes[k[1]]; got != st {
				t.Errorf("%s: element %d operand %d result %v, want %v", tc.name, k[0], k[1], got, st)
			}
		}
	}
}

func TestEventItemModes(t *testing.T) {
	v, evs := newEventEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	res := v.createEventItems(sessA, sub, eventSpec{mode: ua.MonitoringModeSampling,
		filter: eventFilterEO([]*ua.SimpleAttributeOperand{sao(nil, "Severity")})})
	itemID := res[0].MonitoredItemID
	setMode := func(m ua.MonitoringMode) {
		t.Helper()
		if _, err := v.e.SetMonitoringMode(sessA, &ua.SetMonitoringModeRequest{SubscriptionID: sub, MonitoringMode: m, MonitoredItemIDs: []uint32{itemID}}); err != nil {
			t.Fatal(err)
		}
	}
	evs.raise(notifierNode, baseEvent(9, "dropped by Disabled"))
	setMode(ua.MonitoringModeDisabled)
	evs.raise(notifierNode, baseEvent(1, "while disabled"))
	setMode(ua.MonitoringModeSampling)
	evs.raise(notifierNode, baseEvent(2, "while sampling"))
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	if l := eventLists(t, snd.all()[0].resp); len(l) != 0 {
		t.Fatalf("events reported while Disabled/Sampling: %d", len(l))
	}
	setMode(ua.MonitoringModeReporting)
	evs.raise(notifierNode, baseEvent(3, "while reporting"))
	var sev []uint16
	for _, l := range eventLists(t, v.publishOne(sessA, 2)) {
		sev = append(sev, l.EventFields[0].Value().(uint16))
	}
	if !equalSlices(sev, []uint16{2, 3}) {
		t.Fatalf("severities %v, want [2 3]: the sampled event is reported when Reporting starts, the disabled one never", sev)
	}

	if _, err := v.e.DeleteMonitoredItems(sessA, &ua.DeleteMonitoredItemsRequest{SubscriptionID: sub, MonitoredItemIDs: []uint32{itemID}}); err != nil {
		t.Fatal(err)
	}
	if n := evs.count(); n != 0 {
		t.Fatalf("%d event registrations after the delete", n)
	}
}

func TestModifyEventItem(t *testing.T) {
	v, evs := newEventEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	res := v.createEventItems(sessA, sub, eventSpec{queue: 5, discardOldest: true,
		filter: eventFilterEO([]*ua.SimpleAttributeOperand{sao(nil, "Severity")})})
	for sev := uint16(1); sev <= 4; sev++ {
		evs.raise(notifierNode, baseEvent(sev, "x"))
	}
	modify := func(p *ua.MonitoringParameters) *ua.MonitoredItemModifyResult {
		t.Helper()
		resp, err := v.e.ModifyMonitoredItems(sessA, &ua.ModifyMonitoredItemsRequest{SubscriptionID: sub,
			ItemsToModify: []*ua.MonitoredItemModifyRequest{{MonitoredItemID: res[0].MonitoredItemID, RequestedParameters: p}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Results[0]
	}
	if r := modify(&ua.MonitoringParameters{ClientHandle: 9, QueueSize: 2}); r.StatusCode != ua.StatusBadEventFilterInvalid {
		t.Fatalf("modify without a filter: %v", r.StatusCode)
	}
	r := modify(&ua.MonitoringParameters{ClientHandle: 9, QueueSize: 2, DiscardOldest: true,
		Filter: eventFilterEO([]*ua.SimpleAttributeOperand{sao(nil, "Message"), sao(nil, "Severity")})})
	if r.StatusCode != ua.StatusGood || r.RevisedQueueSize != 2 {
		t.Fatalf("modify: %v queue %d", r.StatusCode, r.RevisedQueueSize)
	}
	evs.raise(notifierNode, baseEvent(5, "new filter"))
	lists := eventLists(t, v.publishOne(sessA, 1))
	// Queue cut to two events (3, 4: oldest dropped, overflow event at the
	// head), then 5 pushed 3 out.
	if len(lists) != 3 || lists[0].ClientHandle != 9 {
		t.Fatalf("%d events, handle %d", len(lists), lists[0].ClientHandle)
	}
	if got := fieldValues(lists[2]); len(got) != 2 || got[1] != uint16(5) {
		t.Fatalf("new event fields %v, want the new select clauses", got)
	}
	if got := fieldValues(lists[1]); len(got) != 1 || got[0] != uint16(4) {
		t.Fatalf("queued event %v, want the one queued under the old filter", got)
	}
	if typ := fieldValues(lists[0]); len(typ) != 2 || typ[1] != uint16(1) {
		t.Fatalf("head %v, want the overflow event (severity 1) under the new select clauses", typ)
	}
}

func TestTransferredSubscriptionKeepsItsEventItems(t *testing.T) {
	v, evs := newEventEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	v.createEventItems(sessA, sub, eventSpec{filter: eventFilterEO([]*ua.SimpleAttributeOperand{sao(nil, "Severity")})})
	evs.raise(notifierNode, baseEvent(1, "before"))
	v.e.SessionClosed(sessA, false)
	tr, err := v.e.TransferSubscriptions(sessB, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{sub}, SendInitialValues: true})
	if err != nil || tr.Results[0].StatusCode != ua.StatusGood {
		t.Fatalf("transfer: %v %+v", err, tr)
	}
	evs.raise(notifierNode, baseEvent(2, "after"))
	var sev []uint16
	for _, l := range eventLists(t, v.publishOne(sessB, 1)) {
		sev = append(sev, l.EventFields[0].Value().(uint16))
	}
	if !equalSlices(sev, []uint16{1, 2}) {
		t.Fatalf("new owner got severities %v, want [1 2]", sev)
	}
}

// BenchmarkEventCallback measures what raising one event costs per event
// item on the raiser's goroutine: the where clause (OfType), eight select
// clauses and the queue. 1,000 items watch the notifier; one iteration is
// one raise.
func BenchmarkEventCallback(b *testing.B) {
	evs := newFakeEvents(time.Now)
	e := New(newFakeSource(time.Now, 1), Options{Events: evs, Logger: slog.New(slog.DiscardHandler), DefaultEventQueueSize: 1})
	defer e.Close()
	resp, err := e.CreateSubscription(sessA, &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 1000, PublishingEnabled: true})
	if err != nil {
		b.Fatal(err)
	}
	var selects []*ua.SimpleAttributeOperand
	for _, f := range []string{"EventId", "EventType", "SourceNode", "SourceName", "Time", "Message", "Severity", "ClientUserId"} {
		selects = append(selects, sao(nil, f))
	}
	const items = 1000
	req := &ua.CreateMonitoredItemsRequest{SubscriptionID: resp.SubscriptionID}
	for range items {
		req.ItemsToCreate = append(req.ItemsToCreate, eventSpec{filter: eventFilterEO(selects, ofType(events.AuditEventType))}.request())
	}
	if _, err := e.CreateMonitoredItems(sessA, req); err != nil {
		b.Fatal(err)
	}
	ev, err := events.AuditWriteUpdate{Node: nodeID(1), ClientUserID: "op", NewValue: int32(1)}.Event()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		evs.raise(notifierNode, ev)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), "ns/item")
}
