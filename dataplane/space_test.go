package dataplane

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/opcua/addrspace"
)

func ptr[T any](v T) *T { return &v }

func doc(tags ...deployment.Tag) *deployment.Document {
	return &deployment.Document{ClusterId: "site-a", Devices: []deployment.Device{{Name: "press1", Driver: deployment.DriverSimulated, Tags: tags}}}
}

func newSpace(t *testing.T) (*addrspace.AddressSpace, *Space) {
	t.Helper()
	as := addrspace.New(addrspace.Options{Clock: clockwork.NewFakeClockAt(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))})
	as.AddNamespace("urn:node-a:otopcua") // ns=1, the server's own
	return as, NewSpace(as, "site-a")
}

func TestSpaceBuildsFoldersAndTypedVariables(t *testing.T) {
	as, s := newSpace(t)
	if s.Namespace() != 2 || as.Namespaces()[2] != "urn:otopcua:cluster:site-a" {
		t.Fatalf("namespace %d %v", s.Namespace(), as.Namespaces())
	}
	rep := s.Apply(doc(
		deployment.Tag{Name: "Setpoint", Table: deployment.TableHolding, Address: ptr(0), Type: deployment.TypeInt16, Writable: true},
		deployment.Tag{Name: "Temperature", Table: deployment.TableInput, Address: ptr(0), Type: deployment.TypeInt16, Scale: ptr(0.1)},
		deployment.Tag{Name: "Run", Table: deployment.TableCoil, Address: ptr(1), Type: deployment.TypeBool},
		deployment.Tag{Name: "Speed", Table: deployment.TableHolding, Address: ptr(10), Type: deployment.TypeFloat32},
	))
	if rep.Added != 4 || len(rep.Failed) != 0 {
		t.Fatalf("report %+v", rep)
	}
	read := func(n *ua.NodeID, attr ua.AttributeID) *ua.DataValue {
		return as.Read(&ua.ReadValueID{NodeID: n, AttributeID: attr}, ua.TimestampsToReturnBoth)
	}
	for _, tc := range []struct {
		tag    string
		dt     uint32
		access byte
	}{
		{"Setpoint", id.Int16, 3}, {"Temperature", id.Double, 1}, {"Run", id.Boolean, 1}, {"Speed", id.Float, 1},
	} {
		n := s.TagNodeID("press1", tc.tag)
		if got := n.String(); got != "ns=2;s=press1/"+tc.tag {
			t.Errorf("NodeId %s", got)
		}
		if dv := read(n, ua.AttributeIDDataType); dv.Value.Value().(*ua.NodeID).IntID() != tc.dt {
			t.Errorf("%s DataType %v, want i=%d", tc.tag, dv.Value.Value(), tc.dt)
		}
		if dv := read(n, ua.AttributeIDAccessLevel); dv.Value.Value() != tc.access {
			t.Errorf("%s AccessLevel %v, want %d", tc.tag, dv.Value.Value(), tc.access)
		}
		if dv := read(n, ua.AttributeIDValue); dv.Status != ua.StatusBadNoCommunication {
			t.Errorf("%s before any reading: %v, want BadNoCommunication", tc.tag, dv.Status)
		}
	}
	refs, st := as.Browse(&ua.BrowseDescription{NodeID: s.DeviceNodeID("press1"), BrowseDirection: ua.BrowseDirectionForward,
		ReferenceTypeID: ua.NewNumericNodeID(0, id.HierarchicalReferences), IncludeSubtypes: true, ResultMask: 63})
	if st != ua.StatusOK || len(refs) != 4 {
		t.Fatalf("browse press1: %v, %d references", st, len(refs))
	}
}

