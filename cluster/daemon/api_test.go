package daemon

import (
	"encoding/json"
	"testing"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
)

// TestMembersJSONShape pins the document other tools parse.
func TestMembersJSONShape(t *testing.T) {
	self := m.UniqueAddress{Host: "127.0.0.1", Port: 4053, UID: 1234}
	other := m.UniqueAddress{Host: "127.0.0.1", Port: 4054, UID: 18446744073709551615}
	g := m.NewGossip(
		m.NewMember(self, []string{"driver", "admin"}, "site-a").WithUp(1),
		m.NewMember(other, []string{"driver"}, "site-a"),
	)
	g = g.WithReachability(g.Reachability.Unreachable(self, other)).WithSeen(self)
	b, err := json.Marshal(Members(m.State{Gossip: g, Self: self}, false))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"self":{"address":"127.0.0.1:4053","uid":"1234"},"selfStatus":"Up","leader":"127.0.0.1:4053","converged":false,` +
		`"members":[{"address":"127.0.0.1:4053","uid":"1234","status":"Up","roles":["admin","driver"],"clusterId":"site-a","upNumber":1,"reachable":true,"isOldest":["admin","driver"]},` +
		`{"address":"127.0.0.1:4054","uid":"18446744073709551615","status":"Joining","roles":["driver"],"clusterId":"site-a","upNumber":0,"reachable":false,"isOldest":[]}],` +
		`"oldest":{"admin":"127.0.0.1:4053","driver":"127.0.0.1:4053"},"roleLeader":{"admin":"127.0.0.1:4053","driver":"127.0.0.1:4053"}}`
	if string(b) != want {
		t.Fatalf("members JSON:\n got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(Members(m.State{Self: self}, false))
	want = `{"self":{"address":"127.0.0.1:4053","uid":"1234"},"selfStatus":"None","leader":"","converged":false,"members":[],"oldest":{},"roleLeader":{}}`
	if string(b) != want {
		t.Fatalf("before joining:\n got %s\nwant %s", b, want)
	}
}

// TestCaughtUp: only a merged gossip, or a gossip status this node already
// has, counts as having heard a peer (the woken-process fences lift on it);
// a heartbeat or a status newer than ours does not.
func TestCaughtUp(t *testing.T) {
	a := m.UniqueAddress{Host: "10.0.0.1", Port: 4053, UID: 1}
	ours := m.VectorClock{}.Increment(m.VClockNode(a))
	newer := ours.Increment(m.VClockNode(a))
	for _, tc := range []struct {
		name string
		msg  node.Message
		want bool
	}{
		{"heartbeat", node.Heartbeat{}, false},
		{"heartbeat answer", node.HeartbeatRsp{}, false},
		{"full gossip", node.GossipEnvelope{}, true},
		{"status of our version", node.GossipStatus{Version: ours}, true},
		{"status of an older version", node.GossipStatus{Version: m.VectorClock{}}, true},
		{"status of a newer version", node.GossipStatus{Version: newer}, false},
	} {
		if got := caughtUp(tc.msg, ours); got != tc.want {
			t.Errorf("%s: caughtUp %v, want %v", tc.name, got, tc.want)
		}
	}
}
