package daemon

import (
	"testing"
	"time"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
)

func TestNodeConfigFromSettings(t *testing.T) {
	c := config.Default()
	c.Cluster.PublicHostname, c.Cluster.Port = "node-a.lan", 4053
	c.Cluster.SeedNodes = []string{"akka.tcp://otopcua@node-a.lan:4053", "node-b.lan:4053"}
	c.Cluster.Roles = []string{"driver"}
	c.Node.ClusterId = "site-a"
	c.Cluster.SelfFormAfter = 7 * time.Second
	c.Cluster.AutoDownUnreachableAfter = 2 * time.Second
	c.Cluster.FailureDetector.HeartbeatInterval = 500 * time.Millisecond
	c.Cluster.FailureDetector.AcceptableHeartbeatPause = 1500 * time.Millisecond
	c.Cluster.FailureDetector.Threshold = 12
	nc, err := NodeConfig(c, 42)
	if err != nil {
		t.Fatal(err)
	}
	want := []m.Address{{Host: "node-a.lan", Port: 4053}, {Host: "node-b.lan", Port: 4053}}
	if nc.Self != (m.UniqueAddress{Host: "node-a.lan", Port: 4053, UID: 42}) || len(nc.Seeds) != 2 || nc.Seeds[0] != want[0] || nc.Seeds[1] != want[1] {
		t.Fatalf("self %v seeds %v", nc.Self, nc.Seeds)
	}
	if nc.ClusterID != "site-a" || len(nc.Roles) != 1 || nc.SelfFormAfter != 7000 || nc.Downing.Strategy != "auto-down" ||
		nc.Downing.AutoDownUnreachableAfter != 2000 || nc.HeartbeatInterval != 500 ||
		nc.FailureDetector.AcceptableHeartbeatPause != 1500 || nc.FailureDetector.Threshold != 12 || !nc.CrashFastPath {
		t.Fatalf("mapped config %+v", nc)
	}
	c.Cluster.SplitBrainResolverStrategy = config.StrategyKeepOldest
	c.Cluster.DownOnConnectionRefused = nil // unset: the strategy's default
	c.Cluster.SelfFormAfter = 0
	if nc, _ = NodeConfig(c, 42); nc.CrashFastPath || nc.SelfFormAfter != 0 || nc.Downing.Strategy != "keep-oldest" {
		t.Fatalf("keep-oldest defaults the fast path off; SelfFormAfter 0 disables: %+v", nc)
	}
	on := true
	c.Cluster.DownOnConnectionRefused = &on
	if nc, _ = NodeConfig(c, 42); !nc.CrashFastPath {
		t.Fatal("Cluster:DownOnConnectionRefused=true must switch the fast path on")
	}
	c.Cluster.SplitBrainResolverStrategy = config.StrategyStaticQuorum
	if _, err := NodeConfig(c, 42); err == nil {
		t.Fatal("static-quorum without a quorum size must not validate")
	}
}