func TestApplyKeepsUnchangedTagsAndTheirWatchers(t *testing.T) {
	as, s := newSpace(t)
	s.Apply(doc(
		deployment.Tag{Name: "A", Type: deployment.TypeFloat64, Signal: deployment.SignalRamp},
		deployment.Tag{Name: "B", Type: deployment.TypeInt16, Signal: deployment.SignalConstant},
		deployment.Tag{Name: "C", Type: deployment.TypeBool, Signal: deployment.SignalSquare},
	))
	a := s.Variable("press1", "A")
	var seen []float64
	cancel, st := as.Watch(a.NodeID(), func(dv *ua.DataValue) {
		if f, ok := dv.Value.Value().(float64); ok {
			seen = append(seen, f)
		}
	})
	if st != ua.StatusOK {
		t.Fatal(st)
	}
	defer cancel()
	if err := s.SetReading("press1", "A", 1.5, ua.StatusOK, time.Time{}); err != nil {
		t.Fatal(err)
	}
	// A stays (its signal changes, not its node), B changes type, C goes,
	// D is new.
	rep := s.Apply(doc(
		deployment.Tag{Name: "A", Type: deployment.TypeFloat64, Signal: deployment.SignalSine},
		deployment.Tag{Name: "B", Type: deployment.TypeInt32, Signal: deployment.SignalConstant},
		deployment.Tag{Name: "D", Type: deployment.TypeUint16, Signal: deployment.SignalConstant},
	))
	if rep.Kept != 1 || rep.Replaced != 1 || rep.Removed != 1 || rep.Added != 1 || len(rep.Failed) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if s.Variable("press1", "A") != a {
		t.Fatal("an unchanged tag got a new Variable")
	}
	if err := s.SetReading("press1", "A", 2.5, ua.StatusOK, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[1] != 2.5 {
		t.Fatalf("the watcher of the kept tag saw %v", seen)
	}
	if dv := as.Read(&ua.ReadValueID{NodeID: s.TagNodeID("press1", "C"), AttributeID: ua.AttributeIDValue}, ua.TimestampsToReturnBoth); dv.Status != ua.StatusBadNodeIDUnknown {
		t.Fatalf("removed tag reads %v", dv.Status)
	}
	if dv := as.Read(&ua.ReadValueID{NodeID: s.TagNodeID("press1", "B"), AttributeID: ua.AttributeIDDataType}, ua.TimestampsToReturnBoth); dv.Value.Value().(*ua.NodeID).IntID() != id.Int32 {
		t.Fatalf("replaced tag DataType %v", dv.Value.Value())
	}
	// A device that goes takes its folder with it.
	s.Apply(&deployment.Document{ClusterId: "site-a"})
	if dv := as.Read(&ua.ReadValueID{NodeID: s.DeviceNodeID("press1"), AttributeID: ua.AttributeIDBrowseName}, ua.TimestampsToReturnBoth); dv.Status != ua.StatusBadNodeIDUnknown {
		t.Fatalf("removed device reads %v", dv.Status)
	}
}

func TestBadReadingKeepsTheLastValue(t *testing.T) {
	as, s := newSpace(t)
	s.Apply(doc(deployment.Tag{Name: "T", Type: deployment.TypeInt16, Signal: deployment.SignalConstant}))
	if err := s.SetReading("press1", "T", int16(42), ua.StatusOK, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReading("press1", "T", nil, ua.StatusBadCommunicationError, time.Time{}); err != nil {
		t.Fatal(err)
	}
	dv := as.Read(&ua.ReadValueID{NodeID: s.TagNodeID("press1", "T"), AttributeID: ua.AttributeIDValue}, ua.TimestampsToReturnBoth)
	if dv.Status != ua.StatusBadCommunicationError || dv.Value.Value() != int16(42) {
		t.Fatalf("after a failed read: %v %v, want BadCommunicationError with 42", dv.Status, dv.Value.Value())
	}
	if err := s.SetReading("press1", "nope", 1, ua.StatusOK, time.Time{}); err == nil {
		t.Fatal("unknown tag accepted")
	}
}

// TestHistoryAttributes: a historized tag's Variable says so (Historizing,
// the HistoryRead bit of AccessLevel), and stops saying so when a new
// deployment turns it off.
func TestHistoryAttributes(t *testing.T) {
	as, s := newSpace(t)
	tag := deployment.Tag{Name: "Setpoint", Table: deployment.TableHolding, Address: ptr(0), Type: deployment.TypeInt16, Writable: true,
		History: deployment.History{Historize: ptr(true)}}
	read := func(attr ua.AttributeID) any {
		t.Helper()
		dv := as.Read(&ua.ReadValueID{NodeID: s.TagNodeID("press1", "Setpoint"), AttributeID: attr}, ua.TimestampsToReturnNeither)
		if dv.Status != ua.StatusOK {
			t.Fatalf("attribute %d: %v", attr, dv.Status)
		}
		return dv.Value.Value()
	}
	if rep := s.Apply(doc(tag)); len(rep.Failed) > 0 {
		t.Fatal(rep.Failed)
	}
	want := byte(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite | ua.AccessLevelTypeHistoryRead)
	if read(ua.AttributeIDHistorizing) != true || read(ua.AttributeIDAccessLevel) != want || read(ua.AttributeIDUserAccessLevel) != want {
		t.Fatalf("historized: Historizing %v, AccessLevel %v", read(ua.AttributeIDHistorizing), read(ua.AttributeIDAccessLevel))
	}
	tag.History.Historize = ptr(false)
	if rep := s.Apply(doc(tag)); len(rep.Failed) > 0 || rep.Kept != 1 {
		t.Fatalf("%+v", rep)
	}
	if read(ua.AttributeIDHistorizing) != false || read(ua.AttributeIDAccessLevel) != want&^byte(ua.AccessLevelTypeHistoryRead) {
		t.Fatalf("no longer historized: Historizing %v, AccessLevel %v", read(ua.AttributeIDHistorizing), read(ua.AttributeIDAccessLevel))
	}
}
