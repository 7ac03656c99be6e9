package conditions_test

import (
	"sync"
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/conditions"
)

// TestConcurrentUpdatesAndRefreshes races Updates of two conditions, reads
// and ConditionRefresh calls, and checks the event stream of one item:
// per condition, live events come in Update order and a refreshed event
// is never older than one delivered before it.
func TestConcurrentUpdatesAndRefreshes(t *testing.T) {
	p := startPlant(t)
	if err := p.m.Define(lowSpec()); err != nil {
		t.Fatal(err)
	}
	c := p.connect(t)
	item := eventItem(nsid(id.Server), 1, alarmFields, nil)
	item.RequestedParameters.QueueSize = 5000 // no overflow: every event is checked
	s := subscribe(t, c, item)

	const n = 150
	order := map[string]int{} // EventId -> position in its condition's Updates
	var mu sync.Mutex
	var wg sync.WaitGroup
	last := map[string]string{}
	for _, name := range []string{"HighTemperature", "LowTemperature"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range n {
				eid, err := p.m.Update(name, conditions.State{Enabled: true, Active: k%2 == 0, Retain: true, Severity: uint16(100 + k), Quality: ua.StatusOK})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order[string(eid)] = k
				last[name] = string(eid)
				mu.Unlock()
				if _, _, ok := p.m.Snapshot(name); !ok {
					t.Error("Snapshot lost the condition")
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 10 {
			if st := callMethod(t, c, nsid(id.ConditionType), id.ConditionType_ConditionRefresh, s.sub.SubscriptionID).StatusCode; st != ua.StatusOK {
				t.Errorf("ConditionRefresh: %v", st)
			}
		}
	}()
	wg.Wait()
	// The last live events can be published before the events of a
	// refresh that ran after them: wait for both.
	seen := func(g map[uint32][]*ua.EventFieldList) bool {
		got, ends := map[string]bool{}, 0
		for _, e := range g[1] {
			if isType(e, id.RefreshEndEventType) {
				ends++
			}
			if b, ok := e.EventFields[0].Value().([]byte); ok {
				got[string(b)] = true
			}
		}
		return got[last["HighTemperature"]] && got[last["LowTemperature"]] && ends == 10
	}
	s.waitFor("the last event of both conditions and the end of every refresh", seen)

	newest := map[string]int{"HighTemperature": -1, "LowTemperature": -1}
	inRefresh, refreshes := false, 0
	for _, e := range s.got[1] {
		switch {
		case isType(e, id.RefreshStartEventType):
			inRefresh = true
			refreshes++
			continue
		case isType(e, id.RefreshEndEventType):
			inRefresh = false
			continue
		case !isType(e, id.AlarmConditionType):
			t.Fatalf("unexpected event type %v (queue overflow?)", eventType(e))
		}
		name := e.EventFields[7].Value().(string)
		k := order[string(e.EventFields[0].Value().([]byte))]
		switch {
		case inRefresh && k != newest[name] && newest[name] >= 0:
			t.Fatalf("a refresh delivered %s #%d after #%d", name, k, newest[name])
		case !inRefresh && k <= newest[name]:
			t.Fatalf("live event %s #%d after #%d", name, k, newest[name])
		}
		newest[name] = max(newest[name], k)
	}
	if refreshes != 10 {
		t.Fatalf("%d refreshes seen, want 10", refreshes)
	}
}
