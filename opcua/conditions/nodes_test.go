package conditions_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/conditions"
	"github.com/otopcua/otopcua/opcua/events"
)

func browseAll(t *testing.T, c *gopcua.Client, n *ua.NodeID, refType uint32) []*ua.ReferenceDescription {
	t.Helper()
	resp, err := c.Browse(testCtx(t), &ua.BrowseRequest{
		View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)},
		NodesToBrowse: []*ua.BrowseDescription{{NodeID: n, BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeID: nsid(refType), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}},
	})
	if err != nil || resp.Results[0].StatusCode != ua.StatusOK {
		t.Fatalf("Browse %s: %v %v", n, err, resp.Results[0].StatusCode)
	}
	return resp.Results[0].References
}

func readValues(t *testing.T, c *gopcua.Client, attr ua.AttributeID, nodes ...*ua.NodeID) []*ua.DataValue {
	t.Helper()
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, n := range nodes {
		req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: n, AttributeID: attr})
	}
	resp, err := c.Read(testCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	for k, dv := range resp.Results {
		if dv.Status != ua.StatusOK {
			t.Fatalf("read %s: %v", nodes[k], dv.Status)
		}
	}
	return resp.Results
}

func sub(path string) *ua.NodeID { return ua.NewStringNodeID(1, "press1/HighTemperature."+path) }

// TestClientBrowsesAndReadsTheCondition browses the condition and its
// device folder and reads its components before and after an Update.
func TestClientBrowsesAndReadsTheCondition(t *testing.T) {
	p := startPlant(t)
	c := p.connect(t)

	var inFolder *ua.ReferenceDescription
	for _, r := range browseAll(t, c, press1, id.HierarchicalReferences) {
		if events.SameNode(r.NodeID.NodeID, highTemp) && events.SameNode(r.ReferenceTypeID, nsid(id.HasComponent)) {
			inFolder = r
		}
	}
	if inFolder == nil || !events.SameNode(inFolder.TypeDefinition.NodeID, nsid(id.AlarmConditionType)) || inFolder.BrowseName.Name != "HighTemperature" {
		t.Fatalf("press1 -> condition: %+v", inFolder)
	}
	names := map[string]*ua.ReferenceDescription{}
	for _, r := range browseAll(t, c, highTemp, id.HierarchicalReferences) {
		names[r.BrowseName.Name] = r
	}
	for _, n := range []string{"EventId", "EventType", "SourceNode", "SourceName", "Time", "ReceiveTime", "Message", "Severity",
		"ConditionClassId", "ConditionClassName", "ConditionName", "BranchId", "Retain", "EnabledState", "Quality",
		"LastSeverity", "Comment", "ClientUserId", "AckedState", "ConfirmedState", "ActiveState", "InputNode",
		"SuppressedOrShelved", "Acknowledge", "Confirm", "Enable", "Disable", "AddComment"} {
		if names[n] == nil {
			t.Errorf("the condition has no component %s", n)
		}
	}
	if r := names["ActiveState"]; r != nil && !events.SameNode(r.TypeDefinition.NodeID, nsid(id.TwoStateVariableType)) {
		t.Errorf("ActiveState type %v", r.TypeDefinition.NodeID)
	}
	if r := names["Acknowledge"]; r != nil && !events.SameNode(r.NodeID.NodeID, nsid(id.AcknowledgeableConditionType_Acknowledge)) {
		t.Errorf("Acknowledge is %v, want the type's method i=9111", r.NodeID.NodeID)
	}
	var hasID bool
	for _, r := range browseAll(t, c, sub("ActiveState"), id.HasProperty) {
		hasID = hasID || r.BrowseName.Name == "Id"
	}
	if !hasID {
		t.Error("ActiveState has no Id property")
	}

	dv := readValues(t, c, ua.AttributeIDValue, sub("ActiveState"), sub("ActiveState.Id"), sub("AckedState"), sub("EnabledState.Id"),
		sub("ConditionName"), sub("EventId"), sub("Severity"))
	if text(dv[0].Value) != "Inactive" || dv[1].Value.Value() != false || text(dv[2].Value) != "Acknowledged" ||
		dv[3].Value.Value() != true || dv[4].Value.Value() != "HighTemperature" || dv[6].Value.Value() != uint16(700) {
		t.Errorf("initial values %v %v %v %v %v %v", dv[0].Value, dv[1].Value, dv[2].Value, dv[3].Value, dv[4].Value, dv[6].Value)
	}
	at := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	eid, err := p.m.Update("HighTemperature", conditions.State{Enabled: true, Active: true, Retain: true, Quality: ua.StatusOK, Time: at})
	if err != nil {
		t.Fatal(err)
	}
	dv = readValues(t, c, ua.AttributeIDValue, sub("ActiveState"), sub("ActiveState.Id"), sub("AckedState"), sub("EventId"),
		sub("ActiveState.TransitionTime"), sub("Retain"))
	if text(dv[0].Value) != "Active" || dv[1].Value.Value() != true || text(dv[2].Value) != "Unacknowledged" ||
		string(dv[3].Value.Value().([]byte)) != string(eid) || !dv[4].Value.Value().(time.Time).Equal(at) || dv[5].Value.Value() != true {
		t.Errorf("values after Update %v %v %v %v %v %v", dv[0].Value, dv[1].Value, dv[2].Value, dv[3].Value, dv[4].Value, dv[5].Value)
	}
	if !dv[0].SourceTimestamp.Equal(at) {
		t.Errorf("ActiveState SourceTimestamp %v, want the transition's", dv[0].SourceTimestamp)
	}

	bits := readValues(t, c, ua.AttributeIDEventNotifier, press1, highTemp)
	if bits[0].Value.Value() != addrspace.SubscribeToEvents|addrspace.HistoryRead || bits[1].Value.Value() != addrspace.SubscribeToEvents {
		t.Errorf("EventNotifier of press1 %v, of the condition %v", bits[0].Value.Value(), bits[1].Value.Value())
	}
	ex := readValues(t, c, ua.AttributeIDUserExecutable, nsid(id.AcknowledgeableConditionType_Acknowledge), nsid(id.ConditionType_ConditionRefresh))
	if ex[0].Value.Value() != true || ex[1].Value.Value() != true {
		t.Errorf("UserExecutable of Acknowledge %v, ConditionRefresh %v", ex[0].Value.Value(), ex[1].Value.Value())
	}
	ns, err := p.srv.AddressSpace().Notifiers(highTemp)
	if err != nil || len(ns) != 3 {
		t.Fatalf("the condition's events reach %v (%v), want itself, press1 and the Server", ns, err)
	}
}

