package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/wire"
)

const (
	secretA = "site-a-cluster-secret-0001"
	secretB = "site-b-cluster-secret-0002"
)

func withSecret(s string) func(*Options) { return func(o *Options) { o.Secret = s } }

// TestSecretRefusesAnotherSecretAndNone: a pair sharing a Cluster:Secret
// forms; a third node with another secret, then one with none, never
// becomes a member, and both sides log the refusal. The same node with
// the right secret then joins (positive control).
func TestSecretRefusesAnotherSecretAndNone(t *testing.T) {
	c := newMemCluster(t)
	a := c.startWith("a", []string{"a", "b"}, nil, withSecret(secretA))
	b := c.startWith("b", []string{"a", "b"}, nil, withSecret(secretA))
	c.until(10*time.Second, "a and b Up on both", func() bool { return allUp(a, "a", "b")() && allUp(b, "a", "b")() })

	for _, tc := range []struct {
		secret, receiverSays, joinerSays string
	}{
		{secretB, LogRefusedJoin + " x:2552: wrong Cluster:Secret", LogJoinRefusedBy + " a:2552: its Cluster:Secret differs"},
		{"", LogRefusedJoin + " x:2552: no Cluster:Secret proof", LogJoinRefusedBy + " a:2552: it has a Cluster:Secret and this node has none"},
	} {
		x := c.startWith("x", []string{"a", "b", "x"}, nil, withSecret(tc.secret))
		defer func() {
			if t.Failed() {
				t.Logf("a:\n%s\nx:\n%s", a.log.String(), x.log.String())
			}
		}()
		c.until(5*time.Second, "the refusal logged on both sides", func() bool {
			return strings.Contains(a.log.String(), tc.receiverSays) && strings.Contains(x.log.String(), tc.joinerSays)
		})
		c.advance(15 * time.Second)
		for _, n := range []*memNode{a, b, x} {
			if st := n.d.Snapshot(); st.Gossip.HasMember(x.d.self) {
				t.Fatalf("secret %q: x is a member in %s's view:\n%s", tc.secret, n.name, c.views())
			}
		}
		if !allUp(a, "a", "b")() {
			t.Fatalf("the pair changed:\n%s", c.views())
		}
		if a.d.Stats().RefusedJoin == 0 {
			t.Fatal("RefusedJoin not counted")
		}
		if !strings.Contains(x.log.String(), LogSeedsSilent) {
			t.Fatalf("x never said that no seed answers:\n%s", x.log.String())
		}
		// once a minute per address, not once per InitJoin round
		if n := strings.Count(a.log.String(), tc.receiverSays); n != 1 {
			t.Fatalf("the refusal logged %d times in 15 s, want once", n)
		}
		a.log.b.Reset()
	}

	x := c.startWith("x", []string{"a", "b", "x"}, nil, withSecret(secretA))
	c.until(10*time.Second, "x joins with the right secret", func() bool { return allUp(a, "a", "b", "x")() && allUp(x, "a", "b", "x")() })
	if strings.Contains(a.log.String(), LogRefusedJoin) {
		t.Fatalf("the right secret was refused:\n%s", a.log.String())
	}
}

// TestSecretDropsGossipFromNonMembers: with a Cluster:Secret a forged
// heartbeat or gossip from a node that never joined is dropped; a
// member's heartbeats are stepped as before.
func TestSecretDropsGossipFromNonMembers(t *testing.T) {
	c := newMemCluster(t)
	a := c.startWith("a", []string{"a"}, nil, withSecret(secretA))
	c.until(5*time.Second, "a Up", allUp(a, "a"))
	before := a.d.Stats()
	self := a.d.self
	to := &wire.UniqueAddress{Host: self.Host, Port: uint32(self.Port), Uid: self.UID}
	stranger := &wire.UniqueAddress{Host: "evil", Port: 2552, Uid: 99}
	a.d.root.Send(a.d.pid, &wire.Heartbeat{From: stranger, To: to, Seq: 1})
	a.d.root.Send(a.d.pid, &wire.GossipStatus{From: stranger, To: to, Version: &wire.VectorClock{}})
	c.until(time.Second, "both counted as unknown senders", func() bool { return a.d.Stats().UnknownSender == before.UnknownSender+2 })
	if !allUp(a, "a")() {
		t.Fatalf("membership changed:\n%s", c.views())
	}
}
