package addrspace_test

import (
	"math"
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

func TestBrowseRootToServer(t *testing.T) {
	as, _ := newSpace(t)
	root := hierarchical(t, as, i(id.RootFolder))
	for _, name := range []string{"Objects", "Types", "Views"} {
		r, ok := root[name]
		if !ok {
			t.Fatalf("Root has no %s: %v", name, root)
		}
		if !r.ReferenceTypeID.Equal(i(id.Organizes)) || !r.IsForward || r.NodeClass != ua.NodeClassObject || !r.TypeDefinition.NodeID.Equal(i(id.FolderType)) {
			t.Errorf("Root -> %s: %+v", name, r)
		}
	}
	objects := hierarchical(t, as, i(id.ObjectsFolder))
	if r := objects["Server"]; r == nil || !r.NodeID.NodeID.Equal(i(id.Server)) || !r.TypeDefinition.NodeID.Equal(i(id.ServerType)) {
		t.Fatalf("Objects -> Server: %+v", r)
	}
	types := hierarchical(t, as, i(id.TypesFolder))
	for _, name := range []string{"ObjectTypes", "VariableTypes", "DataTypes", "ReferenceTypes"} {
		if types[name] == nil {
			t.Errorf("Types has no %s", name)
		}
	}
}

func TestBrowseServerObject(t *testing.T) {
	as, _ := newSpace(t)
	server := hierarchical(t, as, i(id.Server))
	for _, c := range []struct {
		name     string
		node     uint32
		refType  uint32
		class    ua.NodeClass
		typeDefn uint32
	}{
		{"ServerArray", id.Server_ServerArray, id.HasProperty, ua.NodeClassVariable, id.PropertyType},
		{"NamespaceArray", id.Server_NamespaceArray, id.HasProperty, ua.NodeClassVariable, id.PropertyType},
		{"ServiceLevel", id.Server_ServiceLevel, id.HasProperty, ua.NodeClassVariable, id.PropertyType},
		{"Auditing", id.Server_Auditing, id.HasProperty, ua.NodeClassVariable, id.PropertyType},
		{"ServerStatus", id.Server_ServerStatus, id.HasComponent, ua.NodeClassVariable, id.ServerStatusType},
		{"ServerCapabilities", id.Server_ServerCapabilities, id.HasComponent, ua.NodeClassObject, id.ServerCapabilitiesType},
		{"ServerRedundancy", id.Server_ServerRedundancy, id.HasComponent, ua.NodeClassObject, id.ServerRedundancyType},
		{"GetMonitoredItems", id.Server_GetMonitoredItems, id.HasComponent, ua.NodeClassMethod, 0},
	} {
		r := server[c.name]
		if r == nil {
			t.Errorf("Server has no %s", c.name)
			continue
		}
		if !r.NodeID.NodeID.Equal(i(c.node)) || !r.ReferenceTypeID.Equal(i(c.refType)) || r.NodeClass != c.class ||
			!r.TypeDefinition.NodeID.Equal(i(c.typeDefn)) || r.DisplayName.Text != c.name || !r.IsForward {
			t.Errorf("Server -> %s = %+v (type def %s), want i=%d by i=%d, %v, type def i=%d", c.name, r, r.TypeDefinition.NodeID, c.node, c.refType, c.class, c.typeDefn)
		}
	}

	// Inverse: the Server is organized by Objects; its type definition is
	// not a hierarchical reference.
	inv := browse(t, as, &ua.BrowseDescription{NodeID: i(id.Server), BrowseDirection: ua.BrowseDirectionInverse,
		ReferenceTypeID: i(id.HierarchicalReferences), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)})
	if len(inv) != 1 || !inv[0].NodeID.NodeID.Equal(i(id.ObjectsFolder)) || inv[0].IsForward || !inv[0].ReferenceTypeID.Equal(i(id.Organizes)) {
		t.Errorf("inverse hierarchical of Server = %+v", inv)
	}

	// Null reference type, both directions: everything, including the
	// HasTypeDefinition and the inverse Organizes.
	all := browse(t, as, &ua.BrowseDescription{NodeID: i(id.Server), BrowseDirection: ua.BrowseDirectionBoth, ResultMask: uint32(ua.BrowseResultMaskAll)})
	var sawTypeDef, sawInverse bool
	for _, r := range all {
		sawTypeDef = sawTypeDef || (r.ReferenceTypeID.Equal(i(id.HasTypeDefinition)) && r.NodeID.NodeID.Equal(i(id.ServerType)))
		sawInverse = sawInverse || (!r.IsForward && r.NodeID.NodeID.Equal(i(id.ObjectsFolder)))
	}
	if !sawTypeDef || !sawInverse || len(all) != len(server)+2 {
		t.Errorf("both directions, all types: %d references (typedef %v, inverse %v), want %d", len(all), sawTypeDef, sawInverse, len(server)+2)
	}
}

