package hoconcompat

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func extractFile(t *testing.T, name string) (ClusterSettings, []Warning, error) {
	t.Helper()
	path := filepath.Join("testdata", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Parse(path, data)
	if err != nil {
		t.Fatalf("Parse %s: %v", path, err)
	}
	return Extract(doc)
}

func extractSrc(t *testing.T, src string) (ClusterSettings, []Warning, error) {
	t.Helper()
	return Extract(mustParse(t, src))
}

// warningsWith returns the warnings whose text contains s.
func warningsWith(ws []Warning, s string) []Warning {
	var out []Warning
	for _, w := range ws {
		if strings.Contains(w.String(), s) {
			out = append(out, w)
		}
	}
	return out
}

func TestExtractReferenceKeepOldest(t *testing.T) {
	s, ws, err := extractFile(t, "reference-keep-oldest.conf")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("Strategy", s.Strategy.Value, "keep-oldest")
	check("Strategy position", s.Strategy.Pos.String(), "testdata/reference-keep-oldest.conf:23:25")
	check("StableAfter", s.StableAfter.Value, 15*time.Second)
	check("DownIfAlone", s.KeepOldestDownIfAlone, Setting[bool]{Value: true, Set: true, Pos: Pos{"testdata/reference-keep-oldest.conf", 26, 25}})
	check("HeartbeatInterval", s.HeartbeatInterval.Value, time.Second)
	check("AcceptableHeartbeatPause", s.AcceptableHeartbeatPause.Value, 3*time.Second)
	check("Threshold", s.Threshold.Value, 10.0)
	check("SeedNodes", s.SeedNodes.Value, []string{"akka.tcp://OtOpcUa@node-a.lan:4053", "akka.tcp://OtOpcUa@node-b.lan:4053"})
	check("Roles", s.Roles.Value, []string{"admin", "driver"})
	check("AutoDownUnreachableAfter set", s.AutoDownUnreachableAfter.Set, false)
	check("SelfFormAfter set", s.SelfFormAfter.Set, false)
	if len(ws) != 1 || ws[0].Key != "akka.cluster.run-coordinated-shutdown-when-down" || !strings.Contains(ws[0].Msg, "not read by otopcua") {
		t.Errorf("warnings %v, want only the unread run-coordinated-shutdown-when-down", ws)
	}
}

func TestExtractAutoDownFlatKeys(t *testing.T) {
	s, ws, err := extractFile(t, "auto-down.conf")
	if err != nil {
		t.Fatal(err)
	}
	if s.Strategy.Value != "auto-down" || s.AutoDownUnreachableAfter.Value != 20*time.Second {
		t.Errorf("strategy %v after %v", s.Strategy, s.AutoDownUnreachableAfter)
	}
	if s.Threshold.Value != 12 || s.AcceptableHeartbeatPause.Value != 5*time.Second || s.SeedNodeTimeout.Value != 7*time.Second {
		t.Errorf("threshold %v pause %v seed timeout %v", s.Threshold, s.AcceptableHeartbeatPause, s.SeedNodeTimeout)
	}
	if !s.RetryUnsuccessfulJoinAfter.Set || s.RetryUnsuccessfulJoinAfter.Value != 0 {
		t.Errorf("retry-unsuccessful-join-after off = %v, want set to 0", s.RetryUnsuccessfulJoinAfter)
	}
	if !reflect.DeepEqual(s.Roles.Value, []string{"driver"}) || len(s.SeedNodes.Value) != 2 {
		t.Errorf("roles %v seeds %v", s.Roles, s.SeedNodes)
	}
	if len(ws) != 0 {
		t.Errorf("warnings %v", ws)
	}
}

func TestExtractSubstitutionsAndIncludes(t *testing.T) {
	s, ws, err := extractFile(t, "substitutions.conf")
	if err != nil {
		t.Fatal(err)
	}
	if s.Strategy.Value != "static-quorum" || s.StaticQuorumSize.Value != 2 || s.StaticQuorumRole.Value != "driver" {
		t.Errorf("static quorum: %v %v %v", s.Strategy, s.StaticQuorumSize, s.StaticQuorumRole)
	}
	if s.StableAfter.Value != 12*time.Second || s.AcceptableHeartbeatPause.Value != 4*time.Second {
		t.Errorf("substituted timings: %v %v", s.StableAfter, s.AcceptableHeartbeatPause)
	}
	if s.DownAllWhenUnstable != (Setting[time.Duration]{Value: DownAllOff, Set: true, Pos: s.DownAllWhenUnstable.Pos}) {
		t.Errorf("down-all-when-unstable off = %v", s.DownAllWhenUnstable)
	}
	// ${?CLUSTER_SEEDS} is undefined: the earlier value (a substitution plus
	// an append) stays.
	want := []string{"akka.tcp://otopcua@central-1:4053", "akka.tcp://otopcua@central-2:4053"}
	if !reflect.DeepEqual(s.SeedNodes.Value, want) || !reflect.DeepEqual(s.Roles.Value, []string{"admin"}) {
		t.Errorf("seeds %v roles %v", s.SeedNodes, s.Roles)
	}
	if s.HeartbeatInterval.Set {
		t.Errorf("heartbeat-interval = ${?FD_HEARTBEAT} undefined, but set: %v", s.HeartbeatInterval)
	}
	for _, want := range []string{"include \"site-common.conf\" ignored", "include required(", "${?CLUSTER_SEEDS}", "${?CLUSTER_ROLES}", "${?FD_HEARTBEAT}"} {
		if len(warningsWith(ws, want)) != 1 {
			t.Errorf("no warning about %s in %v", want, ws)
		}
	}
	if got := len(ws); got != 5 {
		t.Errorf("%d warnings, want 5: %v", got, ws)
	}
}

func TestExtractReportsEveryBadValue(t *testing.T) {
	_, _, err := extractFile(t, "bad-values.conf")
	var ee *ExtractError
	if !errors.As(err, &ee) {
		t.Fatalf("err = %v, want *ExtractError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"invalid cluster settings in testdata/bad-values.conf: 8 problems",
		`testdata/bad-values.conf:2:28: akka.cluster.downing-provider-class = "Akka.Cluster.SplitBrainResolver, Akka.Cluster": accepted values are Akka.Cluster.AutoDowning and Akka.Cluster.SBR.SplitBrainResolverProvider, optionally followed by ", Akka.Cluster" (Akka.NET 1.4's Akka.Cluster.SplitBrainResolver is now Akka.Cluster.SBR.SplitBrainResolverProvider)`,
		`testdata/bad-values.conf:4:23: akka.cluster.split-brain-resolver.active-strategy = "keep-referee": accepted values are keep-oldest, keep-majority, static-quorum, lease-majority`,
		`testdata/bad-values.conf:5:20: akka.cluster.split-brain-resolver.stable-after = "soon": accepted values are durations`,
		`testdata/bad-values.conf:6:33: akka.cluster.split-brain-resolver.static-quorum.quorum-size = 0: accepted values are integers ≥ 1, or undefined`,
		`testdata/bad-values.conf:9:17: akka.cluster.failure-detector.threshold = -1: accepted values are numbers greater than 0`,
		`testdata/bad-values.conf:10:26: akka.cluster.failure-detector.heartbeat-interval = [...]: accepted values are durations`,
		`testdata/bad-values.conf:12:17: akka.cluster.seed-nodes.0 = "akka.tcp://other@node-a:4053": accepted values are lists of host:port or akka.tcp://otopcua@host:port`,
		`testdata/bad-values.conf:13:19: akka.cluster.roles.1 = "frontend": accepted values are lists of admin, driver`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks\n  %s\nin\n%s", want, msg)
		}
	}
}

func TestExtractProviderClassForms(t *testing.T) {
	for _, tc := range []struct {
		class, strategy string
	}{
		{"Akka.Cluster.AutoDowning", "auto-down"},
		{"Akka.Cluster.AutoDowning, Akka.Cluster", "auto-down"},
		{"Akka.Cluster.SBR.SplitBrainResolverProvider", "keep-oldest"},
		{"Akka.Cluster.SBR.SplitBrainResolverProvider, Akka.Cluster", "keep-oldest"},
		{"Akka.Cluster.SBR.SplitBrainResolverProvider,Akka.Cluster, Version=1.5.62.0, Culture=neutral, PublicKeyToken=null", "keep-oldest"},
		{"  akka.cluster.sbr.splitbrainresolverprovider , akka.cluster ", "keep-oldest"},
	} {
		s, ws, err := extractSrc(t, "akka.cluster.downing-provider-class = \""+tc.class+"\"\nakka.cluster.split-brain-resolver.active-strategy = keep-oldest")
		if err != nil || s.Strategy.Value != tc.strategy {
			t.Errorf("%q: strategy %v, err %v", tc.class, s.Strategy, err)
		}
		if tc.strategy == "auto-down" && len(warningsWith(ws, "is ignored: Akka.Cluster.AutoDowning does not read the split-brain-resolver block")) != 1 {
			t.Errorf("%q: no warning that active-strategy is ignored: %v", tc.class, ws)
		}
	}
	for _, bad := range []string{"", "Akka.Cluster.NoDowning", "Akka.Cluster.AutoDowning, Other.Assembly", "Akka.Cluster.AutoDowning, Akka.Cluster, junk", "MyCompany.Downing"} {
		_, _, err := extractSrc(t, "akka.cluster.downing-provider-class = \""+bad+"\"")
		if err == nil || !strings.Contains(err.Error(), "akka.cluster.downing-provider-class = \""+bad+"\": accepted values are Akka.Cluster.AutoDowning and Akka.Cluster.SBR.SplitBrainResolverProvider") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestExtractStrategySelection(t *testing.T) {
	const sbr = `akka.cluster.downing-provider-class = "Akka.Cluster.SBR.SplitBrainResolverProvider, Akka.Cluster"` + "\n"
	t.Run("provider without active-strategy takes Akka's default", func(t *testing.T) {
		s, ws, err := extractSrc(t, sbr)
		if err != nil || s.Strategy.Value != "keep-majority" || len(warningsWith(ws, "not set: Akka.NET's default keep-majority applies")) != 1 {
			t.Errorf("strategy %v err %v warnings %v", s.Strategy, err, ws)
		}
	})
	t.Run("active-strategy without provider selects nothing", func(t *testing.T) {
		s, ws, err := extractSrc(t, "akka.cluster.split-brain-resolver { active-strategy = Keep-Oldest }")
		if err != nil || s.Strategy.Set || s.ActiveStrategy.Value != "keep-oldest" {
			t.Errorf("strategy %v active %v err %v", s.Strategy, s.ActiveStrategy, err)
		}
		if w := warningsWith(ws, "is set but akka.cluster.downing-provider-class is not, so it selects nothing"); len(w) != 1 || w[0].Pos.Line != 1 {
			t.Errorf("warnings %v", ws)
		}
	})
	for _, strategy := range SBRStrategies {
		s, _, err := extractSrc(t, sbr+"akka.cluster.split-brain-resolver.active-strategy = "+strategy)
		if err != nil || s.Strategy.Value != strategy || s.Strategy.Pos.Line != 2 {
			t.Errorf("%s: %v %v", strategy, s.Strategy, err)
		}
	}
}

func TestExtractSpecialValues(t *testing.T) {
	s, ws, err := extractSrc(t, `
akka.cluster {
  downing-provider-class = "Akka.Cluster.AutoDowning"
  auto-down-unreachable-after = off
  split-brain-resolver {
    down-all-when-unstable = 30s
    static-quorum.quorum-size = undefined
    lease-majority { lease-implementation = "akka.coordination.lease.etcd", acquire-lease-delay-for-minority = 0s }
  }
  failure-detector { min-std-deviation = 200 ms, max-sample-size = "500" }
  weird-unknown { nested = 1 }
}
otopcua.cluster { self-form-after = off, down-on-connection-refused = yes, typo = 1 }
`)
	if err != nil {
		t.Fatal(err)
	}
	if s.AutoDownUnreachableAfter.Set || len(warningsWith(ws, "off would disable auto-down in Akka")) != 1 {
		t.Errorf("auto-down-unreachable-after off: %v, warnings %v", s.AutoDownUnreachableAfter, ws)
	}
	if s.DownAllWhenUnstable.Value != 30*time.Second || s.StaticQuorumSize.Set {
		t.Errorf("down-all %v quorum %v", s.DownAllWhenUnstable, s.StaticQuorumSize)
	}
	if s.LeaseImplementation.Value != "akka.coordination.lease.etcd" || !s.AcquireLeaseDelayForMinority.Set || s.AcquireLeaseDelayForMinority.Value != 0 {
		t.Errorf("lease %v %v", s.LeaseImplementation, s.AcquireLeaseDelayForMinority)
	}
	if s.MinStdDeviation.Value != 200*time.Millisecond || s.MaxSampleSize.Value != 500 {
		t.Errorf("fd %v %v", s.MinStdDeviation, s.MaxSampleSize)
	}
	if !s.SelfFormAfter.Set || s.SelfFormAfter.Value != 0 || s.DownOnConnectionRefused.Value != true {
		t.Errorf("otopcua block %v %v", s.SelfFormAfter, s.DownOnConnectionRefused)
	}
	for _, key := range []string{"akka.cluster.weird-unknown.nested", "otopcua.cluster.typo"} {
		if w := warningsWith(ws, key+": not read by otopcua"); len(w) != 1 {
			t.Errorf("no unread warning for %s: %v", key, ws)
		}
	}
	on, _, err := extractSrc(t, "akka.cluster.split-brain-resolver.down-all-when-unstable = on")
	if err != nil || !on.DownAllWhenUnstable.Set || on.DownAllWhenUnstable.Value != 0 {
		t.Errorf("down-all-when-unstable on: %v %v", on.DownAllWhenUnstable, err)
	}
}

func TestExtractEmptyDocument(t *testing.T) {
	s, ws, err := extractSrc(t, "# nothing about the cluster\nakka.loglevel = DEBUG")
	if err != nil || len(ws) != 0 || !reflect.DeepEqual(s, ClusterSettings{}) {
		t.Errorf("settings %+v warnings %v err %v", s, ws, err)
	}
}

func TestExtractFullHostConf(t *testing.T) {
	s, ws, err := extractFile(t, "akka-idioms.conf")
	if err != nil {
		t.Fatal(err)
	}
	if s.Strategy.Value != "auto-down" || s.AutoDownUnreachableAfter.Value != 15*time.Second || s.HeartbeatInterval.Value != time.Second || s.Threshold.Value != 10 {
		t.Errorf("settings %+v", s)
	}
	var keys []string
	for _, w := range ws {
		keys = append(keys, w.Key)
	}
	want := []string{"akka.cluster.min-nr-of-members", "akka.cluster.role.driver.min-nr-of-members", "akka.cluster.failure-detector.implementation-class"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("warnings about %v, want %v", keys, want)
	}
	doc := mustParseFile(t, "akka-idioms.conf")
	for path, want := range map[string]string{
		`akka.actor.serialization-bindings."Akka.Cluster.IClusterMessage, Akka.Cluster"`: "akka-cluster",
		`akka.actor.deployment."/redundancy-state/workers".cluster.use-role`:             "driver",
		`akka.actor.default-dispatcher.fork-join-executor."parallelism - min"`:           "8",
		`akka.remote.dot-netty.tcp.hostname`:                                             "0.0.0.0",
	} {
		if v := doc.Get(path); v == nil || v.Text() != want {
			t.Errorf("%s = %v, want %s", path, v, want)
		}
	}
}

func mustParseFile(t *testing.T, name string) *Document {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Parse(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
