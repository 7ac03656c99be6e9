package conditions_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/events"
)

// storedAlarms is a fake historian: n AlarmConditionType events of
// HighTemperature, one per second, as the historian adapter stores them
// (unprepared, their fields by browse path).
type storedAlarms struct {
	evs []events.Event

	mu        sync.Mutex
	notifiers []string
}

var _ opcua.EventHistory = (*storedAlarms)(nil)

var hist0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

func newStoredAlarms(t *testing.T, n int) *storedAlarms {
	h := &storedAlarms{}
	for k := range n {
		ev := events.Event{
			EventID:     []byte(fmt.Sprintf("hist-%03d", k)),
			EventType:   nsid(id.AlarmConditionType),
			SourceNode:  temperature,
			SourceName:  "press1/Temperature",
			Time:        hist0.Add(time.Duration(k) * time.Second),
			Message:     ua.NewLocalizedText(fmt.Sprintf("transition %d", k)),
			Severity:    700,
			ConditionID: highTemp,
		}
		if err := ev.Set(events.Field("ActiveState", "Id"), k%2 == 0); err != nil {
			t.Fatal(err)
		}
		if err := ev.Set(events.Field("ConditionName"), "HighTemperature"); err != nil {
			t.Fatal(err)
		}
		h.evs = append(h.evs, ev)
	}
	return h
}

func (h *storedAlarms) ReadEvents(_ context.Context, notifier *ua.NodeID, start, end time.Time, max uint32) ([]events.Event, error) {
	h.mu.Lock()
	h.notifiers = append(h.notifiers, notifier.String())
	h.mu.Unlock()
	var out []events.Event
	for _, ev := range h.evs {
		if !ev.Time.Before(start) && ev.Time.Before(end) {
			out = append(out, ev)
		}
	}
	if end.Before(start) {
		for _, ev := range slices.Backward(h.evs) {
			if ev.Time.After(end) && !ev.Time.After(start) {
				out = append(out, ev)
			}
		}
	}
	return out[:min(len(out), int(max))], nil
}

