package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/node"
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

// TestRefusedFirstSeedNeverFormsAlone: the first seed a of a running pair
// is restarted with another Cluster:Secret. b refuses it; a waits far past
// seed-node-timeout and the self-form window without forming a cluster of
// its own (a second cluster of site-a), says why once a minute, and b
// stays the only member. Restarted with the right secret, a joins as the
// youngest.
func TestRefusedFirstSeedNeverFormsAlone(t *testing.T) {
	c := newMemCluster(t)
	selfForm := func(cfg *node.Config) { cfg.SelfFormAfter = 3000 }
	a := c.startWith("a", []string{"a", "b"}, selfForm, withSecret(secretA))
	b := c.startWith("b", []string{"a", "b"}, selfForm, withSecret(secretA))
	c.until(10*time.Second, "a and b Up on both", func() bool { return allUp(a, "a", "b")() && allUp(b, "a", "b")() })
	c.kill("a")
	c.until(5*time.Second, "a removed on b", allUp(b, "b"))

	a = c.startWith("a", []string{"a", "b"}, selfForm, withSecret(secretB))
	want := LogNotFormingAlone + ": b:2552 refused this node (wrong Cluster:Secret)"
	c.until(10*time.Second, "a says it does not form a cluster", func() bool { return strings.Contains(a.log.String(), want) })
	timeout := time.Duration(a.d.opts.Node.SeedNodeTimeout) * time.Millisecond
	c.advance(timeout + 3*time.Second + 30*time.Second)
	if ph := a.d.Info().Phase; ph != node.SeedJoining {
		t.Fatalf("a is %v, want still SeedJoining:\n%s\n%s", ph, c.views(), a.log.String())
	}
	if a.d.Snapshot().Gossip.HasMember(a.d.Self()) || strings.Contains(a.log.String(), LogJoined) {
		t.Fatalf("a formed a cluster of its own:\n%s", a.log.String())
	}
	if !allUp(b, "b")() {
		t.Fatalf("b's cluster changed:\n%s", c.views())
	}
	if n := strings.Count(a.log.String(), want); n != 1 {
		t.Fatalf("the line logged %d times in about 40 s, want once", n)
	}
	c.advance(30 * time.Second)
	if n := strings.Count(a.log.String(), want); n != 2 {
		t.Fatalf("the line logged %d times after a minute more, want twice", n)
	}

	a = c.startWith("a", []string{"a", "b"}, selfForm, withSecret(secretA))
	c.until(10*time.Second, "a joins with the right secret", func() bool { return allUp(a, "a", "b")() && allUp(b, "a", "b")() })
	if !oldestIs(a, "b")() {
		t.Fatalf("a must join as the youngest:\n%s", c.views())
	}
}
