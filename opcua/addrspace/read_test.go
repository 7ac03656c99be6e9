package addrspace_test

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
)

func TestNewLoadsNamespaceZero(t *testing.T) {
	addrspace.New(addrspace.Options{}) // first use decodes the table
	start := time.Now()
	as := addrspace.New(addrspace.Options{})
	t.Logf("New: %v for %d nodes", time.Since(start), as.Len())
	if as.Len() < 4000 {
		t.Fatalf("namespace 0 has %d nodes, want the whole standard nodeset (> 4000)", as.Len())
	}
	if got := as.Namespaces(); len(got) != 1 || got[0] != addrspace.StandardNamespaceURI {
		t.Fatalf("namespaces = %v", got)
	}
	for _, c := range []struct {
		n     uint32
		name  string
		class ua.NodeClass
	}{
		{id.RootFolder, "Root", ua.NodeClassObject},
		{id.ObjectsFolder, "Objects", ua.NodeClassObject},
		{id.Server, "Server", ua.NodeClassObject},
		{id.Server_ServiceLevel, "ServiceLevel", ua.NodeClassVariable},
		{id.ServerType, "ServerType", ua.NodeClassObjectType},
		{id.HasComponent, "HasComponent", ua.NodeClassReferenceType},
		{id.ServerState, "ServerState", ua.NodeClassDataType},
		{id.BaseDataVariableType, "BaseDataVariableType", ua.NodeClassVariableType},
		{id.Server_GetMonitoredItems, "GetMonitoredItems", ua.NodeClassMethod},
	} {
		if got := mustRead(t, as, i(c.n), ua.AttributeIDBrowseName).(*ua.QualifiedName); got.Name != c.name || got.NamespaceIndex != 0 {
			t.Errorf("i=%d BrowseName = %+v, want 0:%s", c.n, got, c.name)
		}
		if got := mustRead(t, as, i(c.n), ua.AttributeIDNodeClass).(int32); ua.NodeClass(got) != c.class {
			t.Errorf("i=%d NodeClass = %d, want %v", c.n, got, c.class)
		}
	}
}

