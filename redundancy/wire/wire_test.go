package wire_test

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
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
		&wire.NodeStatus{NodeId: "10.0.0.2:4053", Uid: 9, ServiceLevel: 200,
			ConfigdbState: wire.ConfigDbState_CONFIG_DB_STATE_UNREACHABLE, ConfigdbError: "i/o timeout"},
		&wire.ManualFailover{ClusterId: "pair", TargetNodeId: "10.0.0.1:4053", TargetUid: 7, Actor: "alice",
			RequestedAtUnixMs: 1751371200000, Epoch: 3, EstimatedReturnUnixMs: 1751371215000},
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

// TestNewFieldsDecodeFromAnOlderSender: a NodeStatus from a node older
// than configdb_state decodes with the field unspecified, and the new
// fields do not disturb an older reader (they are skipped as unknown).
func TestNewFieldsDecodeFromAnOlderSender(t *testing.T) {
	old, err := proto.Marshal(&wire.NodeStatus{NodeId: "10.0.0.2:4053", ServiceLevel: 240})
	if err != nil {
		t.Fatal(err)
	}
	var ns wire.NodeStatus
	if err := proto.Unmarshal(old, &ns); err != nil {
		t.Fatal(err)
	}
	if ns.GetConfigdbState() != wire.ConfigDbState_CONFIG_DB_STATE_UNSPECIFIED || ns.GetServiceLevel() != 240 {
		t.Fatalf("older NodeStatus decoded as %v", &ns)
	}
	// Field numbers 1..7 keep their meaning: a new message read as an old
	// one (only those fields) still has its ServiceLevel.
	b, _ := proto.Marshal(&wire.NodeStatus{ServiceLevel: 7, ConfigdbState: wire.ConfigDbState_CONFIG_DB_STATE_OK, ConfigdbError: "x"})
	var back wire.NodeStatus
	if err := proto.Unmarshal(b, &back); err != nil || back.GetServiceLevel() != 7 || back.GetConfigdbError() != "x" {
		t.Fatalf("round trip: %v, %v", &back, err)
	}
	// An older reader knows only fields 1..7 and skips the rest: what it
	// keeps of the new message must be service_level 7 alone.
	var known []byte
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			t.Fatalf("bad tag in %x", b)
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			t.Fatalf("bad field %d in %x", num, b)
		}
		if num <= 7 {
			known = append(known, rest[:n+m]...)
		}
		rest = rest[n+m:]
	}
	if want := protowire.AppendVarint(protowire.AppendTag(nil, 6, protowire.VarintType), 7); !bytes.Equal(known, want) {
		t.Fatalf("an older reader would see %x, want %x (service_level 7 only)", known, want)
	}
}

// FuzzDecode: no input makes the decoders of this package panic.
func FuzzDecode(f *testing.F) {
	seed, _ := proto.Marshal(&wire.ManualFailover{ClusterId: "pair", TargetNodeId: "a:1", TargetUid: 1})
	f.Add(seed)
	f.Add([]byte{0x40, 0xff, 0xff, 0xff, 0xff, 0x0f}) // configdb_state = an unknown enum value
	f.Add([]byte{0x4a, 0x05, 0xff, 0xfe, 0x00})       // configdb_error shorter than its length
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = proto.Unmarshal(b, &wire.NodeStatus{})
		_ = proto.Unmarshal(b, &wire.ManualFailover{})
		_ = proto.Unmarshal(b, &wire.RedundancyStateChanged{})
	})
}
