// Package clusterproc_test runs real `otopcua host` processes on loopback
// and checks the cluster runtime end to end: a pair formed from two seeds,
// SIGKILL of the oldest with the crash fast path, SIGTERM's graceful
// leave, a paused node downed and exiting for its supervisor, and a used
// cluster port. The full drill suite lives in tests/drills.
package clusterproc_test

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/host"
	"github.com/otopcua/otopcua/tests/procs"
)

func members(n *procs.Node) (daemon.MembersView, error) {
	var v daemon.MembersView
	body, err := n.Get("/api/cluster/members")
	if err != nil {
		return v, err
	}
	return v, json.Unmarshal([]byte(body), &v)
}

func addr(p procs.Ports) string { return fmt.Sprintf("127.0.0.1:%d", p.Cluster) }

// upTogether reports nil when n's view holds exactly the given addresses,
// all Up, converged.
func upTogether(n *procs.Node, addrs ...string) error {
	v, err := members(n)
	if err != nil {
		return err
	}
	if len(v.Members) != len(addrs) || !v.Converged {
		return fmt.Errorf("%s: %d members, converged=%v: %+v", n.Name, len(v.Members), v.Converged, v.Members)
	}
	for i, a := range addrs {
		if v.Members[i].Address != a || v.Members[i].Status != "Up" {
			return fmt.Errorf("%s: member %d is %s %s, want %s Up", n.Name, i, v.Members[i].Address, v.Members[i].Status, a)
		}
	}
	return nil
}

type pair struct {
	a, b   *procs.Node
	pa, pb procs.Ports
}

// startPair starts two nodes that both list both as seeds, a first, and
// waits until they form one cluster.
func startPair(t *testing.T, tweak func(cluster map[string]any)) pair {
	t.Helper()
	pa, pb := procs.NewPorts(t), procs.NewPorts(t)
	seeds := []string{addr(pa), addr(pb)}
	cfg := func(name string, p procs.Ports) map[string]any {
		c := procs.BaseConfig(name, p)
		cl := c["Cluster"].(map[string]any)
		cl["SeedNodes"] = seeds
		if tweak != nil {
			tweak(cl)
		}
		return c
	}
	a := procs.Start(t, "a", cfg("a", pa))
	b := procs.Start(t, "b", cfg("b", pb))
	a.WaitReady(30 * time.Second)
	b.WaitReady(30 * time.Second)
	sorted := seeds
	if pb.Cluster < pa.Cluster {
		sorted = []string{seeds[1], seeds[0]}
	}
	procs.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if err := upTogether(a, sorted...); err != nil {
			return err
		}
		return upTogether(b, sorted...)
	})
	return pair{a: a, b: b, pa: pa, pb: pb}
}

// TestPairFormsWithFirstSeedOldest: two nodes started together, both
// listing both seeds, form one cluster; the first seed is the oldest and
// both agree on leader, oldest and role leaders.
func TestPairFormsWithFirstSeedOldest(t *testing.T) {
	p := startPair(t, nil)
	va, err := members(p.a)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := members(p.b)
	if err != nil {
		t.Fatal(err)
	}
	if va.Oldest["driver"] != addr(p.pa) || va.Oldest["admin"] != addr(p.pa) {
		t.Fatalf("the first seed must be the oldest: %+v", va.Oldest)
	}
	if va.Leader != vb.Leader || va.Oldest["driver"] != vb.Oldest["driver"] || va.RoleLeader["driver"] != vb.RoleLeader["driver"] {
		t.Fatalf("views differ:\na: %+v\nb: %+v", va, vb)
	}
	if va.Self.Address != addr(p.pa) || va.SelfStatus != "Up" || va.Self.UID == vb.Self.UID {
		t.Fatalf("self: %+v %s", va.Self, va.SelfStatus)
	}
	for _, mb := range va.Members {
		if !mb.Reachable || mb.ClusterID != "test" || len(mb.Roles) != 2 {
			t.Fatalf("member %+v", mb)
		}
		if (mb.Address == addr(p.pa)) != (len(mb.IsOldest) == 2) {
			t.Fatalf("isOldest of %s = %v", mb.Address, mb.IsOldest)
		}
	}
	for _, want := range []string{daemon.LogJoined, daemon.LogMemberUp} {
		if !strings.Contains(p.b.Log(), want) {
			t.Fatalf("b's log lacks %q", want)
		}
	}
	metrics, err := p.a.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`otopcua_cluster_members{status="Up"} 2`, `otopcua_cluster_is_oldest{role="driver"} 1`, "otopcua_cluster_unreachable 0"} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}
}

