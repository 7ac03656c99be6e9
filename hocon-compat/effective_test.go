package hoconcompat

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
)

// defaultJSON is the Cluster section of a configuration that sets nothing.
func defaultJSON() JSONCluster { return FromConfig(&config.Default().Cluster) }

var at = Pos{File: "akka.conf", Line: 7, Col: 5}

func hset[T any](v T) Setting[T] { return set(v, at) }

func ptr[T any](v T) *T { return &v }

func TestEffectivePrecedence(t *testing.T) {
	type row struct {
		name     string
		explicit []string
		json     func(*JSONCluster)
		hocon    ClusterSettings
		get      func(EffectiveCluster) any
		want     any
		conflict string // substring of the single expected warning; "" for none
		origin   [2]string
	}
	strategy := func(e EffectiveCluster) any { return e.Strategy }
	stable := func(e EffectiveCluster) any { return e.StableAfter }
	docr := func(e EffectiveCluster) any { return e.DownOnConnectionRefused }
	for _, tc := range []row{
		{name: "default strategy", get: strategy, want: "auto-down", origin: [2]string{PathDowningProviderClass, "default"}},
		{name: "akka.conf fills the strategy left at its default", hocon: ClusterSettings{Strategy: hset("keep-oldest")}, get: strategy, want: "keep-oldest",
			origin: [2]string{PathDowningProviderClass, "akka.conf:7:5"}},
		{name: "explicit strategy wins and warns", explicit: []string{KeyStrategy}, hocon: ClusterSettings{Strategy: hset("keep-oldest")}, get: strategy, want: "auto-down",
			conflict: `akka.conf:7:5: Cluster:SplitBrainResolverStrategy: "auto-down" from appsettings.json or the environment wins over akka.cluster.downing-provider-class = "keep-oldest" written at akka.conf:7:5`,
			origin:   [2]string{PathDowningProviderClass, KeyStrategy}},
		{name: "strategy chosen by active-strategy is named so", explicit: []string{KeyStrategy}, json: func(j *JSONCluster) { j.SplitBrainResolverStrategy = "keep-majority" },
			hocon: ClusterSettings{Strategy: hset("keep-oldest"), ActiveStrategy: hset("keep-oldest")}, get: strategy, want: "keep-majority",
			conflict: `wins over akka.cluster.split-brain-resolver.active-strategy = "keep-oldest"`},
		{name: "explicit and equal: no warning", explicit: []string{KeyStrategy}, json: func(j *JSONCluster) { j.SplitBrainResolverStrategy = "keep-oldest" },
			hocon: ClusterSettings{Strategy: hset("keep-oldest")}, get: strategy, want: "keep-oldest"},
		{name: "explicit duration wins", explicit: []string{KeyStableAfter}, json: func(j *JSONCluster) { j.StableAfter = 20 * time.Second },
			hocon: ClusterSettings{StableAfter: hset(15 * time.Second)}, get: stable, want: 20 * time.Second,
			conflict: "Cluster:StableAfter: 20s from appsettings.json or the environment wins over akka.cluster.split-brain-resolver.stable-after = 15s"},
		{name: "akka.conf duration fills the default", hocon: ClusterSettings{StableAfter: hset(12 * time.Second)}, get: stable, want: 12 * time.Second,
			origin: [2]string{PathStableAfter, "akka.conf:7:5"}},
		{name: "JSON value that equals the default still counts when explicit", explicit: []string{KeyStableAfter},
			hocon: ClusterSettings{StableAfter: hset(12 * time.Second)}, get: stable, want: 15 * time.Second, conflict: "15s from appsettings.json"},
		{name: "threshold equal", explicit: []string{KeyThreshold}, hocon: ClusterSettings{Threshold: hset(10.0)},
			get: func(e EffectiveCluster) any { return e.FailureDetector.Threshold }, want: 10.0},
		{name: "threshold from akka.conf", hocon: ClusterSettings{Threshold: hset(8.0)},
			get: func(e EffectiveCluster) any { return e.FailureDetector.Threshold }, want: 8.0},
		{name: "pause explicit conflict", explicit: []string{KeyAcceptableHeartbeatPause}, hocon: ClusterSettings{AcceptableHeartbeatPause: hset(5 * time.Second)},
			get: func(e EffectiveCluster) any { return e.FailureDetector.AcceptableHeartbeatPause }, want: 3 * time.Second, conflict: "acceptable-heartbeat-pause = 5s"},
		{name: "seeds equal by address", explicit: []string{KeySeedNodes}, json: func(j *JSONCluster) { j.SeedNodes = []string{"node-a:4053", "node-b:4053"} },
			hocon: ClusterSettings{SeedNodes: hset([]string{"akka.tcp://OtOpcUa@NODE-A:4053", "node-b:4053"})},
			get:   func(e EffectiveCluster) any { return e.SeedNodes }, want: []string{"node-a:4053", "node-b:4053"}},
		{name: "seeds in another order conflict", explicit: []string{KeySeedNodes}, json: func(j *JSONCluster) { j.SeedNodes = []string{"node-a:4053", "node-b:4053"} },
			hocon: ClusterSettings{SeedNodes: hset([]string{"node-b:4053", "node-a:4053"})},
			get:   func(e EffectiveCluster) any { return e.SeedNodes }, want: []string{"node-a:4053", "node-b:4053"}, conflict: `["node-a:4053", "node-b:4053"] from appsettings.json`},
		{name: "derived self seed is not explicit", json: func(j *JSONCluster) { j.SeedNodes = []string{"self:4053"} },
			hocon: ClusterSettings{SeedNodes: hset([]string{"node-a:4053", "node-b:4053"})},
			get:   func(e EffectiveCluster) any { return e.SeedNodes }, want: []string{"node-a:4053", "node-b:4053"}},
		{name: "roles compare as sets", explicit: []string{KeyRoles}, hocon: ClusterSettings{Roles: hset([]string{"driver", "admin"})},
			get: func(e EffectiveCluster) any { return e.Roles }, want: []string{"admin", "driver"}},
		{name: "explicit null self-form wins", explicit: []string{KeySelfFormAfter}, json: func(j *JSONCluster) { j.SelfFormAfter = 0 },
			hocon: ClusterSettings{SelfFormAfter: hset(10 * time.Second)}, get: func(e EffectiveCluster) any { return e.SelfFormAfter }, want: time.Duration(0),
			conflict: "Cluster:SelfFormAfter: off from appsettings.json"},
		{name: "quorum explicit conflict", explicit: []string{KeyStaticQuorumSize}, json: func(j *JSONCluster) { j.StaticQuorumSize = 3 },
			hocon: ClusterSettings{StaticQuorumSize: hset(2)}, get: func(e EffectiveCluster) any { return e.StaticQuorumSize }, want: 3, conflict: "quorum-size = 2"},
		{name: "down-if-alone from akka.conf", hocon: ClusterSettings{KeepOldestDownIfAlone: hset(false)},
			get: func(e EffectiveCluster) any { return e.DownIfAlone }, want: false},
		{name: "down-on-connection-refused follows the akka.conf strategy", json: func(j *JSONCluster) { j.DownOnConnectionRefused = ptr(true) },
			hocon: ClusterSettings{Strategy: hset("keep-oldest")}, get: docr, want: false, origin: [2]string{PathDownOnConnectionRefused, "default for keep-oldest"}},
		{name: "down-on-connection-refused explicit", explicit: []string{KeyDownOnConnectionRefused}, json: func(j *JSONCluster) { j.DownOnConnectionRefused = ptr(true) },
			hocon: ClusterSettings{Strategy: hset("keep-oldest")}, get: docr, want: true},
		{name: "down-on-connection-refused from the otopcua block", hocon: ClusterSettings{Strategy: hset("keep-oldest"), DownOnConnectionRefused: hset(true)},
			get: docr, want: true},
		{name: "role of the active strategy", hocon: ClusterSettings{Strategy: hset("keep-majority"), KeepMajorityRole: hset("driver"), KeepOldestRole: hset("admin")},
			get: func(e EffectiveCluster) any { return e.Role }, want: "driver"},
		{name: "no role under auto-down", hocon: ClusterSettings{KeepOldestRole: hset("admin")},
			get: func(e EffectiveCluster) any { return e.Role }, want: ""},
		{name: "akka.conf-only default", get: func(e EffectiveCluster) any { return e.FailureDetector.MinStdDeviation }, want: DefaultMinStdDeviation,
			origin: [2]string{PathMinStdDeviation, "default"}},
		{name: "akka.conf-only value", hocon: ClusterSettings{RetryUnsuccessfulJoinAfter: hset(time.Duration(0))},
			get: func(e EffectiveCluster) any { return e.RetryUnsuccessfulJoinAfter }, want: time.Duration(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := defaultJSON()
			if tc.json != nil {
				tc.json(&j)
			}
			explicit := map[string]bool{}
			for _, k := range tc.explicit {
				explicit[k] = true
			}
			e, ws := Effective(j, explicit, tc.hocon)
			if got := tc.get(e); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			switch {
			case tc.conflict == "" && len(ws) != 0:
				t.Errorf("unexpected warnings %v", ws)
			case tc.conflict != "" && (len(ws) != 1 || !strings.Contains(ws[0].String(), tc.conflict)):
				t.Errorf("warnings %v, want one containing %q", ws, tc.conflict)
			}
			if tc.origin[0] != "" && e.Origins[tc.origin[0]] != tc.origin[1] {
				t.Errorf("origin of %s = %q, want %q", tc.origin[0], e.Origins[tc.origin[0]], tc.origin[1])
			}
		})
	}
}

