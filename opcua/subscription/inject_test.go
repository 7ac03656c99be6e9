package subscription

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// TestInjectEventsReachOneSubscription: events injected into one
// subscription reach its event items only, in order, through each item's
// select clauses and (unless bypassed) its where clause; the events an
// item's notifier function returns depend on the notifier.
func TestInjectEventsReachOneSubscription(t *testing.T) {
	v, _ := newEventEnv(t, Options{})
	selects := []*ua.SimpleAttributeOperand{sao(nil, "EventType"), sao(nil, "Message")}
	sub1 := v.createSub(sessA, subParams{}).SubscriptionID
	res := v.createEventItems(sessA, sub1,
		eventSpec{handle: 1, notifier: serverNode, filter: eventFilterEO(selects)},
		eventSpec{handle: 2, notifier: notifierNode, filter: eventFilterEO(selects, ofType(events.AuditEventType))})
	sub2 := v.createSub(sessA, subParams{}).SubscriptionID
	v.createEventItems(sessA, sub2, eventSpec{handle: 3, notifier: serverNode, filter: eventFilterEO(selects)})
	subB := v.createSub(sessB, subParams{}).SubscriptionID
	v.createEventItems(sessB, subB, eventSpec{handle: 4, notifier: serverNode, filter: eventFilterEO(selects)})

	now := v.clock.Now()
	mk := func(typ *ua.NodeID, msg string) *events.Event {
		ev := events.Event{EventType: typ, Message: ua.NewLocalizedText(msg)}
		return ev.Prepare(now, newFakeEvents(nil).chain(typ))
	}
	start, end := mk(events.BaseEventType, "start"), mk(events.BaseEventType, "end")
	plain, audit := mk(events.BaseEventType, "plain"), mk(events.AuditEventType, "audit")
	var asked []string
	st := v.e.InjectEvents(sessA, sub1, 0, func(n *ua.NodeID) []Injection {
		asked = append(asked, n.String())
		list := []Injection{{Event: start, BypassWhere: true}, {Event: audit}}
		if events.SameNode(n, serverNode) {
			list = append(list, Injection{Event: plain}) // the Server's item only
		}
		return append(list, Injection{}, Injection{Event: end, BypassWhere: true})
	})
	if st != ua.StatusGood || len(asked) != 2 {
		t.Fatalf("InjectEvents: %v, asked for %v", st, asked)
	}
	if res[0].StatusCode != ua.StatusGood || res[1].StatusCode != ua.StatusGood {
		t.Fatalf("items: %v %v", res[0].StatusCode, res[1].StatusCode)
	}

	snd := &fakeSender{}
	for k := range 3 {
		v.publish(sessA, snd, uint32(10+k))
	}
	sndB := &fakeSender{}
	v.publish(sessB, sndB, 20)
	v.advance(100 * time.Millisecond)
	got := map[uint32][]string{}
	for _, s := range snd.all() {
		pr := s.resp.(*ua.PublishResponse)
		if pr.SubscriptionID != sub1 && len(eventLists(t, pr)) > 0 {
			t.Fatalf("subscription %d got injected events", pr.SubscriptionID)
		}
		for _, l := range eventLists(t, pr) {
			got[l.ClientHandle] = append(got[l.ClientHandle], l.EventFields[1].Value().(*ua.LocalizedText).Text)
		}
	}
	for _, s := range sndB.all() {
		if n := len(eventLists(t, s.resp)); n != 0 {
			t.Fatalf("another session's subscription got %d events", n)
		}
	}
	want := map[uint32][]string{
		1: {"start", "audit", "plain", "end"},
		2: {"start", "audit", "end"}, // OfType(AuditEventType) drops nothing bypassed
	}
	for h, w := range want {
		if len(got[h]) != len(w) {
			t.Fatalf("item %d got %v, want %v", h, got[h], w)
		}
		for k := range w {
			if got[h][k] != w[k] {
				t.Fatalf("item %d got %v, want %v", h, got[h], w)
			}
		}
	}
}

func TestInjectEventsRefusals(t *testing.T) {
	v, _ := newEventEnv(t, Options{})
	none := func(*ua.NodeID) []Injection { t.Fatal("events asked for on a refusal"); return nil }
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	data := v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})[0].MonitoredItemID
	if st := v.e.InjectEvents(sessA, sub, 0, none); st != ua.StatusBadNothingToDo {
		t.Fatalf("no event items: %v", st)
	}
	ev := v.createEventItems(sessA, sub, eventSpec{filter: eventFilterEO([]*ua.SimpleAttributeOperand{sao(nil, "Message")})})[0].MonitoredItemID
	for _, tc := range []struct {
		name      string
		sess      SessionID
		sub, item uint32
		want      ua.StatusCode
	}{
		{"unknown subscription", sessA, sub + 1000, 0, ua.StatusBadSubscriptionIDInvalid},
		{"another session's", sessB, sub, 0, ua.StatusBadUserAccessDenied},
		{"unknown item", sessA, sub, ev + 1000, ua.StatusBadMonitoredItemIDInvalid},
		{"a data item", sessA, sub, data, ua.StatusBadMonitoredItemIDInvalid},
	} {
		if st := v.e.InjectEvents(tc.sess, tc.sub, tc.item, none); st != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, st, tc.want)
		}
	}
	calls := 0
	if st := v.e.InjectEvents(sessA, sub, ev, func(*ua.NodeID) []Injection { calls++; return nil }); st != ua.StatusGood || calls != 1 {
		t.Fatalf("one event item: %v, %d calls", st, calls)
	}
	v.e.Close()
	if st := v.e.InjectEvents(sessA, sub, 0, none); st != ua.StatusBadShutdown {
		t.Fatalf("after Close: %v", st)
	}
}
