package addrspace_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/events"
)

// recorder collects the events one watcher received.
type recorder struct {
	mu  sync.Mutex
	got []*events.Event
}

func (r *recorder) fn(ev *events.Event) {
	r.mu.Lock()
	r.got = append(r.got, ev)
	r.mu.Unlock()
}

func (r *recorder) events() []*events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*events.Event(nil), r.got...)
}

func watchEvents(t *testing.T, as *addrspace.AddressSpace, n *ua.NodeID) (*recorder, func()) {
	t.Helper()
	r := &recorder{}
	cancel, st := as.WatchEvents(n, r.fn)
	if st != ua.StatusOK {
		t.Fatalf("WatchEvents %s: %v", n, st)
	}
	return r, cancel
}

func TestServerIsAnEventNotifier(t *testing.T) {
	as, _ := newSpace(t)
	if got := mustRead(t, as, i(id.Server), ua.AttributeIDEventNotifier); got != addrspace.SubscribeToEvents {
		t.Fatalf("Server EventNotifier = %v, want SubscribeToEvents", got)
	}
	r, cancel := watchEvents(t, as, i(id.Server))
	ev, err := events.AuditWriteUpdate{Node: i(id.Server_ServiceLevel), ClientUserID: "op", NewValue: byte(3), Message: "denied"}.Event()
	if err != nil {
		t.Fatal(err)
	}
	if err := as.RaiseEvent(i(id.Server), ev); err != nil {
		t.Fatal(err)
	}
	got := r.events()
	if len(got) != 1 {
		t.Fatalf("%d events, want 1", len(got))
	}
	p := got[0]
	wantTypes := []uint32{id.AuditWriteUpdateEventType, id.AuditUpdateEventType, id.AuditEventType, id.BaseEventType}
	if len(p.Types) != len(wantTypes) {
		t.Fatalf("types %v", p.Types)
	}
	for k, w := range wantTypes {
		if !events.SameNode(p.Types[k], i(w)) {
			t.Fatalf("types %v, want %v", p.Types, wantTypes)
		}
	}
	if len(p.EventID) == 0 || !p.ReceiveTime.Equal(t0) || !p.Time.Equal(t0) || p.SourceName != "Attribute/Write" {
		t.Fatalf("prepared event %+v", p)
	}
	if v := p.Field(events.KeyNewValue); v == nil || v.Value() != byte(3) {
		t.Fatalf("NewValue %v", v)
	}
	cancel()
	cancel()
	if err := as.RaiseEvent(i(id.Server), ev); err != nil {
		t.Fatal(err)
	}
	if n := len(r.events()); n != 1 {
		t.Fatalf("a cancelled watcher got %d events", n)
	}
}

// TestEventsPropagateUpTheNotifierChain builds Server --HasNotifier-->
// Area --HasEventSource--> Pump (a variable) plus a loop back from Area to
// Server, and raises on each.
func TestEventsPropagateUpTheNotifierChain(t *testing.T) {
	as, _ := newSpace(t)
	area := ua.NewStringNodeID(1, "Area")
	pump := ua.NewStringNodeID(1, "Area/Pump")
	other := ua.NewStringNodeID(1, "Other")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(as.AddFolder(area, "Area", "", i(id.ObjectsFolder)))
	must(as.AddFolder(other, "Other", "", i(id.ObjectsFolder)))
	if _, err := as.AddVariable(pump, "Pump", "", area, i(id.Double), 0.0, rw); err != nil {
		t.Fatal(err)
	}
	if _, st := as.WatchEvents(area, func(*events.Event) {}); st != ua.StatusBadNotSupported {
		t.Fatalf("WatchEvents on a folder that is no notifier: %v", st)
	}
	must(as.SetEventNotifier(area, addrspace.SubscribeToEvents))
	must(as.AddReference(i(id.Server), i(id.HasNotifier), area))
	must(as.AddReference(area, i(id.HasEventSource), pump))
	must(as.AddReference(area, i(id.HasNotifier), i(id.Server))) // a loop
	if got := mustRead(t, as, area, ua.AttributeIDEventNotifier); got != addrspace.SubscribeToEvents {
		t.Fatalf("Area EventNotifier = %v", got)
	}
	server, _ := watchEvents(t, as, i(id.Server))
	areaRec, _ := watchEvents(t, as, area)

	base := events.Event{EventType: i(id.BaseEventType), Severity: 10}
	must(as.RaiseEvent(pump, base))
	must(as.RaiseEvent(area, base))
	must(as.RaiseEvent(other, base))
	if n := len(server.events()); n != 3 {
		t.Fatalf("Server got %d events, want every one once (3)", n)
	}
	got := areaRec.events()
	if len(got) != 2 {
		t.Fatalf("Area got %d events, want those of Pump and Area (2)", len(got))
	}
	if !events.SameNode(got[0].SourceNode, pump) || got[0].SourceName != "Pump" || !events.SameNode(got[1].SourceNode, area) {
		t.Fatalf("sources %v %q, %v", got[0].SourceNode, got[0].SourceName, got[1].SourceNode)
	}
	if string(got[0].EventID) == string(got[1].EventID) {
		t.Fatal("two events share an EventId")
	}

	must(as.SetEventNotifier(area, 0))
	must(as.RaiseEvent(pump, base))
	if n := len(areaRec.events()); n != 2 {
		t.Fatalf("Area got events after SubscribeToEvents was cleared")
	}
	if n := len(server.events()); n != 4 {
		t.Fatalf("Server got %d events, want 4", n)
	}
}