func historyRead(t *testing.T, c *gopcua.Client, release bool, d *ua.ReadEventDetails, node *ua.NodeID, cp []byte) *ua.HistoryReadResult {
	t.Helper()
	req := &ua.HistoryReadRequest{
		HistoryReadDetails:        ua.NewExtensionObject(d),
		TimestampsToReturn:        ua.TimestampsToReturnBoth,
		ReleaseContinuationPoints: release,
		NodesToRead:               []*ua.HistoryReadValueID{{NodeID: node, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}},
	}
	var resp *ua.HistoryReadResponse
	err := c.Send(testCtx(t), req, func(r ua.Response) error {
		var ok bool
		if resp, ok = r.(*ua.HistoryReadResponse); !ok {
			return fmt.Errorf("response %T", r)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("HistoryRead: %v", err)
	}
	return resp.Results[0]
}

// TestHistoryReadConditionEvents reads 250 stored condition events of the
// device folder with NumValuesPerNode 100: three pages through
// continuation points, the selected fields (the ConditionId included); a
// released or unknown point is refused.
func TestHistoryReadConditionEvents(t *testing.T) {
	p := startPlant(t)
	h := newStoredAlarms(t, 250)
	if err := p.srv.SetEventHistory(h); err != nil {
		t.Fatal(err)
	}
	c := p.connect(t)
	selects := []*ua.SimpleAttributeOperand{
		field(id.BaseEventType, "EventId"), field(id.BaseEventType, "Time"), field(id.ConditionType, "ConditionName"),
		field(id.AlarmConditionType, "ActiveState", "Id"), conditionID(), field(id.AuditEventType, "ClientUserId"),
	}
	d := &ua.ReadEventDetails{NumValuesPerNode: 100, StartTime: hist0, EndTime: hist0.Add(time.Hour),
		Filter: &ua.EventFilter{SelectClauses: selects, WhereClause: &ua.ContentFilter{}}}

	// gopcua's own HistoryReadEvent for the first page.
	resp, err := c.HistoryReadEvent(testCtx(t), []*ua.HistoryReadValueID{{NodeID: press1, DataEncoding: &ua.QualifiedName{}}}, d)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Results[0]
	var pages [][]*ua.HistoryEventFieldList
	var cps [][]byte
	for {
		if r.StatusCode != ua.StatusOK {
			t.Fatalf("page %d: %v", len(pages), r.StatusCode)
		}
		he, ok := r.HistoryData.Value.(*ua.HistoryEvent)
		if !ok {
			t.Fatalf("HistoryData %T", r.HistoryData.Value)
		}
		pages = append(pages, he.Events)
		if len(r.ContinuationPoint) == 0 {
			break
		}
		cps = append(cps, r.ContinuationPoint)
		r = historyRead(t, c, false, d, press1, r.ContinuationPoint)
	}
	if len(pages) != 3 || len(pages[0]) != 100 || len(pages[1]) != 100 || len(pages[2]) != 50 {
		t.Fatalf("%d pages", len(pages))
	}
	k := 0
	for _, page := range pages {
		for _, e := range page {
			f := e.EventFields
			if string(f[0].Value().([]byte)) != fmt.Sprintf("hist-%03d", k) || !f[1].Value().(time.Time).Equal(hist0.Add(time.Duration(k)*time.Second)) ||
				f[2].Value() != "HighTemperature" || f[3].Value() != (k%2 == 0) || f[5].Value() != nil {
				t.Fatalf("event %d: %v %v %v %v %v", k, f[0].Value(), f[1].Value(), f[2].Value(), f[3].Value(), f[5].Value())
			}
			if n, _ := f[4].Value().(*ua.NodeID); !events.SameNode(n, highTemp) {
				t.Fatalf("event %d ConditionId %v", k, f[4].Value())
			}
			k++
		}
	}
	if h.notifiers[0] != press1.String() {
		t.Errorf("the history was asked for %v", h.notifiers[0])
	}

	// A used point is gone; releasing a live one frees it; unknown ones
	// are refused.
	if r := historyRead(t, c, false, d, press1, cps[0]); r.StatusCode != ua.StatusBadContinuationPointInvalid {
		t.Fatalf("a used point: %v", r.StatusCode)
	}
	first := historyRead(t, c, false, d, press1, nil)
	if r := historyRead(t, c, true, d, press1, first.ContinuationPoint); r.StatusCode != ua.StatusOK {
		t.Fatalf("release: %v", r.StatusCode)
	}
	if r := historyRead(t, c, false, d, press1, first.ContinuationPoint); r.StatusCode != ua.StatusBadContinuationPointInvalid {
		t.Fatalf("a released point: %v", r.StatusCode)
	}
	if r := historyRead(t, c, false, d, press1, []byte("forged")); r.StatusCode != ua.StatusBadContinuationPointInvalid {
		t.Fatalf("an unknown point: %v", r.StatusCode)
	}
	// The Server object has the HistoryRead bit once a history is set; a
	// condition (not a HistoryRead notifier) has not.
	if r := historyRead(t, c, false, d, nsid(id.Server), nil); r.StatusCode != ua.StatusOK {
		t.Fatalf("the Server object: %v", r.StatusCode)
	}
	if r := historyRead(t, c, false, d, highTemp, nil); r.StatusCode != ua.StatusBadHistoryOperationUnsupported {
		t.Fatalf("the condition: %v", r.StatusCode)
	}
	if err := p.srv.SetEventHistory(nil); err != nil {
		t.Fatal(err)
	}
	if r := historyRead(t, c, false, d, press1, nil); r.StatusCode != ua.StatusBadHistoryOperationUnsupported {
		t.Fatalf("no provider: %v", r.StatusCode)
	}
	if bits := readValues(t, c, ua.AttributeIDEventNotifier, nsid(id.Server)); bits[0].Value.Value() != byte(1) {
		t.Fatalf("the Server's EventNotifier after SetEventHistory(nil): %v", bits[0].Value.Value())
	}
}