func TestBrowseFilters(t *testing.T) {
	as, _ := newSpace(t)
	count := func(d *ua.BrowseDescription) int { return len(browse(t, as, d)) }
	base := func() *ua.BrowseDescription {
		return &ua.BrowseDescription{NodeID: i(id.Server), BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeID: i(id.HierarchicalReferences), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}
	}
	all := count(base())

	exact := base()
	exact.IncludeSubtypes = false
	if n := count(exact); n != 0 {
		t.Errorf("HierarchicalReferences without subtypes: %d references, want 0 (the Server uses only subtypes)", n)
	}
	props := base()
	props.ReferenceTypeID = i(id.HasProperty)
	comps := base()
	comps.ReferenceTypeID = i(id.HasComponent)
	np, nc := count(props), count(comps)
	if np == 0 || nc == 0 || np+nc != all {
		t.Errorf("HasProperty %d + HasComponent %d != hierarchical %d", np, nc, all)
	}
	objs := base()
	objs.NodeClassMask = uint32(ua.NodeClassObject)
	for _, r := range browse(t, as, objs) {
		if r.NodeClass != ua.NodeClassObject {
			t.Errorf("NodeClassMask Object returned %v %s", r.NodeClass, r.BrowseName.Name)
		}
	}
	methodsAndVars := base()
	methodsAndVars.NodeClassMask = uint32(ua.NodeClassMethod | ua.NodeClassVariable)
	if n := count(methodsAndVars) + count(objs); n != all {
		t.Errorf("Object + (Method|Variable) masks = %d, want %d", n, all)
	}

	// ResultMask: only the requested fields are filled.
	onlyName := base()
	onlyName.ResultMask = uint32(ua.BrowseResultMaskBrowseName)
	for _, r := range browse(t, as, onlyName) {
		if r.BrowseName.Name == "" || r.NodeID == nil {
			t.Fatalf("BrowseName or NodeID missing: %+v", r)
		}
		if r.DisplayName.Text != "" || !r.ReferenceTypeID.Equal(i(0)) || r.IsForward || r.NodeClass != 0 || !r.TypeDefinition.NodeID.Equal(i(0)) {
			t.Fatalf("fields not asked for are filled: %+v", r)
		}
	}
	// TypeDefinition only for Object and Variable targets.
	for _, r := range browse(t, as, base()) {
		hasTD := !r.TypeDefinition.NodeID.Equal(i(0))
		if want := r.NodeClass == ua.NodeClassObject || r.NodeClass == ua.NodeClassVariable; hasTD != want {
			t.Errorf("%s (%v): TypeDefinition %s", r.BrowseName.Name, r.NodeClass, r.TypeDefinition.NodeID)
		}
	}
}

func TestReferenceSubtypesFromHasSubtype(t *testing.T) {
	as, _ := newSpace(t)
	// isSubtype browses the forward references of ReferenceType sub that
	// match base with subtypes: a node's own HasSubtype references are
	// HierarchicalReferences-derived, so browse a node that holds a
	// reference of type sub instead.
	for _, c := range []struct {
		holder  uint32 // a node with a forward reference of type sub
		sub     uint32
		base    uint32
		subtype bool
	}{
		{id.Server, id.HasProperty, id.HierarchicalReferences, true},
		{id.Server, id.HasComponent, id.HierarchicalReferences, true},
		{id.RootFolder, id.Organizes, id.HierarchicalReferences, true},
		{id.Server, id.HasComponent, id.Aggregates, true},
		{id.Server, id.HasProperty, id.References, true},
		{id.Server, id.HasTypeDefinition, id.NonHierarchicalReferences, true},
		{id.Server, id.HasTypeDefinition, id.HierarchicalReferences, false},
		{id.RootFolder, id.Organizes, id.HasChild, false},
		{id.BaseObjectType, id.HasSubtype, id.HasChild, true},
	} {
		refs := browse(t, as, &ua.BrowseDescription{NodeID: i(c.holder), BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeID: i(c.base), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskReferenceTypeID)})
		found := false
		for _, r := range refs {
			found = found || r.ReferenceTypeID.Equal(i(c.sub))
		}
		if found != c.subtype {
			t.Errorf("i=%d is a subtype of i=%d: got %v, want %v", c.sub, c.base, found, c.subtype)
		}
	}
}

func TestBrowseErrors(t *testing.T) {
	as, _ := newSpace(t)
	for _, c := range []struct {
		name string
		d    *ua.BrowseDescription
		st   ua.StatusCode
	}{
		{"unknown node", &ua.BrowseDescription{NodeID: ua.NewStringNodeID(1, "x")}, ua.StatusBadNodeIDUnknown},
		{"nil node", &ua.BrowseDescription{}, ua.StatusBadNodeIDUnknown},
		{"bad direction", &ua.BrowseDescription{NodeID: i(id.Server), BrowseDirection: 3}, ua.StatusBadBrowseDirectionInvalid},
		{"reference type is an object", &ua.BrowseDescription{NodeID: i(id.Server), ReferenceTypeID: i(id.Server)}, ua.StatusBadReferenceTypeIDInvalid},
		{"unknown reference type", &ua.BrowseDescription{NodeID: i(id.Server), ReferenceTypeID: ua.NewStringNodeID(1, "r")}, ua.StatusBadReferenceTypeIDInvalid},
	} {
		if _, st := as.Browse(c.d); st != c.st {
			t.Errorf("%s: %v, want %v", c.name, st, c.st)
		}
	}
}

