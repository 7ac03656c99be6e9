package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// TestInstalledClusterConfigFromAkkaConf starts a node whose downing
// settings come from an akka.conf and reads back, from the running node,
// what it installed: GET /api/cluster/config and `config effective --url`.
func TestInstalledClusterConfigFromAkkaConf(t *testing.T) {
	dir := t.TempDir()
	akka := filepath.Join(dir, "akka.conf")
	if err := os.WriteFile(akka, []byte(`
akka.cluster {
  downing-provider-class = "Akka.Cluster.SBR.SplitBrainResolverProvider, Akka.Cluster"
  split-brain-resolver {
    active-strategy = keep-majority
    stable-after = 7s
  }
  failure-detector.threshold = 12.0
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := procs.BaseConfig("node-a", procs.NewPorts(t))
	cfg["Cluster"].(map[string]any)["AkkaConfigPath"] = akka
	n := procs.Start(t, "node-a", cfg)
	n.WaitReady(30 * time.Second)

	body, err := n.Get("/api/cluster/config")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Akka.Cluster.SBR.SplitBrainResolverProvider", "active-strategy = keep-majority", "stable-after = 7s", "threshold = 12.0", "down-on-connection-refused = off"} {
		if !strings.Contains(body, want) {
			t.Fatalf("/api/cluster/config lacks %q:\n%s", want, body)
		}
	}
	out, err := exec.Command(procs.Binary(t), "config", "effective", "--url", n.HTTP()).Output()
	if err != nil {
		t.Fatalf("config effective --url: %v", err)
	}
	if string(out) != body {
		t.Fatalf("config effective --url printed\n%s\nwant what the node serves\n%s", out, body)
	}
}

// TestJSONStrategyWinsOverAkkaConf: a strategy set in appsettings.json is
// what the node installs, whatever akka.conf says.
func TestJSONStrategyWinsOverAkkaConf(t *testing.T) {
	dir := t.TempDir()
	akka := filepath.Join(dir, "akka.conf")
	if err := os.WriteFile(akka, []byte(`akka.cluster.downing-provider-class = "Akka.Cluster.SBR.SplitBrainResolverProvider"
akka.cluster.split-brain-resolver.active-strategy = keep-oldest
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := procs.BaseConfig("node-a", procs.NewPorts(t))
	cl := cfg["Cluster"].(map[string]any)
	cl["AkkaConfigPath"] = akka
	cl["SplitBrainResolverStrategy"] = "auto-down"
	n := procs.Start(t, "node-a", cfg)
	n.WaitReady(30 * time.Second)
	body, err := n.Get("/api/cluster/config")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `"Akka.Cluster.AutoDowning"`) || strings.Contains(body, "active-strategy = keep-oldest") {
		t.Fatalf("installed config is not auto-down:\n%s", body)
	}
}
