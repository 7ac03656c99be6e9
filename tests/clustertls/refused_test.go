package clustertls_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/tests/procs"
)

// seedNodeTimeout and selfFormAfter are the defaults the nodes run with
// (seed-node-timeout 5 s, Cluster:SelfFormAfter 10 s); the refused node is
// watched for longer than both together.
const (
	seedNodeTimeout = 5 * time.Second
	selfFormAfter   = 10 * time.Second
)

// claimsPrimary reports nil when n is Up and, in its own view, the oldest
// Up driver of its ClusterId alone with want members: the node that
// publishes the Primary ServiceLevel.
func claimsPrimary(n *procs.Node, members int) error {
	v, err := n.Members()
	if err != nil {
		return err
	}
	self, ok := v.SelfMember()
	if v.SelfStatus != procs.StatusUp || !ok {
		return fmt.Errorf("%s is not Up: %s", n.Name, v)
	}
	oldest, ok := v.OldestUp("driver", self.ClusterID)
	if !ok || oldest.Address != self.Address || oldest.UID != self.UID {
		return fmt.Errorf("%s is not the oldest driver: %s", n.Name, v)
	}
	if len(v.Members) != members {
		return fmt.Errorf("%s sees %d members, want %d: %s", n.Name, len(v.Members), members, v)
	}
	return nil
}

// pairWithoutA forms the pair a, b (startPair), then stops a gracefully
// and waits until b is the Primary alone.
func pairWithoutA(t *testing.T, ca *testcert.CA, pa, pb procs.Ports) (a, b *procs.Node, seeds []string) {
	t.Helper()
	a, b, seeds = startPair(t, ca, pa, pb)
	a.Signal(syscall.SIGTERM)
	a.WaitExit(30 * time.Second)
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error { return claimsPrimary(b, 1) })
	return a, b, seeds
}

// staysOut waits until the just started refused node answers HTTP, then
// checks until seed-node-timeout + the self-form window (+10 s) have
// passed since then that it has no membership at all while b stays the
// Primary alone. It returns when the refused node answered first.
func staysOut(t *testing.T, refused, b *procs.Node) (started time.Time) {
	t.Helper()
	started = time.Now()
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		_, err := refused.Members()
		return err
	})
	watch := seedNodeTimeout + selfFormAfter + 10*time.Second - time.Since(started)
	procs.Holds(t, watch, 200*time.Millisecond, func() error {
		v, err := refused.Members()
		if err != nil {
			return err
		}
		if v.SelfStatus != procs.StatusNone || len(v.Members) != 0 {
			return fmt.Errorf("%s, refused by %s, has a cluster of its own: %s\n%s", refused.Name, b.Name, v, refused.Log())
		}
		return claimsPrimary(b, 1)
	})
	if time.Since(started) < seedNodeTimeout+selfFormAfter {
		t.Fatalf("watched %s for only %v", refused.Name, time.Since(started))
	}
	return started
}

// TestRefusedFirstSeedNeverFormsItsOwnCluster: the first seed a of a
// running pair is stopped and restarted with another Cluster:Secret. b
// refuses it; a hears no InitJoinAck, yet long past seed-node-timeout and
// the self-form window it is not Up — it does not form a second cluster of
// the same ClusterId with a second Primary — and it logs why; b stays the
// Primary alone. Restarted with the right secret, a joins as the youngest.
func TestRefusedFirstSeedNeverFormsItsOwnCluster(t *testing.T) {
	ca := testcert.NewCA(t, "site-a cluster ca")
	ports := procs.NewPortSet(t, 2)
	pa, pb := ports[0], ports[1]
	a, b, seeds := pairWithoutA(t, ca, pa, pb)

	// a comes back with the wrong secret.
	a.Env = []string{secretEnv + otherSecret}
	a.Restart()
	started := staysOut(t, a, b)
	want := daemon.LogNotFormingAlone + ": " + clusterAddr(pb) + " refused this node (wrong Cluster:Secret)"
	if n := strings.Count(a.Log(), want); n != 1 {
		t.Fatalf("a logged %q %d times in %v, want once:\n%s", want, n, time.Since(started).Round(time.Second), a.Log())
	}
	if err := logHas(a, daemon.LogJoinRefusedBy+" "+clusterAddr(pb)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(a.Log(), daemon.LogJoined) {
		t.Fatalf("a says it joined or formed a cluster:\n%s", a.Log())
	}

	// Positive control: the right secret brings a in, as the youngest.
	a.Signal(syscall.SIGKILL)
	a.WaitExit(10 * time.Second)
	a.Env = []string{secretEnv + secret}
	a.Restart()
	procs.CheckFor(t, 40*time.Second, 100*time.Millisecond, func() error {
		if err := upMembers(a, seeds...); err != nil {
			return err
		}
		if err := upMembers(b, seeds...); err != nil {
			return err
		}
		return claimsPrimary(b, 2)
	})
}

// TestFirstSeedWithAnotherCANeverFormsItsOwnCluster: the first seed a of a
// running TLS pair is restarted with a certificate of another CA. Its own
// handshake refuses b's certificate, which the daemon takes as a refusal:
// long past seed-node-timeout and the self-form window a is not Up (no
// second cluster, no second Primary) while b stays the Primary alone.
// Restarted with a certificate of the pair's CA, a joins as the youngest.
func TestFirstSeedWithAnotherCANeverFormsItsOwnCluster(t *testing.T) {
	ca, other := testcert.NewCA(t, "site-a cluster ca"), testcert.NewCA(t, "another site's ca")
	ports := procs.NewPortSet(t, 2)
	pa, pb := ports[0], ports[1]
	_, b, seeds := pairWithoutA(t, ca, pa, pb)

	stranger := procs.Start(t, "a-other-ca", nodeConfig(t, "a", pa, seeds, other), secretEnv+secret)
	staysOut(t, stranger, b)
	if want := daemon.LogNotFormingAlone + ": " + clusterAddr(pb) + " refused this node"; !strings.Contains(stranger.Log(), want) {
		t.Fatalf("a's log lacks %q:\n%s", want, stranger.Log())
	}
	if strings.Contains(stranger.Log(), daemon.LogJoined) {
		t.Fatalf("a says it joined or formed a cluster:\n%s", stranger.Log())
	}

	stranger.Signal(syscall.SIGKILL)
	stranger.WaitExit(10 * time.Second)
	back := procs.Start(t, "a", nodeConfig(t, "a", pa, seeds, ca), secretEnv+secret)
	procs.CheckFor(t, 40*time.Second, 100*time.Millisecond, func() error {
		if err := upMembers(back, seeds...); err != nil {
			return err
		}
		return claimsPrimary(b, 2)
	})
}