func TestReadAttributesOfEveryClass(t *testing.T) {
	as, _ := newSpace(t)
	bad := ua.StatusBadAttributeIDInvalid
	type want struct {
		attr ua.AttributeID
		val  any // compared by value for simple types; nil: only Good
		st   ua.StatusCode
	}
	for _, c := range []struct {
		name  string
		node  uint32
		wants []want
	}{
		{"Object Server", id.Server, []want{
			{ua.AttributeIDEventNotifier, byte(1), ua.StatusOK},
			{ua.AttributeIDWriteMask, uint32(0), ua.StatusOK},
			{ua.AttributeIDIsAbstract, nil, bad},
			{ua.AttributeIDDataType, nil, bad},
			{ua.AttributeIDValue, nil, bad},
			{ua.AttributeIDExecutable, nil, bad},
		}},
		{"Variable ServiceLevel", id.Server_ServiceLevel, []want{
			{ua.AttributeIDValueRank, int32(-1), ua.StatusOK},
			{ua.AttributeIDAccessLevel, byte(1), ua.StatusOK},
			{ua.AttributeIDUserAccessLevel, byte(1), ua.StatusOK},
			{ua.AttributeIDAccessLevelEx, uint32(1), ua.StatusOK},
			{ua.AttributeIDMinimumSamplingInterval, float64(1000), ua.StatusOK},
			{ua.AttributeIDHistorizing, false, ua.StatusOK},
			{ua.AttributeIDEventNotifier, nil, bad},
			{ua.AttributeIDIsAbstract, nil, bad},
			{ua.AttributeIDSymmetric, nil, bad},
		}},
		{"Variable EnumStrings of ServerState", 7612, []want{
			{ua.AttributeIDValueRank, int32(1), ua.StatusOK},
		}},
		{"Method GetMonitoredItems", id.Server_GetMonitoredItems, []want{
			{ua.AttributeIDExecutable, false, ua.StatusOK},
			{ua.AttributeIDUserExecutable, false, ua.StatusOK},
			{ua.AttributeIDValue, nil, bad},
			{ua.AttributeIDEventNotifier, nil, bad},
		}},
		{"ObjectType ServerType", id.ServerType, []want{
			{ua.AttributeIDIsAbstract, false, ua.StatusOK},
			{ua.AttributeIDSymmetric, nil, bad},
		}},
		{"abstract ObjectType BaseEventType", id.BaseEventType, []want{
			{ua.AttributeIDIsAbstract, true, ua.StatusOK},
		}},
		{"VariableType BaseVariableType", id.BaseVariableType, []want{
			{ua.AttributeIDIsAbstract, true, ua.StatusOK},
			{ua.AttributeIDValueRank, int32(-2), ua.StatusOK},
			{ua.AttributeIDAccessLevel, nil, bad},
		}},
		{"VariableType ArrayItemType, explicit ValueRank 0", id.ArrayItemType, []want{
			{ua.AttributeIDValueRank, int32(0), ua.StatusOK},
		}},
		{"ReferenceType Organizes", id.Organizes, []want{
			{ua.AttributeIDIsAbstract, false, ua.StatusOK},
			{ua.AttributeIDSymmetric, false, ua.StatusOK},
			{ua.AttributeIDContainsNoLoops, nil, bad},
		}},
		{"ReferenceType HierarchicalReferences", id.HierarchicalReferences, []want{
			{ua.AttributeIDIsAbstract, true, ua.StatusOK},
		}},
		{"DataType ServerState", id.ServerState, []want{
			{ua.AttributeIDIsAbstract, false, ua.StatusOK},
			{ua.AttributeIDValueRank, nil, bad},
			{ua.AttributeIDDataTypeDefinition, nil, bad},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, attr := range []ua.AttributeID{ua.AttributeIDNodeID, ua.AttributeIDNodeClass, ua.AttributeIDBrowseName, ua.AttributeIDDisplayName, ua.AttributeIDDescription, ua.AttributeIDWriteMask, ua.AttributeIDUserWriteMask} {
				if dv := read(as, i(c.node), attr); dv.Status != ua.StatusOK {
					t.Errorf("base attribute %v: %v", attr, dv.Status)
				}
			}
			for _, attr := range []ua.AttributeID{0, 28, 1000} {
				if dv := read(as, i(c.node), attr); dv.Status != bad {
					t.Errorf("attribute id %d: %v, want BadAttributeIdInvalid", attr, dv.Status)
				}
			}
			for _, w := range c.wants {
				dv := read(as, i(c.node), w.attr)
				if dv.Status != w.st {
					t.Errorf("attribute %v: status %v, want %v", w.attr, dv.Status, w.st)
					continue
				}
				if w.val != nil && dv.Value.Value() != w.val {
					t.Errorf("attribute %v = %#v, want %#v", w.attr, dv.Value.Value(), w.val)
				}
			}
		})
	}

	// Attributes of pointer types.
	if got := mustRead(t, as, i(id.Server_ServiceLevel), ua.AttributeIDDataType).(*ua.NodeID); !got.Equal(i(id.Byte)) {
		t.Errorf("ServiceLevel DataType = %s, want i=3 (Byte)", got)
	}
	if got := mustRead(t, as, i(id.Server_ServiceLevel), ua.AttributeIDNodeID).(*ua.NodeID); !got.Equal(i(id.Server_ServiceLevel)) {
		t.Errorf("NodeId attribute = %s", got)
	}
	if got := mustRead(t, as, i(id.Organizes), ua.AttributeIDInverseName).(*ua.LocalizedText); got.Text != "OrganizedBy" {
		t.Errorf("Organizes InverseName = %+v", got)
	}
	if got := mustRead(t, as, i(id.Server), ua.AttributeIDDisplayName).(*ua.LocalizedText); got.Text != "Server" {
		t.Errorf("Server DisplayName = %+v", got)
	}
	if got := mustRead(t, as, i(7612), ua.AttributeIDArrayDimensions).([]uint32); len(got) != 1 || got[0] != 8 {
		t.Errorf("EnumStrings ArrayDimensions = %v, want [8]", got)
	}
	// Values the nodeset carries: EnumStrings of ServerState, the method
	// arguments of GetMonitoredItems.
	strs := mustRead(t, as, i(7612), ua.AttributeIDValue).([]*ua.LocalizedText)
	if len(strs) != 8 || strs[0].Text != "Running" || strs[7].Text != "Unknown" {
		t.Errorf("ServerState EnumStrings = %v", strs)
	}
	args := mustRead(t, as, i(11493), ua.AttributeIDValue).([]*ua.ExtensionObject)
	if a, ok := args[0].Value.(*ua.Argument); !ok || a.Name != "SubscriptionId" || !a.DataType.Equal(i(id.UInt32)) {
		t.Errorf("GetMonitoredItems InputArguments[0] = %#v", args[0].Value)
	}
}

