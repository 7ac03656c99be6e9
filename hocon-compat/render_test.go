package hoconcompat

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
	"pgregory.net/rapid"
)

func TestRenderDefaults(t *testing.T) {
	e, _ := Effective(defaultJSON(), nil, ClusterSettings{})
	e.Origins = nil
	e.SeedNodes = []string{"node-a.lan:4053", "node-b.lan:4053"}
	want := `# otopcua effective cluster settings
akka.cluster {
  downing-provider-class = "Akka.Cluster.AutoDowning"   # Cluster:SplitBrainResolverStrategy = auto-down
  auto-down-unreachable-after = 15s
  seed-nodes = ["node-a.lan:4053", "node-b.lan:4053"]
  roles = ["admin", "driver"]
  seed-node-timeout = 5s
  retry-unsuccessful-join-after = 10s
  split-brain-resolver {  # read by the split-brain resolver strategies only
    stable-after = 15s
    down-all-when-unstable = on
    keep-oldest {
      down-if-alone = on
    }
    lease-majority {
      acquire-lease-delay-for-minority = 1s
    }
  }
  failure-detector {
    heartbeat-interval = 1s
    acceptable-heartbeat-pause = 3s
    threshold = 10.0
    min-std-deviation = 100ms
    max-sample-size = 1000
  }
}
otopcua.cluster {
  self-form-after = 10s
  down-on-connection-refused = on
  # Cluster:Lease (the shared lease of lease-majority): provider = none, ttl = 2s
}
`
	if got := Render(e); got != want {
		t.Errorf("Render(defaults):\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderStrategyBlocksAndOrigins(t *testing.T) {
	h := ClusterSettings{Strategy: hset("static-quorum"), StaticQuorumSize: hset(2), StaticQuorumRole: hset("driver"), KeepOldestRole: hset("admin")}
	e, _ := Effective(defaultJSON(), map[string]bool{KeyStableAfter: true}, h)
	out := Render(e)
	for _, want := range []string{
		`downing-provider-class = "Akka.Cluster.SBR.SplitBrainResolverProvider, Akka.Cluster"  # Cluster:SplitBrainResolverStrategy = static-quorum; from akka.conf:7:5`,
		"auto-down-unreachable-after = 15s                     # read by auto-down only; default\n",
		"    active-strategy = static-quorum                     # from akka.conf:7:5\n",
		"    stable-after = 15s                                  # from Cluster:StableAfter\n",
		"    static-quorum {\n      quorum-size = 2                                   # from akka.conf:7:5\n      role = \"driver\"",
		"down-on-connection-refused = off                      # default for static-quorum\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Render lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `role = "admin"`) {
		t.Errorf("the role of an inactive strategy is rendered:\n%s", out)
	}
}

// genEffective draws any valid EffectiveCluster.
func genEffective(t *rapid.T) EffectiveCluster {
	dur := func(name string) time.Duration {
		return time.Duration(rapid.Int64Range(1, int64(3*time.Hour)).Draw(t, name))
	}
	offOr := func(name string) time.Duration {
		if rapid.Bool().Draw(t, name+"-off") {
			return 0
		}
		return dur(name)
	}
	e := EffectiveCluster{
		Strategy:                     rapid.SampledFrom(config.Strategies).Draw(t, "strategy"),
		AutoDownUnreachableAfter:     dur("auto-down"),
		StableAfter:                  dur("stable-after"),
		DownAllWhenUnstable:          rapid.SampledFrom([]time.Duration{0, DownAllOff, 4 * time.Second, 1500 * time.Microsecond}).Draw(t, "down-all"),
		DownIfAlone:                  rapid.Bool().Draw(t, "down-if-alone"),
		StaticQuorumSize:             rapid.IntRange(0, 9).Draw(t, "quorum"),
		LeaseImplementation:          rapid.SampledFrom([]string{"", "akka.coordination.lease.etcd", "odd \"lease\"\tname"}).Draw(t, "lease"),
		AcquireLeaseDelayForMinority: time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "lease-delay")),
		DownOnConnectionRefused:      rapid.Bool().Draw(t, "docr"),
		FailureDetector: FailureDetector{
			HeartbeatInterval:        dur("heartbeat"),
			AcceptableHeartbeatPause: dur("pause"),
			Threshold:                rapid.Float64Range(0.001, 1e6).Draw(t, "threshold"),
			MinStdDeviation:          dur("min-std"),
			MaxSampleSize:            rapid.IntRange(1, 1<<20).Draw(t, "samples"),
		},
		SeedNodes: rapid.SliceOfN(rapid.SampledFrom([]string{
			"node-a.lan:4053", "akka.tcp://otopcua@node-b.lan:4054", "akka.tcp://OtOpcUa@10.0.0.7:4053", "[::1]:4053",
		}), 0, 4).Draw(t, "seeds"),
		Roles:                      rapid.SampledFrom([][]string{{}, {"admin"}, {"driver"}, {"admin", "driver"}, {"driver", "admin"}}).Draw(t, "roles"),
		SeedNodeTimeout:            dur("seed-timeout"),
		RetryUnsuccessfulJoinAfter: offOr("retry"),
		SelfFormAfter:              offOr("self-form"),
		LeaseTtl:                   config.DefaultLeaseTtl, // appsettings only: not in the HOCON
	}
	if e.Strategy == config.StrategyStaticQuorum && e.StaticQuorumSize == 0 {
		e.StaticQuorumSize = 1
	}
	if e.Strategy != config.StrategyAutoDown {
		e.Role = rapid.SampledFrom([]string{"", "driver", "admin", "with \"quotes\""}).Draw(t, "role")
	}
	return e
}

// TestRenderRoundTrip: Extract(Parse(Render(e))) read with no explicit JSON
// key gives e back, and reading it raises no warning.
func TestRenderRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := genEffective(t)
		if err := e.Validate(); err != nil {
			t.Fatalf("generated an invalid value: %v", err)
		}
		text := Render(e)
		doc, err := Parse("rendered.conf", []byte(text))
		if err != nil {
			t.Fatalf("Parse(Render(e)): %v\n%s", err, text)
		}
		h, ws, err := Extract(doc)
		if err != nil || len(ws) != 0 {
			t.Fatalf("Extract: %v, warnings %v\n%s", err, ws, text)
		}
		got, ws := Effective(defaultJSON(), nil, h)
		if len(ws) != 0 && len(e.SeedNodes) != 2 {
			t.Fatalf("Effective warnings %v", ws)
		}
		got.Origins = nil
		if !reflect.DeepEqual(normal(got), normal(e)) {
			t.Fatalf("round trip of\n%+v\ngave\n%+v\nthrough\n%s", e, got, text)
		}
	})
}

// normal makes empty and nil lists compare equal.
func normal(e EffectiveCluster) EffectiveCluster {
	if len(e.SeedNodes) == 0 {
		e.SeedNodes = nil
	}
	if len(e.Roles) == 0 {
		e.Roles = nil
	}
	if len(e.LeaseEndpoints) == 0 {
		e.LeaseEndpoints = nil
	}
	return e
}
