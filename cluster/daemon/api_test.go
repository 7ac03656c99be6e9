package daemon

import (
	"encoding/json"
	"testing"

	m "github.com/otopcua/otopcua/cluster/membership"
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