func TestReadTimestampsToReturn(t *testing.T) {
	as, clk := newSpace(t)
	v, err := as.AddVariable(ua.NewStringNodeID(1, "T"), "T", "", i(id.ObjectsFolder), i(id.Double), 1.5, rw)
	if err != nil {
		t.Fatal(err)
	}
	src := t0.Add(-time.Minute)
	if err := v.Set(2.5, ua.StatusOK, src); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour) // reads happen an hour after the Set
	readAt := t0.Add(time.Hour)
	for _, c := range []struct {
		ttr        ua.TimestampsToReturn
		src, srv   bool
		attrServer bool
	}{
		{ua.TimestampsToReturnSource, true, false, false},
		{ua.TimestampsToReturnServer, false, true, true},
		{ua.TimestampsToReturnBoth, true, true, true},
		{ua.TimestampsToReturnNeither, false, false, false},
	} {
		dv := as.Read(&ua.ReadValueID{NodeID: v.NodeID(), AttributeID: ua.AttributeIDValue}, c.ttr)
		if dv.Status != ua.StatusOK || dv.Value.Value() != 2.5 {
			t.Fatalf("%v: %v %v", c.ttr, dv.Status, dv.Value)
		}
		if got := dv.Has(ua.DataValueSourceTimestamp); got != c.src || (c.src && !dv.SourceTimestamp.Equal(src)) || (!c.src && !dv.SourceTimestamp.IsZero()) {
			t.Errorf("%v: source timestamp present=%v %v, want present=%v %v", c.ttr, got, dv.SourceTimestamp, c.src, src)
		}
		if got := dv.Has(ua.DataValueServerTimestamp); got != c.srv || (c.srv && !dv.ServerTimestamp.Equal(readAt)) || (!c.srv && !dv.ServerTimestamp.IsZero()) {
			t.Errorf("%v: server timestamp present=%v %v, want present=%v at the read %v", c.ttr, got, dv.ServerTimestamp, c.srv, readAt)
		}
		// A non-Value attribute never has a source timestamp.
		dn := as.Read(&ua.ReadValueID{NodeID: v.NodeID(), AttributeID: ua.AttributeIDBrowseName}, c.ttr)
		if dn.Has(ua.DataValueSourceTimestamp) || dn.Has(ua.DataValueServerTimestamp) != c.attrServer {
			t.Errorf("%v: BrowseName mask %#x", c.ttr, dn.EncodingMask)
		}
	}
	// The stored value is not changed by reads.
	if dv := v.Value(); !dv.SourceTimestamp.Equal(src) || !dv.ServerTimestamp.Equal(t0) {
		t.Errorf("stored value timestamps changed: %v %v", dv.SourceTimestamp, dv.ServerTimestamp)
	}
	if dv := as.Read(&ua.ReadValueID{NodeID: v.NodeID(), AttributeID: ua.AttributeIDValue}, ua.TimestampsToReturnInvalid); dv.Status != ua.StatusBadTimestampsToReturnInvalid {
		t.Errorf("invalid TimestampsToReturn: %v", dv.Status)
	}
}

