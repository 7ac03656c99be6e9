package floating

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// Drill 3: a floating address under auto-down (both sides of a partition
// become Primary) without AllowDualClaim stops `otopcua host` at start,
// non-zero, with a message that names the keys; with AllowDualClaim the
// same node starts and says what it accepted.
func TestFloatingAutoDownRefused(t *testing.T) {
	t.Parallel()
	n := netem.NewNet(t, "a")
	h := n.Host("a")
	config := func(allow bool) map[string]any {
		cfg := procs.BaseConfig("a", procs.Ports{Cluster: 4053, OpcUa: opcPort, HTTP: httpPort})
		c := cfg["Cluster"].(map[string]any)
		c["Hostname"], c["PublicHostname"] = h.Addr, h.Addr
		c["SeedNodes"] = []string{h.Addr + ":4053"}
		c["SplitBrainResolverStrategy"] = "auto-down"
		cfg["Node"].(map[string]any)["ClusterId"] = clusterID
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(t.TempDir(), "config.db")}
		cfg["Redundancy"] = map[string]any{"FloatingAddress": map[string]any{
			"Address": floatAddress, "Interface": "eth0", "Provider": "linux", "AllowDualClaim": allow}}
		return cfg
	}

	refused := procs.StartWith(t, "refused", config(false), procs.Options{Wrap: h.Wrap(), Client: h.HTTPClient()})
	code := refused.WaitExit(60 * time.Second)
	log := refused.Log()
	if code == 0 {
		t.Fatalf("otopcua host under auto-down with a floating address exited 0, want non-zero\n%s", log)
	}
	for _, want := range []string{"Cluster:SplitBrainResolverStrategy", "auto-down", "Redundancy:FloatingAddress:AllowDualClaim", floatAddress} {
		if !strings.Contains(log, want) {
			t.Fatalf("the refusal (exit %d) does not name %q:\n%s", code, want, log)
		}
	}
	if out, err := h.Output("ip", "addr", "show", "dev", "lo"); err != nil || strings.Contains(string(out), floatIP) {
		t.Fatalf("after the refusal lo shows %s (err %v):\n%s", floatIP, err, out)
	}
	t.Logf("refused at start: exit %d", code)

	accepted := procs.StartWith(t, "accepted", config(true), procs.Options{Wrap: h.Wrap(), Client: h.HTTPClient()})
	accepted.WaitReady(90 * time.Second)
	if !strings.Contains(accepted.Log(), "AllowDualClaim is true under Cluster:SplitBrainResolverStrategy auto-down") {
		t.Fatalf("the node accepting the dual claim does not warn about it:\n%s", accepted.Log())
	}
}
