package wire_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	_ "github.com/otopcua/otopcua/cluster/wire" // linked together in every binary
	"github.com/otopcua/otopcua/redundancy/wire"
)

// TestAnyRoundTrip: each message survives the protobuf Any the pub/sub
// mediator wraps it in, next to the cluster's own wire package.
func TestAnyRoundTrip(t *testing.T) {
	msgs := []proto.Message{
		&wire.RedundancyStateChanged{
			Entries: map[string]*wire.NodeRedundancyState{"10.0.0.1:4053": {NodeId: "10.0.0.1:4053", Uid: 7, Role: wire.Role_ROLE_PRIMARY, IsDriverPrimary: true, Status: "Up"}},
			Epochs:  map[string]*wire.ClusterEpoch{"pair": {ClusterId: "pair", Epoch: 1751371200000, Primary: "10.0.0.1:4053", PrimaryUid: 7}},
		},
		&wire.OpcUaProbeResult{Target: "10.0.0.2:4053", Ok: false, AtUnixMs: 1, Prober: "10.0.0.1:4053", Error: "refused"},
		&wire.NodeStatus{NodeId: "10.0.0.2:4053", Uid: 9, ServiceLevel: 240},
	}
	for _, m := range msgs {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := a.UnmarshalNew()
		if err != nil {
			t.Fatalf("%s: %v", a.GetTypeUrl(), err)
		}
		if !proto.Equal(back, m) {
			t.Fatalf("%s: got %v, want %v", a.GetTypeUrl(), back, m)
		}
	}
}

func TestUnixMs(t *testing.T) {
	if wire.UnixMs(time.Time{}) != 0 || !wire.FromUnixMs(0).IsZero() {
		t.Fatal("the zero time must map to 0 and back")
	}
	at := time.Date(2026, 7, 1, 12, 0, 0, 123_000_000, time.UTC)
	if got := wire.FromUnixMs(wire.UnixMs(at)); !got.Equal(at) {
		t.Fatalf("round trip %v → %v", at, got)
	}
}