func TestReadErrorsAndIndexRange(t *testing.T) {
	as, _ := newSpace(t)
	arr, err := as.AddVariable(ua.NewStringNodeID(1, "Arr"), "Arr", "", i(id.ObjectsFolder), i(id.Int32), []int32{10, 11, 12, 13}, rw)
	if err != nil {
		t.Fatal(err)
	}
	str, err := as.AddVariable(ua.NewStringNodeID(1, "Str"), "Str", "", i(id.ObjectsFolder), i(id.String), "hello", rw)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rv   *ua.ReadValueID
		st   ua.StatusCode
		want any
	}{
		{"unknown node", &ua.ReadValueID{NodeID: ua.NewStringNodeID(1, "nope"), AttributeID: ua.AttributeIDValue}, ua.StatusBadNodeIDUnknown, nil},
		{"unknown namespace", &ua.ReadValueID{NodeID: ua.NewNumericNodeID(77, 1), AttributeID: ua.AttributeIDValue}, ua.StatusBadNodeIDUnknown, nil},
		{"nil node", &ua.ReadValueID{AttributeID: ua.AttributeIDValue}, ua.StatusBadNodeIDUnknown, nil},
		{"one element", &ua.ReadValueID{NodeID: arr.NodeID(), AttributeID: ua.AttributeIDValue, IndexRange: "2"}, ua.StatusOK, []int32{12}},
		{"a range", &ua.ReadValueID{NodeID: arr.NodeID(), AttributeID: ua.AttributeIDValue, IndexRange: "1:2"}, ua.StatusOK, []int32{11, 12}},
		{"range past the end is cut", &ua.ReadValueID{NodeID: arr.NodeID(), AttributeID: ua.AttributeIDValue, IndexRange: "3:9"}, ua.StatusOK, []int32{13}},
		{"range beyond the array", &ua.ReadValueID{NodeID: arr.NodeID(), AttributeID: ua.AttributeIDValue, IndexRange: "4:9"}, ua.StatusBadIndexRangeNoData, nil},
		{"string range", &ua.ReadValueID{NodeID: str.NodeID(), AttributeID: ua.AttributeIDValue, IndexRange: "1:3"}, ua.StatusOK, "ell"},
		{"reversed range", &ua.ReadValueID{NodeID: arr.NodeID(), AttributeID: ua.AttributeIDValue, IndexRange: "2:1"}, ua.StatusBadIndexRangeInvalid, nil},
		{"garbage range", &ua.ReadValueID{NodeID: arr.NodeID(), AttributeID: ua.AttributeIDValue, IndexRange: "a:b"}, ua.StatusBadIndexRangeInvalid, nil},
		{"2-D range on a 1-D array", &ua.ReadValueID{NodeID: arr.NodeID(), AttributeID: ua.AttributeIDValue, IndexRange: "0:1,0:1"}, ua.StatusBadIndexRangeInvalid, nil},
		{"range on a scalar", &ua.ReadValueID{NodeID: i(id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue, IndexRange: "0"}, ua.StatusBadIndexRangeInvalid, nil},
		{"range on a non-Value attribute", &ua.ReadValueID{NodeID: arr.NodeID(), AttributeID: ua.AttributeIDBrowseName, IndexRange: "0"}, ua.StatusBadIndexRangeInvalid, nil},
		{"encoding of a non-structure", &ua.ReadValueID{NodeID: arr.NodeID(), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{Name: "Default Binary"}}, ua.StatusBadDataEncodingInvalid, nil},
		{"encoding of a structure", &ua.ReadValueID{NodeID: i(11493), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{Name: "Default Binary"}}, ua.StatusOK, nil},
		{"unsupported encoding", &ua.ReadValueID{NodeID: i(11493), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{Name: "Default XML"}}, ua.StatusBadDataEncodingUnsupported, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dv := as.Read(c.rv, ua.TimestampsToReturnNeither)
			if dv.Status != c.st {
				t.Fatalf("status %v, want %v", dv.Status, c.st)
			}
			if c.st != ua.StatusOK && dv.Has(ua.DataValueValue) {
				t.Errorf("a failed read carries a value: %v", dv.Value)
			}
			switch w := c.want.(type) {
			case []int32:
				got, _ := dv.Value.Value().([]int32)
				if len(got) != len(w) || (len(w) > 0 && got[0] != w[0]) || got[len(got)-1] != w[len(w)-1] {
					t.Errorf("value %v, want %v", got, w)
				}
			case string:
				if got := dv.Value.Value(); got != w {
					t.Errorf("value %v, want %v", got, w)
				}
			}
		})
	}
	// The index range did not cut the stored array.
	if got := arr.Value().Value.Value().([]int32); len(got) != 4 {
		t.Errorf("stored array changed: %v", got)
	}
}

func TestGetterSuppliesValue(t *testing.T) {
	as, clk := newSpace(t)
	v, err := as.Variable(i(id.Server_ServerStatus_CurrentTime))
	if err != nil {
		t.Fatal(err)
	}
	v.SetGetter(func() *ua.DataValue {
		now := clk.Now()
		return &ua.DataValue{EncodingMask: ua.DataValueValue | ua.DataValueSourceTimestamp, Value: ua.MustVariant(now), SourceTimestamp: now}
	})
	clk.Advance(5 * time.Second)
	if got := mustRead(t, as, i(id.Server_ServerStatus_CurrentTime), ua.AttributeIDValue).(time.Time); !got.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("CurrentTime = %v, want %v", got, t0.Add(5*time.Second))
	}
	v.SetGetter(nil)
	if got := mustRead(t, as, i(id.Server_ServerStatus_CurrentTime), ua.AttributeIDValue); got != nil {
		t.Errorf("without a getter CurrentTime = %v, want the stored null value", got)
	}
}

func TestSourceRead(t *testing.T) {
	as, _ := newSpace(t)
	src := as.Source()
	v, err := as.AddVariable(ua.NewStringNodeID(1, "S"), "S", "", i(id.ObjectsFolder), i(id.Int32), int32(1), rw)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Set(int32(7), ua.StatusUncertain, t0.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	dv := src.Read(v.NodeID(), ua.AttributeIDValue)
	if dv.Value.Value() != int32(7) || dv.Status != ua.StatusUncertain || !dv.SourceTimestamp.Equal(t0.Add(-time.Second)) || !dv.ServerTimestamp.Equal(t0) {
		t.Errorf("Source.Read = %+v", dv)
	}
	if dv := src.Read(ua.NewStringNodeID(1, "x"), ua.AttributeIDValue); dv.Status != ua.StatusBadNodeIDUnknown {
		t.Errorf("unknown node: %v", dv.Status)
	}
	if dv := src.Read(i(id.Server), ua.AttributeIDValue); dv.Status != ua.StatusBadAttributeIDInvalid {
		t.Errorf("Value of an object: %v", dv.Status)
	}
	if dv := src.Read(v.NodeID(), ua.AttributeIDAccessLevel); dv.Status != ua.StatusOK || dv.Value.Value() != rw {
		t.Errorf("AccessLevel: %v %v", dv.Status, dv.Value)
	}
}
