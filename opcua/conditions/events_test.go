package conditions_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/conditions"
	"github.com/otopcua/otopcua/opcua/events"
)

// alarmFields are the select clauses of the condition items, each on the
// type that declares it, with the ConditionId operand last.
var alarmFields = []*ua.SimpleAttributeOperand{
	field(id.BaseEventType, "EventId"),                            // 0
	field(id.BaseEventType, "EventType"),                          // 1
	field(id.BaseEventType, "SourceNode"),                         // 2
	field(id.BaseEventType, "SourceName"),                         // 3
	field(id.BaseEventType, "Time"),                               // 4
	field(id.BaseEventType, "Message"),                            // 5
	field(id.BaseEventType, "Severity"),                           // 6
	field(id.ConditionType, "ConditionName"),                      // 7
	field(id.AlarmConditionType, "ActiveState", "Id"),             // 8
	field(id.AcknowledgeableConditionType, "AckedState", "Id"),    // 9
	field(id.AcknowledgeableConditionType, "ConfirmedState"),      // 10
	field(id.ConditionType, "EnabledState", "Id"),                 // 11
	field(id.ConditionType, "Retain"),                             // 12
	field(id.AlarmConditionType, "ActiveState"),                   // 13
	field(id.ConditionType, "Quality"),                            // 14
	field(id.ConditionType, "Comment"),                            // 15
	field(id.ConditionType, "ClientUserId"),                       // 16
	field(id.ConditionType, "LastSeverity"),                       // 17
	field(id.ConditionType, "ConditionClassId"),                   // 18
	field(id.ConditionType, "BranchId"),                           // 19
	field(id.AlarmConditionType, "ActiveState", "TransitionTime"), // 20
	field(id.AlarmConditionType, "InputNode"),                     // 21
	field(id.AlarmConditionType, "SuppressedOrShelved"),           // 22
	field(id.ConditionType, "Quality", "SourceTimestamp"),         // 23
	conditionID(), // 24
}

func text(v *ua.Variant) string {
	if lt, ok := v.Value().(*ua.LocalizedText); ok {
		return lt.Text
	}
	return "<not LocalizedText>"
}

// TestClientReceivesConditionEvents subscribes to the condition's events
// on the Server object, on the device folder and on the condition itself,
// and follows an alarm through active, acknowledged and inactive.
func TestClientReceivesConditionEvents(t *testing.T) {
	p := startPlant(t)
	c := p.connect(t)
	s := subscribe(t, c,
		eventItem(nsid(id.Server), 1, alarmFields, nil),
		eventItem(press1, 2, alarmFields, nil),
		eventItem(highTemp, 3, alarmFields, ofType(id.AlarmConditionType)))

	t1 := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	steps := []conditions.State{
		{Enabled: true, Active: true, Acked: false, Confirmed: false, Retain: true, Severity: 800, Message: "92 °C", Quality: ua.StatusOK, Time: t1},
		{Enabled: true, Active: true, Acked: true, Confirmed: false, Retain: true, Severity: 800, Message: "92 °C", Comment: "on it", ClientUserID: "anonymous", Quality: ua.StatusOK, Time: t1.Add(time.Minute)},
		{Enabled: true, Active: false, Acked: true, Confirmed: true, Retain: false, Quality: ua.StatusBadOutOfService, Time: t1.Add(2 * time.Minute)},
	}
	var ids [][]byte
	for _, st := range steps {
		eid, err := p.m.Update("HighTemperature", st)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, eid)
	}
	s.waitFor("3 events on each item", func(g map[uint32][]*ua.EventFieldList) bool {
		return len(g[1]) >= 3 && len(g[2]) >= 3 && len(g[3]) >= 3
	})
	for h := uint32(1); h <= 3; h++ {
		if len(s.got[h]) != 3 {
			t.Fatalf("item %d got %d events, want 3", h, len(s.got[h]))
		}
		activeAt := []time.Time{t1, t1, t1.Add(2 * time.Minute)}
		for k, ev := range s.got[h] {
			checkEvent(t, h, k, ev.EventFields, ids[k], steps[k], activeAt[k])
		}
	}
	// The last event's LastSeverity is the severity before it (800) and
	// its Severity the Spec's again (the State gave 0).
	f := s.got[1][2].EventFields
	if f[6].Value() != uint16(700) || f[17].Value() != uint16(800) {
		t.Errorf("Severity %v LastSeverity %v, want 700 and 800", f[6].Value(), f[17].Value())
	}
	if f[5].Value().(*ua.LocalizedText).Text != "temperature above 80 °C" {
		t.Errorf("Message %v, want the Spec's", f[5].Value())
	}
	st, last, ok := p.m.Snapshot("HighTemperature")
	if !ok || !bytes.Equal(last, ids[2]) || st.Active || st.Quality != ua.StatusBadOutOfService {
		t.Errorf("Snapshot %+v %x %v", st, last, ok)
	}
}

