package addrspace_test

import (
	"errors"
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
)

func TestAddNodes(t *testing.T) {
	as, _ := newSpace(t)
	plant := ua.NewStringNodeID(1, "Plant")
	pump := ua.NewStringNodeID(1, "Plant.Pump1")
	if err := as.AddFolder(plant, "Plant", "The plant", i(id.ObjectsFolder)); err != nil {
		t.Fatal(err)
	}
	if err := as.AddObject(pump, "Pump1", "", plant, nil); err != nil {
		t.Fatal(err)
	}
	speed, err := as.AddVariable(ua.NewStringNodeID(1, "Plant.Pump1.Speed"), "Speed", "", pump, i(id.Double), 12.5, rw)
	if err != nil {
		t.Fatal(err)
	}
	level, err := as.AddVariable(ua.NewStringNodeID(1, "Plant.Level"), "1:Level", "Tank level", plant, i(id.Float), []float32{1, 2}, byte(ua.AccessLevelTypeCurrentRead))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.AddProperty(ua.NewStringNodeID(1, "Plant.Pump1.Serial"), "Serial", pump, i(id.String), "SN-1"); err != nil {
		t.Fatal(err)
	}

	objects := hierarchical(t, as, i(id.ObjectsFolder))
	if r := objects["Plant"]; r == nil || !r.ReferenceTypeID.Equal(i(id.Organizes)) || !r.TypeDefinition.NodeID.Equal(i(id.FolderType)) || r.DisplayName.Text != "The plant" || r.BrowseName.NamespaceIndex != 1 {
		t.Fatalf("Objects -> Plant: %+v", r)
	}
	inPlant := hierarchical(t, as, plant)
	if r := inPlant["Pump1"]; r == nil || !r.ReferenceTypeID.Equal(i(id.Organizes)) || !r.TypeDefinition.NodeID.Equal(i(id.BaseObjectType)) {
		t.Errorf("Plant -> Pump1 (a folder organizes): %+v", r)
	}
	if r := inPlant["Level"]; r == nil || !r.ReferenceTypeID.Equal(i(id.Organizes)) || !r.TypeDefinition.NodeID.Equal(i(id.BaseDataVariableType)) || r.DisplayName.Text != "Tank level" {
		t.Errorf("Plant -> Level: %+v", r)
	}
	inPump := hierarchical(t, as, pump)
	if r := inPump["Speed"]; r == nil || !r.ReferenceTypeID.Equal(i(id.HasComponent)) || r.NodeClass != ua.NodeClassVariable {
		t.Errorf("Pump1 -> Speed (an object has components): %+v", r)
	}
	if r := inPump["Serial"]; r == nil || !r.ReferenceTypeID.Equal(i(id.HasProperty)) || !r.TypeDefinition.NodeID.Equal(i(id.PropertyType)) {
		t.Errorf("Pump1 -> Serial: %+v", r)
	}
	if got := mustRead(t, as, speed.NodeID(), ua.AttributeIDValue); got != 12.5 {
		t.Errorf("Speed = %v", got)
	}
	if got := mustRead(t, as, level.NodeID(), ua.AttributeIDValueRank); got != int32(1) {
		t.Errorf("Level ValueRank = %v, want 1 for an array initial value", got)
	}
	if got := mustRead(t, as, speed.NodeID(), ua.AttributeIDValueRank); got != int32(-1) {
		t.Errorf("Speed ValueRank = %v, want -1", got)
	}
	if got := mustRead(t, as, level.NodeID(), ua.AttributeIDAccessLevel); got != byte(1) {
		t.Errorf("Level AccessLevel = %v", got)
	}
	// The inverse side exists: browsing up from Speed reaches the pump.
	res := as.TranslateBrowsePath(&ua.BrowsePath{StartingNode: speed.NodeID(), RelativePath: &ua.RelativePath{Elements: []*ua.RelativePathElement{
		{ReferenceTypeID: i(id.HierarchicalReferences), IncludeSubtypes: true, IsInverse: true, TargetName: qn(1, "Pump1")}}}})
	if res.StatusCode != ua.StatusOK || !res.Targets[0].TargetID.NodeID.Equal(pump) {
		t.Errorf("Speed -> inverse -> Pump1: %v", res.StatusCode)
	}

	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"namespace 0", as.AddFolder(i(99999), "X", "", i(id.ObjectsFolder)), addrspace.ErrStandardNodeID},
		{"unregistered namespace", as.AddFolder(ua.NewStringNodeID(9, "X"), "X", "", i(id.ObjectsFolder)), addrspace.ErrBadNamespace},
		{"duplicate", as.AddFolder(plant, "Plant", "", i(id.ObjectsFolder)), addrspace.ErrNodeExists},
		{"unknown parent", as.AddFolder(ua.NewStringNodeID(1, "Y"), "Y", "", ua.NewStringNodeID(1, "nope")), addrspace.ErrUnknownNode},
		{"unknown type definition", as.AddObject(ua.NewStringNodeID(1, "Z"), "Z", "", plant, ua.NewStringNodeID(1, "nope")), addrspace.ErrUnknownNode},
		{"data type is not a DataType", func() error {
			_, err := as.AddVariable(ua.NewStringNodeID(1, "V"), "V", "", plant, i(id.Server), 1.0, rw)
			return err
		}(), addrspace.ErrUnknownNode},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if _, err := as.AddVariable(ua.NewStringNodeID(1, "Bad"), "Bad", "", plant, i(id.Double), struct{}{}, rw); err == nil {
		t.Error("a non-builtin initial value was accepted")
	}
	// A failed add leaves nothing behind.
	if dv := read(as, ua.NewStringNodeID(1, "Y"), ua.AttributeIDNodeClass); dv.Status != ua.StatusBadNodeIDUnknown {
		t.Errorf("failed AddFolder left a node: %v", dv.Status)
	}
}

