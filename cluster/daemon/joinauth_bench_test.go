package daemon

import (
	"testing"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/wire"
)

// BenchmarkAdmitHeartbeat is the per-message cost Cluster:Secret adds on
// the heartbeat path (a member lookup in the gossip), against no secret.
func BenchmarkAdmitHeartbeat(b *testing.B) {
	self := m.UniqueAddress{Host: "10.0.0.1", Port: 4053, UID: 7}
	for _, tc := range []struct{ name, secret string }{{"no-secret", ""}, {"secret", secretA}} {
		b.Run(tc.name, func(b *testing.B) {
			n := node.New(node.DefaultConfig(self, []m.Address{self.Address()}))
			n.Start(0)
			a := &daemonActor{d: &Daemon{self: self}, n: n, auth: newJoinAuth(tc.secret)}
			if !n.State().Gossip.HasMember(self) {
				b.Fatal("the node did not join itself")
			}
			hb := &wire.Heartbeat{From: &wire.UniqueAddress{Host: self.Host, Port: 4053, Uid: 7}, To: &wire.UniqueAddress{Host: self.Host, Port: 4053, Uid: 7}}
			h := node.Header{From: self, To: self}
			for b.Loop() {
				if !a.admit(hb, h) {
					b.Fatal("a member's heartbeat was refused")
				}
			}
		})
	}
}

// BenchmarkProveVerify is the cost of one join handshake proof, both ends.
func BenchmarkProveVerify(b *testing.B) {
	key := []byte(secretA)
	from := &wire.UniqueAddress{Host: "10.0.0.1", Port: 4053, Uid: 7}
	to := &wire.UniqueAddress{Host: "10.0.0.2", Port: 4053, Uid: 8}
	for b.Loop() {
		j := &wire.Join{From: from, To: to, Roles: []string{"admin", "driver"}, ClusterId: "line1"}
		wire.Prove(key, j)
		if wire.Verify(key, j) != nil {
			b.Fatal("proof refused")
		}
	}
}
