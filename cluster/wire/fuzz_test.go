package wire

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
)

// prototypes lists one empty message of every wire type; the fuzzer picks
// one by its first argument.
func prototypes() []proto.Message {
	return []proto.Message{
		&InitJoin{}, &InitJoinAck{}, &InitJoinNack{}, &Join{}, &Welcome{}, &GossipEnvelope{},
		&GossipStatus{}, &Leave{}, &Down{}, &Heartbeat{}, &HeartbeatRsp{}, &ExitingConfirmed{},
	}
}

var (
	fuzzSelf = m.UniqueAddress{Host: "10.0.0.1", Port: 4053, UID: 11}
	fuzzPeer = m.UniqueAddress{Host: "node-b.lan", Port: 4054, UID: 22}
)

// twoMemberNode is fuzzSelf in a formed cluster with fuzzPeer Up.
func twoMemberNode() *node.Node {
	cfg := node.DefaultConfig(fuzzSelf, []m.Address{fuzzSelf.Address()})
	n := node.New(cfg)
	n.Start(0)
	n.Step(1, node.Join{Header: node.Header{From: fuzzPeer, To: fuzzSelf}, Roles: []string{"driver"}})
	n.Tick(1000)
	return n
}

// setAddress overwrites the UniqueAddress field name ("from" or "to").
func setAddress(msg proto.Message, name protoreflect.Name, u m.UniqueAddress) {
	r := msg.ProtoReflect()
	fd := r.Descriptor().Fields().ByName(name)
	r.Set(fd, protoreflect.ValueOfMessage(uaToWire(u).ProtoReflect()))
}

// FuzzDecode feeds arbitrary bytes through the receive path: protobuf
// decode, FromWire, and a Step into a formed node (the message addressed to
// the node, and half of the time sent by its peer so that gossip is taken
// in). Nothing may panic; the node's gossip must keep its invariants.
func FuzzDecode(f *testing.F) {
	protos := prototypes()
	for i, msg := range allMessages() {
		w, err := ToWire(msg)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := proto.Marshal(w)
		f.Add(uint8(i), b)
		f.Add(uint8(i)|0x80, b)
	}
	peerGossip := twoMemberNode().State().Gossip.Increment("x")
	b, _ := proto.Marshal(&GossipEnvelope{Gossip: GossipToWire(peerGossip)})
	f.Add(uint8(5)|0x80, b)
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		w := protos[int(kind&0x7f)%len(protos)].ProtoReflect().New().Interface()
		if err := proto.Unmarshal(data, w); err != nil {
			return
		}
		setAddress(w, "to", fuzzSelf)
		if kind&0x80 != 0 {
			setAddress(w, "from", fuzzPeer)
		}
		msg, err := FromWire(w)
		if err != nil {
			return
		}
		n := twoMemberNode()
		n.Step(2000, msg)
		n.Tick(3000)
		if err := n.State().Gossip.CheckInvariants(); err != nil {
			t.Fatalf("gossip invariants broken after %T: %v", msg, err)
		}
	})
}