// TestSIGKILLOldestFailsOverFast: with the crash fast path (auto-down's
// default), the survivor of a SIGKILLed oldest is the oldest within a
// few seconds (not after the 15 s auto-down window); the killed node,
// restarted, rejoins as the youngest.
func TestSIGKILLOldestFailsOverFast(t *testing.T) {
	p := startPair(t, nil)
	p.a.Signal(syscall.SIGKILL)
	killed := time.Now()
	var oldestAfter time.Duration
	procs.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		v, err := members(p.b)
		if err != nil {
			return err
		}
		if v.Oldest["driver"] != addr(p.pb) {
			return fmt.Errorf("oldest is %q", v.Oldest["driver"])
		}
		oldestAfter = time.Since(killed)
		return nil
	})
	procs.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error { return upTogether(p.b, addr(p.pb)) })
	t.Logf("SIGKILL of the oldest: survivor oldest after %v, killed member removed after %v",
		oldestAfter.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	for _, want := range []string{daemon.LogUnreachable, "cluster crash fast path: downing", daemon.LogDowned, daemon.LogRemoved} {
		if !strings.Contains(p.b.Log(), want) {
			t.Fatalf("survivor's log lacks %q", want)
		}
	}

	p.a.Restart()
	procs.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		v, err := members(p.b)
		if err != nil {
			return err
		}
		if len(v.Members) != 2 || v.Oldest["driver"] != addr(p.pb) {
			return fmt.Errorf("b's view: %+v oldest %v", v.Members, v.Oldest)
		}
		for _, mb := range v.Members {
			if mb.Status != "Up" {
				return fmt.Errorf("%s is %s", mb.Address, mb.Status)
			}
		}
		return nil
	})
}

// TestSIGTERMLeavesGracefully: SIGTERM makes a node leave (Leaving →
// Exiting → Removed on the other) and exit 0.
func TestSIGTERMLeavesGracefully(t *testing.T) {
	p := startPair(t, nil)
	p.b.Signal(syscall.SIGTERM)
	if code := p.b.WaitExit(15 * time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0\n%s", code, p.b.Log())
	}
	procs.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error { return upTogether(p.a, addr(p.pa)) })
	log := p.a.Log()
	leaving := strings.Index(log, `"msg":"`+daemon.LogLeaving+`","member":"`+addr(p.pb))
	removed := strings.Index(log, `"msg":"`+daemon.LogRemoved+`","member":"`+addr(p.pb))
	if leaving < 0 || removed < leaving {
		t.Fatalf("a's log must show b leaving, then removed:\n%s", log)
	}
	if strings.Contains(log, `"msg":"`+daemon.LogDowned) {
		t.Fatalf("a graceful leaver must not be downed:\n%s", log)
	}
}

// TestPausedNodeIsDownedAndExitsForRestart: a node stopped (SIGSTOP) long
// enough is downed and removed by the leader; when it resumes it learns it
// was removed, downs itself and exits with host.ExitRestart for its
// supervisor to restart it.
func TestPausedNodeIsDownedAndExitsForRestart(t *testing.T) {
	p := startPair(t, func(cl map[string]any) {
		cl["AutoDownUnreachableAfter"] = "2s"
		cl["FailureDetector"] = map[string]any{"HeartbeatInterval": "500ms", "AcceptableHeartbeatPause": "1s"}
	})
	p.b.Signal(syscall.SIGSTOP)
	procs.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error { return upTogether(p.a, addr(p.pa)) })
	if !strings.Contains(p.a.Log(), `"msg":"`+daemon.LogDowned+`","member":"`+addr(p.pb)) {
		t.Fatalf("a did not down b:\n%s", p.a.Log())
	}
	p.b.Signal(syscall.SIGCONT)
	if code := p.b.WaitExit(20 * time.Second); code != host.ExitRestart {
		t.Fatalf("exit code of the downed node = %d, want %d\n%s", code, host.ExitRestart, p.b.Log())
	}
	if !strings.Contains(p.b.Log(), `"reason":"downed"`) {
		t.Fatalf("b's log must say it was downed:\n%s", p.b.Log())
	}
	if err := upTogether(p.a, addr(p.pa)); err != nil {
		t.Fatal(err)
	}
}

// TestClusterPortInUse: a used Cluster:Port stops start-up with a message
// naming the key and the port (protoactor itself would panic).
func TestClusterPortInUse(t *testing.T) {
	ports := procs.NewPorts(t)
	l, err := net.Listen("tcp", addr(ports))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := procs.Start(t, "busy", procs.BaseConfig("busy", ports))
	if code := n.WaitExit(15 * time.Second); code != 1 {
		t.Fatalf("exit code = %d, want 1\n%s", code, n.Log())
	}
	log := n.Log()
	if !strings.Contains(log, "Cluster:Port") || !strings.Contains(log, fmt.Sprint(ports.Cluster)) || strings.Contains(log, "panic") {
		t.Fatalf("start-up error must name Cluster:Port %d without a panic:\n%s", ports.Cluster, log)
	}
}
