package dataplane

import (
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

func mnode(folder bool, path ...string) drivers.MirrorNode {
	n := drivers.MirrorNode{Path: path, Key: drivers.MirrorKey(path), Folder: folder, DisplayName: path[len(path)-1]}
	if !folder {
		n.DataType, n.ValueRank = id.Double, -1
	}
	return n
}

// The mirrored subtree gets NodeIds from its browse path; applying a
// changed subtree keeps the nodes that stay (the same Variables, so
// their subscribers), adds and removes the rest with their descendants;
// EURange, EngineeringUnits and Description are served.
func TestSpaceMirror(t *testing.T) {
	as, s := newSpace(t)
	d := doc()
	d.Devices[0].Driver, d.Devices[0].Mirror = deployment.DriverOPCUA, &deployment.Mirror{BrowsePath: "/2:Line1"}
	s.Apply(d)
	speed := mnode(false, "Line1", "Speed")
	speed.Description, speed.Writable = "Belt speed", true
	speed.EURange = &ua.Range{Low: 0, High: 100}
	speed.EngineeringUnits = &ua.EUInformation{UnitID: 4403792, DisplayName: ua.NewLocalizedText("rpm")}
	first := []drivers.MirrorNode{mnode(true, "Line1"), speed, mnode(true, "Line1", "Motor"), mnode(false, "Line1", "Motor", "Temp"), mnode(false, "Line1", "A/B")}
	if rep := s.ApplyMirror("press1", first); rep.Added != 5 || len(rep.Failed) != 0 {
		t.Fatalf("first apply: %+v", rep)
	}
	for _, c := range []struct{ key, nodeID string }{
		{"Line1", "ns=2;s=press1/Line1"}, {"Line1/Speed", "ns=2;s=press1/Line1/Speed"},
		{"Line1/Motor/Temp", "ns=2;s=press1/Line1/Motor/Temp"}, {"Line1/A&/B", "ns=2;s=press1/Line1/A&/B"},
	} {
		if got := s.MirrorNodeID("press1", c.key).String(); got != c.nodeID {
			t.Errorf("%s: %s, want %s", c.key, got, c.nodeID)
		}
	}
	read := func(n string, attr ua.AttributeID) *ua.DataValue {
		return as.Read(&ua.ReadValueID{NodeID: ua.MustParseNodeID(n), AttributeID: attr}, ua.TimestampsToReturnNeither)
	}
	if dv := read("ns=2;s=press1/Line1/Speed", ua.AttributeIDDescription); dv.Value.Value().(*ua.LocalizedText).Text != "Belt speed" {
		t.Fatalf("Description %v", dv.Value.Value())
	}
	if dv := read("ns=2;s=press1/Line1/Speed/EURange", ua.AttributeIDValue); dv.Status != ua.StatusOK || dv.Value.Value().(*ua.ExtensionObject).Value.(*ua.Range).High != 100 {
		t.Fatalf("EURange %+v", dv)
	}
	if dv := read("ns=2;s=press1/Line1/Speed", ua.AttributeIDUserAccessLevel); dv.Value.Value().(uint8)&byte(ua.AccessLevelTypeCurrentWrite) == 0 {
		t.Fatalf("Speed not writable: %v", dv.Value.Value())
	}
	if err := s.SetMirrorReading("press1", "Line1/Speed", 12.5, ua.StatusOK, as.Clock().Now()); err != nil {
		t.Fatal(err)
	}
	v := s.MirrorVariable("press1", "Line1/Speed")

	// Motor goes (with Temp), Count comes; Speed stays as it was.
	second := []drivers.MirrorNode{mnode(true, "Line1"), speed, mnode(false, "Line1", "A/B"), mnode(false, "Line1", "Count")}
	rep := s.ApplyMirror("press1", second)
	if rep.Added != 1 || rep.Removed != 2 || rep.Kept != 3 || len(rep.Failed) != 0 {
		t.Fatalf("second apply: %+v", rep)
	}
	if s.MirrorVariable("press1", "Line1/Speed") != v || v.Value().Value.Value() != 12.5 {
		t.Fatal("the unchanged Speed was replaced")
	}
	if dv := read("ns=2;s=press1/Line1/Motor/Temp", ua.AttributeIDValue); dv.Status != ua.StatusBadNodeIDUnknown {
		t.Fatalf("the removed Temp reads %v", dv.Status)
	}
	if dv := read("ns=2;s=press1/Line1/Count", ua.AttributeIDValue); dv.Status != ua.StatusBadNoCommunication {
		t.Fatalf("the new Count reads %v", dv.Status)
	}

	// The mirror leaves the document: its nodes go.
	d.Devices[0].Mirror = nil
	s.Apply(d)
	if dv := read("ns=2;s=press1/Line1/Speed", ua.AttributeIDValue); dv.Status != ua.StatusBadNodeIDUnknown {
		t.Fatalf("Speed after the mirror was removed: %v", dv.Status)
	}
}
