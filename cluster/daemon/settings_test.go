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
	if nc.UnreachableReaperInterval != 1000 || nc.DowningInterval != 0 || nc.Downing.LeaseRetryFor != 0 {
		t.Fatalf("auto-down keeps Akka's reaper and decides with the leader actions: reaper %d, downing %d", nc.UnreachableReaperInterval, nc.DowningInterval)
	}
	c.Cluster.SplitBrainResolverStrategy = config.StrategyLeaseMajority
	c.Cluster.Lease.Ttl = 2 * time.Second
	if nc, _ = NodeConfig(c, 42); nc.UnreachableReaperInterval != 100 || nc.DowningInterval != 100 || nc.LeaderActionsInterval != 1000 {
		t.Fatalf("lease-majority reaps and resolves every 100 ms, leader actions stay 1 s: %+v", nc)
	}
	if nc.Downing.LeaseRetryFor != 2250 || nc.Downing.LeaseRetryEvery != 250 {
		t.Fatalf("a refused lease is tried every 250 ms for the TTL + 250 ms: %+v", nc.Downing)
	}
	c.Cluster.SplitBrainResolverStrategy = config.StrategyAutoDown
	if nc, _ = NodeConfig(c, 42); nc.Downing.LeaseRetryFor != 0 {
		t.Fatalf("no lease retry outside lease-majority: %+v", nc.Downing)
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