// TestDefineUpdateRemove: Define is idempotent for the same Spec and
// refuses clashes; Remove deletes every node and the source's
// HasEventSource link with the last condition of that source.
func TestDefineUpdateRemove(t *testing.T) {
	p := startPlant(t)
	as := p.srv.AddressSpace()
	m := p.m
	if err := m.Define(highSpec()); err != nil {
		t.Fatalf("the same spec again: %v", err)
	}
	other := highSpec()
	other.Severity = 900
	if err := m.Define(other); !errors.Is(err, conditions.ErrConflict) {
		t.Fatalf("another spec, same name: %v", err)
	}
	sameNode := lowSpec()
	sameNode.NodeID = highTemp
	if err := m.Define(sameNode); !errors.Is(err, conditions.ErrConflict) {
		t.Fatalf("another name, same NodeId: %v", err)
	}
	taken := lowSpec()
	taken.NodeID = temperature // a tag's NodeId
	if err := m.Define(taken); !errors.Is(err, addrspace.ErrNodeExists) {
		t.Fatalf("a NodeId in use: %v", err)
	}
	if as.Read(&ua.ReadValueID{NodeID: ua.NewStringNodeID(1, "press1/Temperature.ActiveState"), AttributeID: ua.AttributeIDNodeClass}, 0).Status != ua.StatusBadNodeIDUnknown {
		t.Fatal("a failed Define left nodes behind")
	}
	for _, bad := range []conditions.Spec{
		{NodeID: lowTemp, Parent: press1},
		{Name: "x", NodeID: ua.NewNumericNodeID(1, 5), Parent: press1},
		{Name: "x", NodeID: lowTemp},
	} {
		if err := m.Define(bad); !errors.Is(err, conditions.ErrInvalidSpec) {
			t.Errorf("Define(%+v): %v", bad, err)
		}
	}
	noParent := lowSpec()
	noParent.Parent = ua.NewStringNodeID(1, "nowhere")
	if err := m.Define(noParent); !errors.Is(err, addrspace.ErrUnknownNode) {
		t.Fatalf("unknown parent: %v", err)
	}
	if err := m.Define(lowSpec()); err != nil {
		t.Fatal(err)
	}
	if got := m.Names(); !slices.Equal(got, []string{"HighTemperature", "LowTemperature"}) {
		t.Fatalf("Names %v", got)
	}
	if st, eid, ok := m.Snapshot("LowTemperature"); !ok || eid != nil || !st.Enabled || st.Active || !st.Acked {
		t.Fatalf("initial snapshot %+v %x %v", st, eid, ok)
	}

	sourceLinked := func() bool {
		refs, _ := as.Browse(&ua.BrowseDescription{NodeID: press1, BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeID: nsid(id.HasEventSource), ResultMask: uint32(ua.BrowseResultMaskAll)})
		for _, r := range refs {
			if events.SameNode(r.NodeID.NodeID, temperature) {
				return true
			}
		}
		return false
	}
	if err := m.Remove("HighTemperature"); err != nil {
		t.Fatal(err)
	}
	if !sourceLinked() {
		t.Fatal("press1 -HasEventSource-> Temperature went with the first of its two conditions")
	}
	for _, n := range []*ua.NodeID{highTemp, sub("ActiveState"), sub("ActiveState.Id")} {
		if as.Read(&ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDNodeClass}, 0).Status != ua.StatusBadNodeIDUnknown {
			t.Errorf("%s survived Remove", n)
		}
	}
	if _, err := m.Update("HighTemperature", conditions.State{}); !errors.Is(err, conditions.ErrUnknown) {
		t.Fatalf("Update of a removed condition: %v", err)
	}
	if err := m.Remove("HighTemperature"); !errors.Is(err, conditions.ErrUnknown) {
		t.Fatalf("second Remove: %v", err)
	}
	if err := m.Remove("LowTemperature"); err != nil {
		t.Fatal(err)
	}
	if sourceLinked() {
		t.Fatal("press1 -HasEventSource-> Temperature outlived its last condition")
	}
	if err := m.Define(highSpec()); err != nil {
		t.Fatalf("define again after Remove: %v", err)
	}
}
