package host_test

import (
	"strings"
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
