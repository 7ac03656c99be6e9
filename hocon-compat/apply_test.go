package hoconcompat

import (
	"slices"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
)

// TestApplyToInstallsWhatRenderShows: settings from an akka.conf applied to
// a loaded config come back unchanged through FromConfig and Effective.
func TestApplyToInstallsWhatRenderShows(t *testing.T) {
	doc, err := Parse("akka.conf", []byte(`
akka.cluster {
  downing-provider-class = "Akka.Cluster.SBR.SplitBrainResolverProvider, Akka.Cluster"
  split-brain-resolver { active-strategy = keep-majority, stable-after = 7s }
  failure-detector { heartbeat-interval = 2s, acceptable-heartbeat-pause = 5s, threshold = 12.0 }
  seed-nodes = ["akka.tcp://otopcua@a:4053", "akka.tcp://otopcua@b:4053"]
}`))
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := Extract(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	e, _ := Effective(FromConfig(&cfg.Cluster), map[string]bool{}, h)
	e.ApplyTo(&cfg.Cluster)

	cl := cfg.Cluster
	if cl.SplitBrainResolverStrategy != config.StrategyKeepMajority || cl.StableAfter != 7*time.Second ||
		cl.FailureDetector.HeartbeatInterval != 2*time.Second || cl.FailureDetector.AcceptableHeartbeatPause != 5*time.Second ||
		cl.FailureDetector.Threshold != 12.0 || cl.DownOnConnectionRefusedEnabled() {
		t.Fatalf("applied cluster config = %+v", cl)
	}
	if !slices.Equal(cl.SeedNodes, []string{"akka.tcp://otopcua@a:4053", "akka.tcp://otopcua@b:4053"}) {
		t.Fatalf("seeds = %v", cl.SeedNodes)
	}
	again, _ := Effective(FromConfig(&cl), map[string]bool{}, ClusterSettings{})
	again.Origins, e.Origins = nil, nil
	if Render(again) != Render(e) {
		t.Fatalf("round trip differs:\n%s\nvs\n%s", Render(again), Render(e))
	}
}