func qn(ns uint16, name string) *ua.QualifiedName {
	return &ua.QualifiedName{NamespaceIndex: ns, Name: name}
}

func elem(refType uint32, name *ua.QualifiedName) *ua.RelativePathElement {
	return &ua.RelativePathElement{ReferenceTypeID: i(refType), IncludeSubtypes: true, TargetName: name}
}

func TestTranslateBrowsePath(t *testing.T) {
	as, _ := newSpace(t)
	path := func(start uint32, e ...*ua.RelativePathElement) *ua.BrowsePath {
		return &ua.BrowsePath{StartingNode: i(start), RelativePath: &ua.RelativePath{Elements: e}}
	}
	h := uint32(id.HierarchicalReferences)
	for _, c := range []struct {
		name    string
		p       *ua.BrowsePath
		st      ua.StatusCode
		targets []uint32
	}{
		{"Objects/Server/ServerStatus/State", path(id.ObjectsFolder, elem(h, qn(0, "Server")), elem(h, qn(0, "ServerStatus")), elem(h, qn(0, "State"))),
			ua.StatusOK, []uint32{id.Server_ServerStatus_State}},
		{"Root/Objects/Server/ServiceLevel by exact types", path(id.RootFolder,
			&ua.RelativePathElement{ReferenceTypeID: i(id.Organizes), TargetName: qn(0, "Objects")},
			&ua.RelativePathElement{ReferenceTypeID: i(id.Organizes), TargetName: qn(0, "Server")},
			&ua.RelativePathElement{ReferenceTypeID: i(id.HasProperty), TargetName: qn(0, "ServiceLevel")}),
			ua.StatusOK, []uint32{id.Server_ServiceLevel}},
		{"null reference type follows any", path(id.Server, &ua.RelativePathElement{TargetName: qn(0, "ServerRedundancy")}),
			ua.StatusOK, []uint32{id.Server_ServerRedundancy}},
		{"inverse from ServiceLevel to Server", path(id.Server_ServiceLevel, &ua.RelativePathElement{ReferenceTypeID: i(id.HasProperty), IsInverse: true, TargetName: qn(0, "Server")}),
			ua.StatusOK, []uint32{id.Server}},
		{"empty last name matches every target", path(id.Server_ServerRedundancy, &ua.RelativePathElement{ReferenceTypeID: i(id.HasProperty)}),
			ua.StatusOK, []uint32{id.Server_ServerRedundancy_RedundancySupport}},
		{"subtypes not included", path(id.Server, &ua.RelativePathElement{ReferenceTypeID: i(h), TargetName: qn(0, "ServiceLevel")}),
			ua.StatusBadNoMatch, nil},
		{"wrong namespace in the name", path(id.Server, elem(h, qn(1, "ServiceLevel"))), ua.StatusBadNoMatch, nil},
		{"no such child", path(id.Server, elem(h, qn(0, "Nope"))), ua.StatusBadNoMatch, nil},
		{"empty middle name", path(id.ObjectsFolder, elem(h, qn(0, "")), elem(h, qn(0, "State"))), ua.StatusBadBrowseNameInvalid, nil},
		{"nil middle name", path(id.ObjectsFolder, elem(h, nil), elem(h, qn(0, "State"))), ua.StatusBadBrowseNameInvalid, nil},
		{"empty path", path(id.ObjectsFolder), ua.StatusBadNothingToDo, nil},
		{"nil relative path", &ua.BrowsePath{StartingNode: i(id.ObjectsFolder)}, ua.StatusBadNothingToDo, nil},
		{"unknown start", &ua.BrowsePath{StartingNode: ua.NewStringNodeID(1, "x"), RelativePath: &ua.RelativePath{Elements: []*ua.RelativePathElement{elem(h, qn(0, "A"))}}}, ua.StatusBadNodeIDUnknown, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := as.TranslateBrowsePath(c.p)
			if res.StatusCode != c.st {
				t.Fatalf("status %v, want %v", res.StatusCode, c.st)
			}
			if res.Targets == nil {
				t.Fatal("nil Targets (must encode as an empty array)")
			}
			if len(res.Targets) != len(c.targets) {
				t.Fatalf("targets %d, want %v", len(res.Targets), c.targets)
			}
			for k, tg := range res.Targets {
				if !tg.TargetID.NodeID.Equal(i(c.targets[k])) || tg.RemainingPathIndex != math.MaxUint32 {
					t.Errorf("target %d = %s (remaining %d), want i=%d", k, tg.TargetID.NodeID, tg.RemainingPathIndex, c.targets[k])
				}
			}
		})
	}
}
