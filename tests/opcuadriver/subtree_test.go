package opcuadriver_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// browseTree returns every node below root (hierarchical references,
// forward) as "<NodeId> <BrowseName>", sorted, at most limit.
func (c *session) browseTree(root *ua.NodeID, limit int) []string {
	c.t.Helper()
	var out []string
	queue := []*ua.NodeID{root}
	for len(queue) > 0 && len(out) < limit {
		n := queue[0]
		queue = queue[1:]
		resp, err := c.call(&ua.BrowseRequest{View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)}, RequestedMaxReferencesPerNode: 0,
			NodesToBrowse: []*ua.BrowseDescription{{NodeID: n, BrowseDirection: ua.BrowseDirectionForward,
				ReferenceTypeID: ua.NewNumericNodeID(0, id.HierarchicalReferences), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}}})
		if err != nil {
			c.t.Fatalf("Browse %v: %v", n, err)
		}
		for _, r := range resp.(*ua.BrowseResponse).Results[0].References {
			out = append(out, r.NodeID.NodeID.String()+" "+r.BrowseName.Name)
			queue = append(queue, r.NodeID.NodeID)
		}
	}
	sort.Strings(out)
	return out
}

// attr reads one attribute of n.
func (c *session) attr(n *ua.NodeID, a ua.AttributeID) any {
	c.t.Helper()
	resp, err := c.call(&ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: n, AttributeID: a, DataEncoding: &ua.QualifiedName{}}}})
	if err != nil {
		c.t.Fatal(err)
	}
	dv := resp.(*ua.ReadResponse).Results[0]
	if dv.Status != ua.StatusOK || dv.Value == nil {
		return dv.Status
	}
	v := dv.Value.Value()
	if eo, ok := v.(*ua.ExtensionObject); ok {
		return eo.Value
	}
	return v
}

