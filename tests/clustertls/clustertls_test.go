package clustertls_test

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/clustertls"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/tests/procs"
)

const (
	secret      = "site-a-pair-secret-0001"
	otherSecret = "site-b-pair-secret-0002"
	secretEnv   = "OTOPCUA_CLUSTER__SECRET="
)

func clusterAddr(p procs.Ports) string { return fmt.Sprintf("127.0.0.1:%d", p.Cluster) }

// nodeConfig is a loopback node listing seeds, with Cluster:Tls from ca
// when ca is not nil. The secret is given through the environment.
func nodeConfig(t *testing.T, name string, p procs.Ports, seeds []string, ca *testcert.CA) map[string]any {
	c := procs.BaseConfig(name, p)
	cl := c["Cluster"].(map[string]any)
	cl["SeedNodes"] = seeds
	if ca != nil {
		cert, key := ca.Node(t, name)
		cl["Tls"] = map[string]any{"CaFile": ca.File, "CertFile": cert, "KeyFile": key}
	}
	return c
}

// upMembers reports nil when n sees exactly addrs, all Up, converged.
func upMembers(n *procs.Node, addrs ...string) error {
	v, err := n.Members()
	if err != nil {
		return err
	}
	got := v.UpAddresses()
	slices.Sort(got)
	want := slices.Clone(addrs)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(v.Members) != len(addrs) || !v.Converged {
		return fmt.Errorf("%s sees %s, want %v Up and converged", n.Name, v, want)
	}
	return nil
}

func logHas(n *procs.Node, s string) error {
	if !strings.Contains(n.Log(), s) {
		return fmt.Errorf("%s's log lacks %q", n.Name, s)
	}
	return nil
}

// notMember holds for a while that none of the nodes sees addr.
func notMember(t *testing.T, addr string, nodes ...*procs.Node) {
	t.Helper()
	procs.Holds(t, 5*time.Second, 200*time.Millisecond, func() error {
		for _, n := range nodes {
			v, err := n.Members()
			if err != nil {
				return err
			}
			if _, ok := v.Member(addr); ok {
				return fmt.Errorf("%s is a member in %s's view: %s", addr, n.Name, v)
			}
		}
		return nil
	})
}

// startPair starts a and b on ports pa, pb with certificates of ca and the
// shared secret, and waits until they form one cluster.
func startPair(t *testing.T, ca *testcert.CA, pa, pb procs.Ports) (a, b *procs.Node, seeds []string) {
	t.Helper()
	seeds = []string{clusterAddr(pa), clusterAddr(pb)}
	a = procs.Start(t, "a", nodeConfig(t, "a", pa, seeds, ca), secretEnv+secret)
	b = procs.Start(t, "b", nodeConfig(t, "b", pb, seeds, ca), secretEnv+secret)
	procs.CheckFor(t, 40*time.Second, 100*time.Millisecond, func() error {
		if err := upMembers(a, seeds...); err != nil {
			return err
		}
		return upMembers(b, seeds...)
	})
	return a, b, seeds
}

// TestAuthenticatedCluster runs the whole story on one pair, since each
// node start costs seconds.
func TestAuthenticatedCluster(t *testing.T) {
	ca := testcert.NewCA(t, "site-a cluster ca")
	ports := procs.NewPortSet(t, 4)
	pa, pb, px, py := ports[0], ports[1], ports[2], ports[3]

	// 1. Two nodes with TLS and the same secret form a cluster.
	a, b, seeds := startPair(t, ca, pa, pb)

	// 2. A third node with a valid certificate but another secret is
	// refused; both sides say so.
	xSeeds := append(slices.Clone(seeds), clusterAddr(px))
	x := procs.Start(t, "x", nodeConfig(t, "x", px, xSeeds, ca), secretEnv+otherSecret)
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if err := logHas(a, daemon.LogRefusedJoin+" "+clusterAddr(px)+": wrong Cluster:Secret"); err != nil {
			return err
		}
		return logHas(x, daemon.LogJoinRefusedBy+" "+clusterAddr(pa)+": its Cluster:Secret differs")
	})
	// x opens its HTTP port last, after its data plane: its view is read
	// from there (under -race on a busy machine the refusal comes first).
	x.WaitReady(30 * time.Second)
	notMember(t, clusterAddr(px), a, b, x)

	// 3. A node without Cluster:Tls (no client certificate) is refused by
	// the TLS handshake, logged on the mesh's side, and says on its own
	// side that no seed answers.
	y := procs.Start(t, "y", nodeConfig(t, "y", py, append(slices.Clone(seeds), clusterAddr(py)), nil), secretEnv+secret)
	procs.CheckFor(t, 40*time.Second, 100*time.Millisecond, func() error {
		if err := logHas(a, "cluster transport: "+clustertls.LogRefused+" from 127.0.0.1:"); err != nil {
			return err
		}
		return logHas(y, daemon.LogSeedsSilent)
	})
	notMember(t, clusterAddr(py), a, b)
	y.Signal(syscall.SIGKILL)
	y.WaitExit(10 * time.Second)

	// 4. Positive control: x restarted with the right secret joins.
	x.Signal(syscall.SIGKILL)
	x.WaitExit(10 * time.Second)
	x.Env = []string{secretEnv + secret}
	x.Restart()
	all := append(slices.Clone(seeds), clusterAddr(px))
	procs.CheckFor(t, 40*time.Second, 100*time.Millisecond, func() error {
		for _, n := range []*procs.Node{a, b, x} {
			if err := upMembers(n, all...); err != nil {
				return err
			}
		}
		return nil
	})

	// 5. SIGKILL of the oldest with TLS on: the survivors down it and
	// elect the next oldest.
	va, err := a.Members()
	if err != nil {
		t.Fatal(err)
	}
	if va.Oldest["driver"] != clusterAddr(pa) {
		t.Fatalf("a should be the oldest: %s", va)
	}
	a.Signal(syscall.SIGKILL)
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		for _, n := range []*procs.Node{b, x} {
			if err := upMembers(n, clusterAddr(pb), clusterAddr(px)); err != nil {
				return err
			}
			v, err := n.Members()
			if err != nil {
				return err
			}
			if v.Oldest["driver"] != clusterAddr(pb) {
				return fmt.Errorf("%s: oldest %q, want b", n.Name, v.Oldest["driver"])
			}
		}
		return nil
	})
	for _, n := range []*procs.Node{b, x} {
		if !n.Alive() {
			t.Fatalf("%s exited", n.Name)
		}
	}
}
