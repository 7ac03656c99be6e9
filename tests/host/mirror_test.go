package host_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/procs"
)

// TestHotAndMirroredNode: a node with OpcUa:RedundancySupport
// HotAndMirrored starts, advertises HotAndMirrored (5) to clients and
// serves the otopcua_mirror_* series on /metrics.
func TestHotAndMirroredNode(t *testing.T) {
	n, _ := startNode(t, func(cfg map[string]any) {
		o := cfg["OpcUa"].(map[string]any)
		o["RedundancySupport"] = "hotandmirrored"
		o["Mirror"] = map[string]any{"AckTimeout": "20ms", "QueueSize": 50}
	})
	c := connect(t, n.Endpoint())
	if got := read(t, c, id.Server_ServerRedundancy_RedundancySupport)[0].Value.Value(); got != int32(ua.RedundancySupportHotAndMirrored) {
		t.Fatalf("RedundancySupport = %#v, want int32 5 (HotAndMirrored)", got)
	}
	metrics, err := n.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, series := range []string{
		`otopcua_mirror_sessions{role="served"}`, `otopcua_mirror_sessions{role="replica"}`,
		`otopcua_mirror_records_total{direction="out"}`, `otopcua_mirror_records_total{direction="in"}`,
		`otopcua_mirror_bytes_total{direction="out"}`, `otopcua_mirror_bytes_total{direction="in"}`,
		`otopcua_mirror_takeovers_total{result="ok"}`, `otopcua_mirror_takeovers_total{result="refused"}`,
		`otopcua_mirror_takeovers_total{result="not-ready"}`,
	} {
		if !strings.Contains(metrics, series+" ") {
			t.Errorf("/metrics lacks %s:\n%s", series, grep(metrics, "otopcua_mirror"))
		}
	}
	if !strings.Contains(n.Log(), "mirror: peers") {
		t.Errorf("the node did not set its mirror's peers:\n%s", n.Log())
	}
}

// TestHotAndMirroredWithoutAClusterStopsStartUp: a node alone by
// configuration has nobody to mirror to; start-up stops naming the key.
func TestHotAndMirroredWithoutAClusterStopsStartUp(t *testing.T) {
	cfg := procs.BaseConfig("alone", procs.NewPorts(t))
	o := cfg["OpcUa"].(map[string]any)
	delete(o, "PeerApplicationUris")
	o["RedundancySupport"] = "HotAndMirrored"
	n := procs.Start(t, "alone", cfg)
	if code := n.WaitExit(15 * time.Second); code != 2 {
		t.Fatalf("exit code = %d, want 2\n%s", code, n.Log())
	}
	log := n.Log()
	for _, want := range []string{"OpcUa:RedundancySupport", "HotAndMirrored", "without a cluster", "Cluster:SeedNodes"} {
		if !strings.Contains(log, want) {
			t.Fatalf("start-up error does not mention %q:\n%s", want, log)
		}
	}
}

// lastPeers is the peers list of the last "mirror: peers" line of a
// node's log ("" when there is none).
func lastPeers(log string) string {
	last := ""
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"msg":"mirror: peers"`) {
			if _, after, ok := strings.Cut(l, `"peers":`); ok {
				last, _, _ = strings.Cut(after, ",\"")
				last = strings.TrimSuffix(last, "}")
			}
		}
	}
	return last
}

// TestHotAndMirroredPairSetsPeers: on a real pair each node's mirror is
// given the other node's incarnation as its peer once both are Up, the
// two become each other's hot standby (otopcua_mirror_ready and
// otopcua_mirror_peer_ready 1), and a node loses its peer when the other
// process is killed.
func TestHotAndMirroredPairSetsPeers(t *testing.T) {
	ports := map[string]procs.Ports{"a": procs.NewPorts(t), "b": procs.NewPorts(t)}
	addr := func(n string) string { return fmt.Sprintf("127.0.0.1:%d", ports[n].Cluster) }
	config := func(name, other string) map[string]any {
		cfg := procs.BaseConfig(name, ports[name])
		cfg["Cluster"].(map[string]any)["SeedNodes"] = []string{addr("a"), addr("b")}
		o := cfg["OpcUa"].(map[string]any)
		o["PeerApplicationUris"] = []string{"urn:" + other + ":otopcua"}
		o["RedundancySupport"] = "HotAndMirrored"
		return cfg
	}
	a := procs.Start(t, "a", config("a", "b"))
	a.WaitReady(60 * time.Second)
	b := procs.Start(t, "b", config("b", "a"))
	b.WaitReady(60 * time.Second)
	// Each names the other by its incarnation: the address and uid the
	// other process reports as itself.
	incarnation := func(n *procs.Node) string {
		v, err := n.Members()
		if err != nil {
			t.Fatal(err)
		}
		return v.Self.Address + "#" + string(v.Self.UID)
	}
	for _, tc := range []struct{ n, other *procs.Node }{{a, b}, {b, a}} {
		want := `["` + incarnation(tc.other) + `"]`
		procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
			if got := lastPeers(tc.n.Log()); got != want {
				return fmt.Errorf("%s's mirror peers %s, want %s", tc.n.Name, got, want)
			}
			return nil
		})
	}
	// Each holds the other's (empty) set of sessions whole, and each
	// acknowledged the other's: both are hot standbys.
	for _, tc := range []struct {
		n     *procs.Node
		other string
	}{{a, "b"}, {b, "a"}} {
		procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
			metrics, err := tc.n.Get("/metrics")
			if err != nil {
				return err
			}
			for _, series := range []string{
				`otopcua_mirror_ready{origin="` + addr(tc.other) + `"} 1`,
				`otopcua_mirror_peer_ready{peer="` + addr(tc.other) + `"} 1`,
			} {
				if !strings.Contains(metrics, series+"\n") {
					return fmt.Errorf("%s: /metrics lacks %s:\n%s", tc.n.Name, series, grep(metrics, "otopcua_mirror"))
				}
			}
			return nil
		})
	}
	b.Signal(syscall.SIGKILL)
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if got := lastPeers(a.Log()); got != "null" {
			return fmt.Errorf("a's mirror peers %s after b was killed, want none (null)", got)
		}
		return nil
	})
}
