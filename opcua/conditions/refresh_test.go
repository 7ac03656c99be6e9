package conditions_test

import (
	"bytes"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/conditions"
	"github.com/otopcua/otopcua/opcua/events"
)

func eventType(l *ua.EventFieldList) *ua.NodeID {
	n, _ := l.EventFields[1].Value().(*ua.NodeID)
	return n
}

func isType(l *ua.EventFieldList, typ uint32) bool { return events.SameNode(eventType(l), nsid(typ)) }

// TestConditionRefresh: ConditionRefresh on one subscription brings it a
// RefreshStartEvent, the retained conditions and a RefreshEndEvent, and
// nothing to another subscription of the same session or of another
// session; another session may not refresh it; ConditionRefresh2 refreshes
// one item.
func TestConditionRefresh(t *testing.T) {
	p := startPlant(t)
	if err := p.m.Define(lowSpec()); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	retained, err := p.m.Update("HighTemperature", conditions.State{Enabled: true, Active: true, Retain: true, Severity: 800, Quality: ua.StatusOK, Time: at})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.m.Update("LowTemperature", conditions.State{Enabled: true, Acked: true, Confirmed: true, Quality: ua.StatusOK, Time: at}); err != nil {
		t.Fatal(err)
	}

	a, b := p.connect(t), p.connect(t)
	s1 := subscribe(t, a,
		eventItem(nsid(id.Server), 1, alarmFields, nil),
		eventItem(press1, 2, alarmFields, ofType(id.AuditEventType))) // no condition passes
	s1b := subscribe(t, a, eventItem(nsid(id.Server), 3, alarmFields, nil))
	s2 := subscribe(t, b, eventItem(nsid(id.Server), 4, alarmFields, nil))
	refresh := func(c *gopcua.Client, args ...any) ua.StatusCode {
		t.Helper()
		m := uint32(id.ConditionType_ConditionRefresh)
		if len(args) == 2 {
			m = id.ConditionType_ConditionRefresh2
		}
		return callMethod(t, c, nsid(id.ConditionType), m, args...).StatusCode
	}

	if st := refresh(a, s1.sub.SubscriptionID); st != ua.StatusOK {
		t.Fatalf("ConditionRefresh: %v", st)
	}
	s1.waitFor("start, the retained condition, end", func(g map[uint32][]*ua.EventFieldList) bool {
		return len(g[1]) >= 3 && len(g[2]) >= 2
	})
	h1, h2 := s1.got[1], s1.got[2]
	if len(h1) != 3 || !isType(h1[0], id.RefreshStartEventType) || !isType(h1[1], id.AlarmConditionType) || !isType(h1[2], id.RefreshEndEventType) {
		t.Fatalf("the Server item got %d events: %v", len(h1), h1)
	}
	cond := h1[1].EventFields
	if !bytes.Equal(cond[0].Value().([]byte), retained) || cond[7].Value() != "HighTemperature" || cond[8].Value() != true || cond[6].Value() != uint16(800) {
		t.Errorf("refreshed condition: EventId %x (want %x, the original), name %v, active %v, severity %v",
			cond[0].Value(), retained, cond[7].Value(), cond[8].Value(), cond[6].Value())
	}
	if n, _ := h1[0].EventFields[2].Value().(*ua.NodeID); !events.SameNode(n, nsid(id.Server)) {
		t.Errorf("RefreshStartEvent SourceNode %v", h1[0].EventFields[2].Value())
	}
	// The where clause drops the condition but not Start and End, and the
	// copies of Start share one EventId.
	if len(h2) != 2 || !isType(h2[0], id.RefreshStartEventType) || !isType(h2[1], id.RefreshEndEventType) {
		t.Fatalf("the filtered press1 item got %d events: %v", len(h2), h2)
	}
	if !bytes.Equal(h1[0].EventFields[0].Value().([]byte), h2[0].EventFields[0].Value().([]byte)) {
		t.Error("the two RefreshStartEvent copies have different EventIds")
	}

	// A live event as a barrier: the other subscriptions get it as their
	// first event, so the refresh reached neither.
	barrier, err := p.m.Update("LowTemperature", conditions.State{Enabled: true, Acked: true, Confirmed: true, Quality: ua.StatusOK})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		sub *eventSub
		h   uint32
	}{{s1b, 3}, {s2, 4}} {
		s.sub.waitFor("the barrier event", count(s.h, 1))
		got := s.sub.got[s.h]
		if len(got) != 1 || !bytes.Equal(got[0].EventFields[0].Value().([]byte), barrier) {
			t.Fatalf("item %d got %d events before the barrier: %v", s.h, len(got)-1, got)
		}
	}

	// Another session may not refresh s1; unknown ids are refused.
	if st := refresh(b, s1.sub.SubscriptionID); st != ua.StatusBadUserAccessDenied {
		t.Fatalf("another session's subscription: %v", st)
	}
	if st := refresh(a, s1.sub.SubscriptionID+1000); st != ua.StatusBadSubscriptionIDInvalid {
		t.Fatalf("unknown subscription: %v", st)
	}
	if st := refresh(a, s1.sub.SubscriptionID, uint32(999999)); st != ua.StatusBadMonitoredItemIDInvalid {
		t.Fatalf("ConditionRefresh2 with an unknown item: %v", st)
	}
	empty, err := a.Subscribe(testCtx(t), &gopcua.SubscriptionParameters{Interval: time.Second}, make(chan *gopcua.PublishNotificationData, 1))
	if err != nil {
		t.Fatal(err)
	}
	if st := refresh(a, empty.SubscriptionID); st != ua.StatusBadNothingToDo {
		t.Fatalf("a subscription without event items: %v", st)
	}
	if r := callMethod(t, a, nsid(id.ConditionType), id.ConditionType_ConditionRefresh, int32(s1.sub.SubscriptionID)); r.StatusCode != ua.StatusBadInvalidArgument {
		t.Fatalf("SubscriptionId as Int32: %v", r.StatusCode)
	}

	// ConditionRefresh2 refreshes the Server item alone; the barrier
	// (a live event in the same publishing cycle) shows the other item
	// got nothing.
	if st := refresh(a, s1.sub.SubscriptionID, s1.items[0]); st != ua.StatusOK {
		t.Fatalf("ConditionRefresh2: %v", st)
	}
	s1.waitFor("the second refresh", count(1, 7)) // 3, the barrier, 3
	h1 = s1.got[1]
	if !isType(h1[4], id.RefreshStartEventType) || !isType(h1[5], id.AlarmConditionType) || !isType(h1[6], id.RefreshEndEventType) {
		t.Fatalf("ConditionRefresh2 delivered %v", h1[4:])
	}
	if len(s1.got[2]) != 2 {
		t.Fatalf("ConditionRefresh2 reached the other item: %d events", len(s1.got[2]))
	}
}
