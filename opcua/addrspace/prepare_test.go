package addrspace_test

import (
	"errors"
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/events"
)

// TestPrepareThenRaisePrepared: PrepareEvent completes an event without
// reporting it; RaisePrepared reports that very event to the notifiers
// Notifiers names, so an owner can keep what subscribers saw.
func TestPrepareThenRaisePrepared(t *testing.T) {
	as, _ := newSpace(t)
	area := ua.NewStringNodeID(1, "Area")
	pump := ua.NewStringNodeID(1, "Area/Pump")
	if err := as.AddFolder(area, "Area", "", i(id.ObjectsFolder)); err != nil {
		t.Fatal(err)
	}
	if _, err := as.AddVariable(pump, "Pump", "", area, i(id.Double), 0.0, rw); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		as.SetEventNotifier(area, addrspace.SubscribeToEvents|addrspace.HistoryRead),
		as.AddReference(i(id.Server), i(id.HasNotifier), area),
		as.AddReference(area, i(id.HasEventSource), pump),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	server, _ := watchEvents(t, as, i(id.Server))
	areaRec, _ := watchEvents(t, as, area)

	p, err := as.PrepareEvent(pump, events.Event{EventType: i(id.AlarmConditionType), Severity: 700, ConditionID: pump})
	if err != nil {
		t.Fatal(err)
	}
	if len(server.events())+len(areaRec.events()) != 0 {
		t.Fatal("PrepareEvent reported the event")
	}
	wantTypes := []uint32{id.AlarmConditionType, id.AcknowledgeableConditionType, id.ConditionType, id.BaseEventType}
	if len(p.Types) != len(wantTypes) || p.SourceName != "Pump" || !events.SameNode(p.SourceNode, pump) || len(p.EventID) != 16 {
		t.Fatalf("prepared %+v", p)
	}
	for k, w := range wantTypes {
		if !events.SameNode(p.Types[k], i(w)) {
			t.Fatalf("types %v", p.Types)
		}
	}
	if err := as.RaisePrepared(pump, p); err != nil {
		t.Fatal(err)
	}
	if s, a := server.events(), areaRec.events(); len(s) != 1 || len(a) != 1 || s[0] != p || a[0] != p {
		t.Fatalf("Server got %d, Area %d, want the prepared event once each", len(s), len(a))
	}

	got, err := as.Notifiers(pump)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !events.SameNode(got[0], area) || !events.SameNode(got[1], i(id.Server)) {
		t.Fatalf("Notifiers(Pump) = %v, want [Area Server]", got)
	}
	if got, _ := as.Notifiers(i(id.Server)); len(got) != 1 || !events.SameNode(got[0], i(id.Server)) {
		t.Fatalf("Notifiers(Server) = %v", got)
	}
	if _, err := as.Notifiers(ua.NewStringNodeID(1, "nope")); !errors.Is(err, addrspace.ErrUnknownNode) {
		t.Fatalf("Notifiers of an unknown node: %v", err)
	}
	if err := as.RaisePrepared(ua.NewStringNodeID(1, "nope"), p); !errors.Is(err, addrspace.ErrUnknownNode) {
		t.Fatalf("RaisePrepared on an unknown node: %v", err)
	}
	if _, err := as.PrepareEvent(pump, events.Event{EventType: i(id.FolderType)}); !errors.Is(err, addrspace.ErrNotEventType) {
		t.Fatalf("PrepareEvent of a non-event type: %v", err)
	}
	if types, err := as.EventTypes(i(id.RefreshStartEventType)); err != nil || len(types) != 3 {
		t.Fatalf("EventTypes(RefreshStartEventType) = %v, %v; want it, SystemEventType, BaseEventType", types, err)
	}
	if _, err := as.EventTypes(i(id.Double)); !errors.Is(err, addrspace.ErrNotEventType) {
		t.Fatalf("EventTypes(Double): %v", err)
	}
}

func TestSetExecutable(t *testing.T) {
	as, _ := newSpace(t)
	ack := i(id.AcknowledgeableConditionType_Acknowledge)
	if got := mustRead(t, as, ack, ua.AttributeIDUserExecutable); got != false {
		t.Fatalf("a standard method starts UserExecutable %v, want false until implemented", got)
	}
	if err := as.SetExecutable(ack, true, true); err != nil {
		t.Fatal(err)
	}
	for _, attr := range []ua.AttributeID{ua.AttributeIDExecutable, ua.AttributeIDUserExecutable} {
		if got := mustRead(t, as, ack, attr); got != true {
			t.Fatalf("attribute %v = %v after SetExecutable", attr, got)
		}
	}
	if err := as.SetExecutable(i(id.Server), true, true); !errors.Is(err, addrspace.ErrNotMethod) {
		t.Fatalf("SetExecutable on an object: %v", err)
	}
	if err := as.SetExecutable(ua.NewStringNodeID(1, "nope"), true, true); !errors.Is(err, addrspace.ErrUnknownNode) {
		t.Fatalf("SetExecutable on an unknown node: %v", err)
	}
}