func TestEffectiveWarnsAboutAPairStrategyFromAkkaConf(t *testing.T) {
	j := defaultJSON()
	j.SeedNodes = []string{"node-a:4053", "node-b:4053"}
	h := ClusterSettings{Strategy: hset("keep-oldest")}
	_, ws := Effective(j, nil, h)
	if len(ws) != 1 || !strings.Contains(ws[0].Msg, "akka.conf selects keep-oldest on a two-node pair") {
		t.Errorf("warnings %v", ws)
	}
	if _, ws := Effective(j, map[string]bool{KeyStrategy: true}, h); len(ws) != 1 || !strings.Contains(ws[0].Msg, "wins over") {
		t.Errorf("explicit strategy: warnings %v, want only the conflict", ws)
	}
}

func TestEffectiveDefaultsMatchConfig(t *testing.T) {
	e, ws := Effective(defaultJSON(), nil, ClusterSettings{})
	if len(ws) != 0 {
		t.Fatalf("warnings %v", ws)
	}
	c := config.Default().Cluster
	if e.Strategy != c.SplitBrainResolverStrategy || e.AutoDownUnreachableAfter != c.AutoDownUnreachableAfter || e.StableAfter != c.StableAfter ||
		e.DownIfAlone != c.DownIfAlone || e.SelfFormAfter != c.SelfFormAfter || !e.DownOnConnectionRefused ||
		e.FailureDetector.HeartbeatInterval != time.Second || e.FailureDetector.Threshold != 10 || e.SeedNodeTimeout != 5*time.Second {
		t.Errorf("defaults %+v", e)
	}
	if err := e.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestValidate(t *testing.T) {
	e, _ := Effective(defaultJSON(), nil, ClusterSettings{Strategy: hset("static-quorum")})
	err := e.Validate()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "static-quorum needs a quorum size: set Cluster:StaticQuorumSize or akka.cluster.split-brain-resolver.static-quorum.quorum-size to an integer ≥ 1") {
		t.Errorf("static-quorum without size: %v", err)
	}
	e, _ = Effective(defaultJSON(), nil, ClusterSettings{Strategy: hset("static-quorum"), StaticQuorumSize: hset(2)})
	if err := e.Validate(); err != nil {
		t.Errorf("static-quorum with size: %v", err)
	}
	bad := e
	bad.Strategy, bad.FailureDetector.MaxSampleSize, bad.StableAfter = "down-all", 0, 0
	err = bad.Validate()
	for _, want := range []string{`Cluster:SplitBrainResolverStrategy = "down-all": accepted values are auto-down, keep-oldest`, "max-sample-size = 0", "Cluster:StableAfter = 0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want %q", err, want)
		}
	}
}