func TestReferencesAndDelete(t *testing.T) {
	as, _ := newSpace(t)
	redundancy := i(id.Server_ServerRedundancy)
	typeDef := func() *ua.NodeID {
		refs := browse(t, as, &ua.BrowseDescription{NodeID: redundancy, BrowseDirection: ua.BrowseDirectionForward, ReferenceTypeID: i(id.HasTypeDefinition), ResultMask: uint32(ua.BrowseResultMaskAll)})
		if len(refs) != 1 {
			t.Fatalf("%d type definitions", len(refs))
		}
		return refs[0].NodeID.NodeID
	}
	if got := typeDef(); !got.Equal(i(id.ServerRedundancyType)) {
		t.Fatalf("nodeset type definition %s", got)
	}
	if err := as.DeleteReference(redundancy, i(id.HasTypeDefinition), i(id.ServerRedundancyType)); err != nil {
		t.Fatal(err)
	}
	if err := as.AddReference(redundancy, i(id.HasTypeDefinition), i(id.NonTransparentRedundancyType)); err != nil {
		t.Fatal(err)
	}
	if err := as.AddReference(redundancy, i(id.HasTypeDefinition), i(id.NonTransparentRedundancyType)); err != nil {
		t.Fatal(err) // idempotent
	}
	if got := typeDef(); !got.Equal(i(id.NonTransparentRedundancyType)) {
		t.Errorf("type definition after the swap: %s", got)
	}
	// The inverse sides moved as well.
	inv := browse(t, as, &ua.BrowseDescription{NodeID: i(id.ServerRedundancyType), BrowseDirection: ua.BrowseDirectionInverse, ReferenceTypeID: i(id.HasTypeDefinition)})
	for _, r := range inv {
		if r.NodeID.NodeID.Equal(redundancy) {
			t.Error("ServerRedundancyType still lists ServerRedundancy as an instance")
		}
	}
	// A property linked to a namespace 0 node.
	if err := as.AddReference(redundancy, i(id.HasProperty), i(id.Server_ServerRedundancy_ServerURIArray)); err != nil {
		t.Fatal(err)
	}
	props := hierarchical(t, as, redundancy)
	if r := props["ServerUriArray"]; r == nil || !r.ReferenceTypeID.Equal(i(id.HasProperty)) {
		t.Errorf("ServerRedundancy -> ServerUriArray: %+v", props)
	}
	if err := as.AddReference(redundancy, i(id.Server), i(id.Server)); !errors.Is(err, addrspace.ErrNotReference) {
		t.Errorf("reference of a non-reference type: %v", err)
	}
	if err := as.AddReference(redundancy, i(id.HasProperty), ua.NewStringNodeID(1, "x")); !errors.Is(err, addrspace.ErrUnknownNode) {
		t.Errorf("reference to an unknown node: %v", err)
	}

	// DeleteNode removes the node and both sides of its references.
	folder := ua.NewStringNodeID(1, "F")
	if err := as.AddFolder(folder, "F", "", i(id.ObjectsFolder)); err != nil {
		t.Fatal(err)
	}
	if err := as.DeleteNode(folder); err != nil {
		t.Fatal(err)
	}
	if hierarchical(t, as, i(id.ObjectsFolder))["F"] != nil {
		t.Error("Objects still references the deleted folder")
	}
	if err := as.DeleteNode(i(id.Server)); !errors.Is(err, addrspace.ErrStandardNodeID) {
		t.Errorf("deleting the Server object: %v", err)
	}
	if err := as.DeleteNode(folder); !errors.Is(err, addrspace.ErrUnknownNode) {
		t.Errorf("deleting twice: %v", err)
	}
}
