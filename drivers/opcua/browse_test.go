package opcua

import (
	"math"
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
)

func TestRelativePath(t *testing.T) {
	ns := []string{"http://opcfoundation.org/UA/", "urn:server", "urn:plc:line1"}
	for _, tc := range []struct {
		path string
		want []string // reference type, target namespace:name per element
		err  string
	}{
		{"/2:Line1/2:Speed", []string{"33 2:Line1", "33 2:Speed"}, ""},
		{"/nsu=urn:plc:line1;Line1.nsu=urn:plc:line1;EURange", []string{"33 2:Line1", "44 2:EURange"}, ""},
		{"/Server.ServiceLevel", []string{"33 0:Server", "44 0:ServiceLevel"}, ""},
		{"/nsu=urn:other;A", nil, "the upstream serves no namespace urn:other"},
	} {
		p, err := deployment.ParseBrowsePath(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		rp, err := relativePath(p, ns)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: %v, want %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil || len(rp.Elements) != len(tc.want) {
			t.Fatalf("%s: %+v %v", tc.path, rp, err)
		}
		for k, e := range rp.Elements {
			got := ua.NewNumericNodeID(0, e.ReferenceTypeID.IntID()).String()[2:] + " " + string(rune('0'+e.TargetName.NamespaceIndex)) + ":" + e.TargetName.Name
			if got != tc.want[k] || !e.IncludeSubtypes || e.IsInverse {
				t.Errorf("%s element %d: %s (subtypes %v, inverse %v), want %s", tc.path, k, got, e.IncludeSubtypes, e.IsInverse, tc.want[k])
			}
		}
	}
}

func TestTarget(t *testing.T) {
	tag := deployment.Tag{Name: "Speed", BrowsePath: "/2:Line1/2:Speed", Type: deployment.TypeFloat64}
	node := ua.NewStringNodeID(2, "Line1.Speed")
	full := func(n *ua.NodeID) *ua.BrowsePathTarget {
		return &ua.BrowsePathTarget{TargetID: &ua.ExpandedNodeID{NodeID: n}, RemainingPathIndex: math.MaxUint32}
	}
	for _, tc := range []struct {
		name   string
		r      *ua.BrowsePathResult
		want   *ua.NodeID
		status ua.StatusCode
	}{
		{"one target", &ua.BrowsePathResult{Targets: []*ua.BrowsePathTarget{full(node)}}, node, ua.StatusOK},
		{"the first complete target", &ua.BrowsePathResult{Targets: []*ua.BrowsePathTarget{
			{TargetID: &ua.ExpandedNodeID{NodeID: ua.NewNumericNodeID(0, id.Server)}, RemainingPathIndex: 1},
			{TargetID: &ua.ExpandedNodeID{NodeID: node, ServerIndex: 2}, RemainingPathIndex: math.MaxUint32},
			full(node), full(ua.NewStringNodeID(2, "Other"))}}, node, ua.StatusOK},
		{"no match", &ua.BrowsePathResult{StatusCode: ua.StatusBadNoMatch}, nil, ua.StatusBadNoMatch},
		{"only on another server", &ua.BrowsePathResult{Targets: []*ua.BrowsePathTarget{{TargetID: &ua.ExpandedNodeID{NodeID: node, ServerIndex: 1}, RemainingPathIndex: math.MaxUint32}}}, nil, ua.StatusBadNoMatch},
		{"no result", nil, nil, ua.StatusBadNoMatch},
	} {
		n, p := target(tag, tc.r)
		switch {
		case tc.status == ua.StatusOK && (p != nil || n != tc.want):
			t.Errorf("%s: %v %+v, want %v", tc.name, n, p, tc.want)
		case tc.status != ua.StatusOK && (p == nil || p.Status != tc.status || p.Tag != "Speed" || p.BrowsePath != tag.BrowsePath):
			t.Errorf("%s: %+v, want status %v naming the tag and its path", tc.name, p, tc.status)
		}
	}
	p := typeProblem(tag, node, &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(ua.NewNumericNodeID(0, id.Float))})
	if p == nil || p.String() != "tag Speed (browsePath /2:Line1/2:Speed, node ns=2;s=Line1.Speed): the upstream's DataType is float32, the document says float64" {
		t.Fatalf("type mismatch of a browsePath tag: %v", p)
	}
}