// TestMirrorsAnUpstreamSubtree, on a pair: the device mirrors the
// upstream folder Line1 (refresh 1 s). Both nodes serve the same tree
// with the same NodeIds (derived from the browse path): folders,
// variables with their values, DataTypes, Description, EURange and
// EngineeringUnits; a write to the writable variable lands upstream.
// Then the upstream's namespace changes (a variable added, one removed):
// both nodes follow, and a client's subscription to an unchanged variable
// keeps delivering. Last, b is SIGKILLed and restarted: it serves the
// same NodeIds again.
func TestMirrorsAnUpstreamSubtree(t *testing.T) {
	up := nodescript.StartUpstream(t, map[string]any{"vars": 1, "periodMs": 100, "tree": true})
	a, b, cfg := startPair(t, "confirmed")
	procs.Deploy(t, cfg, doc(fmt.Sprintf(`{"name": "up", "driver": "opcua", %s "publishingInterval": "100ms",
  "mirror": {"browsePath": "/2:Line1", "refresh": "1s"},
  "tags": [{"name": "V0", "nodeId": "ns=2;s=V0", "type": "float64"}]}`, endpoint(up.URL))))
	a.WaitDeployed(1)
	b.WaitDeployed(1)
	ca, cb := connect(t, a.Endpoint()), connect(t, b.Endpoint())
	ns := ca.namespace()
	if nsb := cb.namespace(); nsb != ns {
		t.Fatalf("namespace %d on a, %d on b", ns, nsb)
	}
	node := func(key string) *ua.NodeID { return ua.NewStringNodeID(ns, "up/"+key) }
	want := []string{"Line1/Count Count", "Line1/Mode Mode", "Line1/Motor Motor", "Line1/Motor/Temp Temp", "Line1/Motor/Temp/EURange EURange",
		"Line1/Motor/Temp/EngineeringUnits EngineeringUnits", "Line1/Speed Speed", "Line1/Speed/EURange EURange", "Line1/Speed/EngineeringUnits EngineeringUnits"}
	for k := range want {
		want[k] = fmt.Sprintf("ns=%d;s=up/%s", ns, want[k])
	}
	var treeA []string
	procs.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		treeA = ca.browseTree(node("Line1"), 100)
		if treeB := cb.browseTree(node("Line1"), 100); !slices.Equal(treeA, want) || !slices.Equal(treeB, want) {
			return fmt.Errorf("a serves %q\nb serves %q\nwant %q", treeA, treeB, want)
		}
		for _, c := range []*session{ca, cb} {
			got := c.read(node("Line1/Speed"), node("Line1/Count"), node("Line1/Motor/Temp"))
			if got[0].Status != ua.StatusOK || got[1].Value.Value() != uint32(42) || got[2].Value.Value() != float32(21.5) {
				return fmt.Errorf("Speed %v, Count %v, Temp %v", got[0].Status, got[1].Value.Value(), got[2].Value.Value())
			}
		}
		return nil
	})
	t.Logf("both nodes serve %d mirrored nodes with the same NodeIds", len(treeA))
	for _, c := range []struct {
		n    *ua.NodeID
		attr ua.AttributeID
		want string
	}{
		{node("Line1/Speed"), ua.AttributeIDDescription, "Belt speed"},
		{node("Line1/Count"), ua.AttributeIDDescription, "Parts counted"},
		{node("Line1/Speed"), ua.AttributeIDDataType, "i=11"},
		{node("Line1/Motor/Temp"), ua.AttributeIDDataType, "i=10"},
		{node("Line1/Speed/EURange"), ua.AttributeIDValue, "0 100"},
		{node("Line1/Motor/Temp/EURange"), ua.AttributeIDValue, "-20 150"},
		{node("Line1/Speed/EngineeringUnits"), ua.AttributeIDValue, "rpm 4403792"},
		{node("Line1/Motor"), ua.AttributeIDDisplayName, "Motor"},
	} {
		var got string
		switch v := cb.attr(c.n, c.attr).(type) {
		case *ua.LocalizedText:
			got = v.Text
		case *ua.NodeID:
			got = v.String()
		case *ua.Range:
			got = fmt.Sprint(v.Low, " ", v.High)
		case *ua.EUInformation:
			got = fmt.Sprint(v.DisplayName.Text, " ", v.UnitID)
		default:
			got = fmt.Sprint(v)
		}
		if got != c.want {
			t.Errorf("%v attribute %d: %q, want %q", c.n, c.attr, got, c.want)
		}
	}
	if st := ca.write(node("Line1/Mode"), int32(3)); st != ua.StatusOK {
		t.Fatalf("write Mode: %v", st)
	}
	up.WaitCount("mode 3", 1)

	// The upstream's namespace changes; Speed's subscriber keeps its values.
	mon := ca.monitor([]*ua.NodeID{node("Line1/Speed")})
	up.Send("add Extra")
	up.Send("remove Count")
	changed := time.Now()
	procs.CheckFor(t, 15*time.Second, 200*time.Millisecond, func() error {
		for _, c := range []*session{ca, cb} {
			got := c.read(node("Line1/Extra"), node("Line1/Count"))
			if got[0].Status != ua.StatusOK || got[0].Value.Value() != 7.0 || got[1].Status != ua.StatusBadNodeIDUnknown {
				return fmt.Errorf("Extra %v %v, Count %v", got[0].Status, got[0].Value, got[1].Status)
			}
		}
		return nil
	})
	t.Logf("the namespace change reached both nodes after %v", time.Since(changed).Round(time.Millisecond))
	mon.take()
	procs.CheckFor(t, 5*time.Second, 100*time.Millisecond, func() error {
		if n := mon.count(); n < 5 {
			return fmt.Errorf("%d samples of Speed after the change", n)
		}
		return nil
	})
	var bad int
	for _, s := range mon.take() {
		if s.value.Status != ua.StatusOK {
			bad++
		}
	}
	if bad > 0 || len(mon.subscriptionIDs()) != 1 {
		t.Fatalf("Speed's subscription: %d Bad samples, subscriptions %v", bad, mon.subscriptionIDs())
	}
	if !strings.Contains(a.Log(), "opcua: the upstream subtree changed") {
		t.Fatal("no log line says the subtree changed")
	}

	// b SIGKILLed and restarted: it serves the same NodeIds again.
	treeA = ca.browseTree(node("Line1"), 100)
	b.Signal(syscall.SIGKILL)
	b.Restart()
	b.WaitReady(30 * time.Second)
	cb = connect(t, b.Endpoint())
	procs.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		if treeB := cb.browseTree(node("Line1"), 100); !slices.Equal(treeB, treeA) {
			return fmt.Errorf("b serves %q after its restart, a %q", treeB, treeA)
		}
		if st := cb.read(node("Line1/Extra"))[0].Status; st != ua.StatusOK {
			return fmt.Errorf("Extra on b after its restart: %v", st)
		}
		return nil
	})
}
