package redundancy_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// pairConfigs returns the appsettings of a pair on loopback: both admin and
// driver, both seeds (a first), one shared SQLite Config DB.
func pairConfigs(t *testing.T) (map[string]any, map[string]any) {
	pa, pb := procs.NewPorts(t), procs.NewPorts(t)
	db := "file:" + filepath.Join(t.TempDir(), "config.db")
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", pa.Cluster), fmt.Sprintf("127.0.0.1:%d", pb.Cluster)}
	mk := func(name string, p procs.Ports, peer string) map[string]any {
		cfg := procs.BaseConfig(name, p)
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + peer + ":otopcua"}
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": db}
		return cfg
	}
	return mk("node-a", pa, "node-b"), mk("node-b", pb, "node-a")
}

// TestPairServiceLevelAndCrash: two nodes settle at 250 (the oldest) and
// 240 within a few seconds; after a SIGKILL of the 250 node the survivor
// reads 250.
func TestPairServiceLevelAndCrash(t *testing.T) {
	cfgA, cfgB := pairConfigs(t)
	a := procs.Start(t, "node-a", cfgA)
	a.WaitReady(30 * time.Second)
	b := procs.Start(t, "node-b", cfgB)
	b.WaitReady(30 * time.Second)
	started := time.Now()

	levels := func() (byte, byte, error) {
		la, err := procs.ReadServiceLevel(a.Endpoint())
		if err != nil {
			return 0, 0, fmt.Errorf("node-a: %w", err)
		}
		lb, err := procs.ReadServiceLevel(b.Endpoint())
		if err != nil {
			return 0, 0, fmt.Errorf("node-b: %w", err)
		}
		return la, lb, nil
	}
	var primary, secondary *procs.Node
	procs.CheckFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		la, lb, err := levels()
		if err != nil {
			return err
		}
		switch {
		case la == 250 && lb == 240:
			primary, secondary = a, b
		case la == 240 && lb == 250:
			primary, secondary = b, a
		default:
			return fmt.Errorf("ServiceLevel node-a=%d node-b=%d, want 250 and 240", la, lb)
		}
		return nil
	})
	t.Logf("250/240 reached %v after both were ready: %s is the Primary", time.Since(started).Round(time.Millisecond), primary.Name)
	if primary != a {
		t.Fatalf("the Primary is %s, want node-a (the oldest)", primary.Name)
	}
	// The pair stays there: nothing flaps through a few HealthTicks.
	procs.Holds(t, 6*time.Second, 500*time.Millisecond, func() error {
		la, lb, err := levels()
		if err != nil {
			return err
		}
		if la != 250 || lb != 240 {
			return fmt.Errorf("ServiceLevel moved: node-a=%d node-b=%d", la, lb)
		}
		return nil
	})

	primary.Signal(syscall.SIGKILL)
	killed := time.Now()
	primary.WaitExit(10 * time.Second)
	procs.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		l, err := procs.ReadServiceLevel(secondary.Endpoint())
		if err != nil {
			return err
		}
		if l != 250 {
			return fmt.Errorf("survivor %s ServiceLevel %d, want 250", secondary.Name, l)
		}
		return nil
	})
	took := time.Since(killed)
	t.Logf("SIGKILL of %s → survivor %s reads ServiceLevel 250 after %v", primary.Name, secondary.Name, took.Round(time.Millisecond))
	if !strings.Contains(secondary.Log(), `"redundancy Primary changed"`) {
		t.Fatalf("the survivor did not log the Primary change:\n%s", secondary.Log())
	}
	noRace(t, a, b)
}

// noRace fails the test when a node built with -race reported a data race.
func noRace(t *testing.T, nodes ...*procs.Node) {
	t.Helper()
	for _, n := range nodes {
		if strings.Contains(n.Log(), "WARNING: DATA RACE") {
			t.Fatalf("%s reported a data race:\n%s", n.Name, n.Log())
		}
	}
}

// TestPairGracefulLeave: SIGTERM on the Primary leaves the cluster (its
// singleton handed over during the leave); the survivor reads 250 and the
// leaving node exits 0.
func TestPairGracefulLeave(t *testing.T) {
	cfgA, cfgB := pairConfigs(t)
	a := procs.Start(t, "node-a", cfgA)
	a.WaitReady(30 * time.Second)
	b := procs.Start(t, "node-b", cfgB)
	b.WaitReady(30 * time.Second)
	procs.CheckFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		la, err := procs.ReadServiceLevel(a.Endpoint())
		if err != nil {
			return err
		}
		lb, err := procs.ReadServiceLevel(b.Endpoint())
		if err != nil {
			return err
		}
		if la != 250 || lb != 240 {
			return fmt.Errorf("ServiceLevel node-a=%d node-b=%d, want 250 and 240", la, lb)
		}
		return nil
	})
	a.Signal(syscall.SIGTERM)
	left := time.Now()
	procs.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		l, err := procs.ReadServiceLevel(b.Endpoint())
		if err != nil {
			return err
		}
		if l != 250 {
			return fmt.Errorf("survivor ServiceLevel %d, want 250", l)
		}
		return nil
	})
	t.Logf("SIGTERM of node-a → node-b reads 250 after %v", time.Since(left).Round(time.Millisecond))
	if code := a.WaitExit(20 * time.Second); code != 0 {
		t.Fatalf("node-a exited %d after SIGTERM, want 0\n%s", code, a.Log())
	}
	if !strings.Contains(a.Log(), "redundancy state singleton stopped") {
		t.Fatalf("node-a did not stop its singleton instance:\n%s", a.Log())
	}
	noRace(t, a, b)
}