func TestRaiseAndWatchRefusals(t *testing.T) {
	as, _ := newSpace(t)
	ev := events.Event{EventType: i(id.BaseEventType)}
	if err := as.RaiseEvent(ua.NewStringNodeID(1, "nope"), ev); !errors.Is(err, addrspace.ErrUnknownNode) {
		t.Fatalf("unknown node: %v", err)
	}
	for _, typ := range []*ua.NodeID{nil, i(id.FolderType), i(id.Double), i(id.Server)} {
		if err := as.RaiseEvent(i(id.Server), events.Event{EventType: typ}); !errors.Is(err, addrspace.ErrNotEventType) {
			t.Fatalf("event type %v: %v", typ, err)
		}
	}
	if err := as.SetEventNotifier(i(id.Server_ServiceLevel), 1); !errors.Is(err, addrspace.ErrNotNotifier) {
		t.Fatalf("SetEventNotifier on a variable: %v", err)
	}
	for _, tc := range []struct {
		n    *ua.NodeID
		want ua.StatusCode
	}{
		{ua.NewStringNodeID(1, "nope"), ua.StatusBadNodeIDUnknown},
		{i(id.Server_ServiceLevel), ua.StatusBadAttributeIDInvalid},
		{i(id.ObjectsFolder), ua.StatusBadNotSupported},
	} {
		if _, st := as.WatchEvents(tc.n, func(*events.Event) {}); st != tc.want {
			t.Errorf("WatchEvents %s: %v, want %v", tc.n, st, tc.want)
		}
	}
}

func TestCheckEventTypeAndField(t *testing.T) {
	as, _ := newSpace(t)
	qn := func(names ...string) []*ua.QualifiedName {
		out := make([]*ua.QualifiedName, len(names))
		for k, n := range names {
			out[k] = &ua.QualifiedName{Name: n}
		}
		return out
	}
	for _, tc := range []struct {
		typ  uint32
		path []*ua.QualifiedName
		want ua.StatusCode
	}{
		{id.BaseEventType, qn("Message"), ua.StatusOK},
		{id.AuditWriteUpdateEventType, qn("EventId"), ua.StatusOK},      // inherited
		{id.AuditWriteUpdateEventType, qn("ClientUserId"), ua.StatusOK}, // inherited from AuditEventType
		{id.BaseEventType, qn("NewValue"), ua.StatusOK},                 // declared by a subtype
		{id.AuditEventType, qn("OldValue"), ua.StatusOK},                // declared by a subtype
		{id.ConditionType, qn("EnabledState", "Id"), ua.StatusOK},       // a nested field
		{id.BaseEventType, qn("EnabledState", "Id"), ua.StatusOK},       // ... of a subtype
		{id.AuditWriteUpdateEventType, qn("Nope"), ua.StatusBadBrowseNameInvalid},
		{id.SystemEventType, qn("NewValue"), ua.StatusBadBrowseNameInvalid}, // another branch
		{id.BaseEventType, qn("Message", "Nope"), ua.StatusBadBrowseNameInvalid},
		{id.BaseEventType, qn(""), ua.StatusBadBrowseNameInvalid},
		{id.FolderType, qn("Message"), ua.StatusBadTypeDefinitionInvalid},
		{id.Server, qn("Message"), ua.StatusBadTypeDefinitionInvalid},
		{99999, qn("Message"), ua.StatusBadNodeIDUnknown},
	} {
		if got := as.CheckEventField(i(tc.typ), tc.path); got != tc.want {
			t.Errorf("CheckEventField(i=%d, %v) = %v, want %v", tc.typ, tc.path, got, tc.want)
		}
	}
	if st := as.CheckEventType(i(id.EventQueueOverflowEventType)); st != ua.StatusOK {
		t.Errorf("EventQueueOverflowEventType: %v", st)
	}
}

// TestConcurrentRaiseAndWatch raises events while watchers come and go;
// run with -race. Every watcher present for the whole of a raise gets it.
func TestConcurrentRaiseAndWatch(t *testing.T) {
	as, _ := newSpace(t)
	stable, _ := watchEvents(t, as, i(id.Server))
	const raisers, perRaiser = 4, 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			cancel, _ := as.WatchEvents(i(id.Server), func(*events.Event) {})
			cancel()
		}
	}()
	for range raisers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perRaiser {
				if err := as.RaiseEvent(i(id.Server), events.Event{EventType: i(id.BaseEventType)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	got := stable.events()
	if len(got) != raisers*perRaiser {
		t.Fatalf("stable watcher got %d events, want %d", len(got), raisers*perRaiser)
	}
	ids := map[string]bool{}
	for _, ev := range got {
		ids[string(ev.EventID)] = true
	}
	if len(ids) != len(got) {
		t.Fatalf("%d distinct EventIds among %d events", len(ids), len(got))
	}
}
