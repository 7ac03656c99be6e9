package opcua

import (
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
)

func TestUpstreamTag(t *testing.T) {
	dv := func(v any) *ua.DataValue {
		return &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}
	}
	scalar := dv(int32(-1))
	node := ua.NewStringNodeID(2, "S")
	for _, tc := range []struct {
		name          string
		tag           deployment.Tag
		dt, vr        *ua.DataValue
		want          UpstreamTag
		problem       ua.StatusCode
		problemNodeID string
	}{
		{name: "Double", tag: deployment.Tag{Name: "S", NodeId: "ns=2;s=S"}, dt: dv(ua.NewNumericNodeID(0, id.Double)), vr: scalar,
			want: UpstreamTag{Node: "ns=2;s=S", DataType: "Double", Type: deployment.TypeFloat64, ValueRank: -1}},
		{name: "UInt32 array", tag: deployment.Tag{Name: "S", NodeId: "ns=2;s=S"}, dt: dv(ua.NewNumericNodeID(0, id.UInt32)), vr: dv(int32(1)),
			want: UpstreamTag{Node: "ns=2;s=S", DataType: "UInt32", Type: deployment.TypeUint32, ValueRank: 1}},
		{name: "String: no tag type", tag: deployment.Tag{Name: "S", NodeId: "ns=2;s=S"}, dt: dv(ua.NewNumericNodeID(0, id.String)), vr: scalar,
			want: UpstreamTag{Node: "ns=2;s=S", DataType: "String", ValueRank: -1}},
		{name: "a vendor type", tag: deployment.Tag{Name: "S", NodeId: "ns=2;s=S"}, dt: dv(ua.NewNumericNodeID(3, 3001)), vr: scalar,
			want: UpstreamTag{Node: "ns=2;s=S", DataType: "ns=3;i=3001", ValueRank: -1}},
		{name: "unknown node", tag: deployment.Tag{Name: "S", NodeId: "ns=2;s=S"},
			dt: &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: ua.StatusBadNodeIDUnknown}, vr: scalar,
			problem: ua.StatusBadNodeIDUnknown, problemNodeID: "ns=2;s=S"},
		{name: "no ValueRank", tag: deployment.Tag{Name: "S", BrowsePath: "/2:S"}, dt: dv(ua.NewNumericNodeID(0, id.Double)), vr: nil,
			problem: ua.StatusBadCommunicationError, problemNodeID: "ns=2;s=S"},
		{name: "a DataType that is no NodeId", tag: deployment.Tag{Name: "S", NodeId: "ns=2;s=S"}, dt: dv("Double"), vr: scalar,
			problem: ua.StatusBadTypeMismatch, problemNodeID: "ns=2;s=S"},
	} {
		got := upstreamTag(tc.tag, node, tc.dt, tc.vr)
		switch {
		case tc.problem != 0 && (got.Problem == nil || got.Problem.Status != tc.problem || got.Problem.NodeID != tc.problemNodeID || got.Problem.Tag != "S"):
			t.Errorf("%s: %+v (problem %+v), want status %v", tc.name, got, got.Problem, tc.problem)
		case tc.problem == 0 && got != tc.want:
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