func checkEvent(t *testing.T, h uint32, k int, f []*ua.Variant, eventID []byte, st conditions.State, activeAt time.Time) {
	t.Helper()
	if len(f) != len(alarmFields) {
		t.Fatalf("item %d event %d: %d fields", h, k, len(f))
	}
	checkNode := func(name string, v *ua.Variant, want *ua.NodeID) {
		t.Helper()
		if n, ok := v.Value().(*ua.NodeID); !ok || !events.SameNode(n, want) {
			t.Errorf("item %d event %d %s = %v, want %v", h, k, name, v.Value(), want)
		}
	}
	if !bytes.Equal(f[0].Value().([]byte), eventID) {
		t.Errorf("item %d event %d EventId %x, want %x (Update's)", h, k, f[0].Value(), eventID)
	}
	checkNode("EventType", f[1], nsid(id.AlarmConditionType))
	checkNode("SourceNode", f[2], temperature)
	checkNode("ConditionClassId", f[18], nsid(id.BaseConditionClassType))
	checkNode("BranchId", f[19], ua.NewTwoByteNodeID(0))
	checkNode("InputNode", f[21], temperature)
	checkNode("ConditionId", f[24], highTemp)
	if tm, ok := f[4].Value().(time.Time); !ok || !tm.Equal(st.Time) {
		t.Errorf("item %d event %d Time %v, want %v", h, k, f[4].Value(), st.Time)
	}
	if tm, ok := f[23].Value().(time.Time); !ok || !tm.Equal(st.Time) {
		t.Errorf("item %d event %d Quality/SourceTimestamp %v", h, k, f[23].Value())
	}
	activeText := map[bool]string{true: "Active", false: "Inactive"}[st.Active]
	confirmedText := map[bool]string{true: "Confirmed", false: "Unconfirmed"}[st.Confirmed]
	want := map[int]any{3: "press1/Temperature", 7: "HighTemperature", 8: st.Active, 9: st.Acked, 11: st.Enabled,
		12: st.Retain, 14: st.Quality, 16: st.ClientUserID, 22: false}
	if st.Severity != 0 {
		want[6] = st.Severity
	}
	for i, w := range want {
		got := f[i].Value()
		if got != w && !(w == "" && got == nil) {
			t.Errorf("item %d event %d field %d (%s) = %#v, want %#v", h, k, i, fieldName(i), got, w)
		}
	}
	if text(f[13]) != activeText || text(f[10]) != confirmedText || text(f[15]) != st.Comment {
		t.Errorf("item %d event %d ActiveState %q ConfirmedState %q Comment %q", h, k, text(f[13]), text(f[10]), text(f[15]))
	}
	if st.Message != "" && text(f[5]) != st.Message {
		t.Errorf("item %d event %d Message %q", h, k, text(f[5]))
	}
	if tm, ok := f[20].Value().(time.Time); !ok || !tm.Equal(activeAt) {
		t.Errorf("item %d event %d ActiveState/TransitionTime %v, want %v", h, k, f[20].Value(), activeAt)
	}
}

func fieldName(i int) string {
	op := alarmFields[i]
	if len(op.BrowsePath) == 0 {
		return "ConditionId"
	}
	n := ""
	for _, q := range op.BrowsePath {
		n += "/" + q.Name
	}
	return n[1:]
}
