package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/testcert"
)

// fixedHostname makes the default PublicHostname predictable.
func fixedHostname(t *testing.T, name string) {
	t.Helper()
	old := hostname
	hostname = func() (string, error) { return name, nil }
	t.Cleanup(func() { hostname = old })
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, body string, environ ...string) *Config {
	t.Helper()
	cfg, err := Load(writeFile(t, "appsettings.json", body), environ)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

// loadItems loads body and returns the validation items; it fails the test
// when loading succeeds or fails in another way.
func loadItems(t *testing.T, body string, environ ...string) []Item {
	t.Helper()
	_, err := Load(writeFile(t, "appsettings.json", body), environ)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Load error = %v, want *ValidationError", err)
	}
	return ve.Items
}

func TestDefault(t *testing.T) {
	fixedHostname(t, "plc-host")
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default is invalid: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Cluster.Hostname", c.Cluster.Hostname, "0.0.0.0"},
		{"Cluster.Port", c.Cluster.Port, 4053},
		{"Cluster.PublicHostname", c.Cluster.PublicHostname, "plc-host"},
		{"Cluster.SeedNodes", c.Cluster.SeedNodes, []string{"plc-host:4053"}},
		{"Cluster.Roles", c.Cluster.Roles, []string{"admin", "driver"}},
		{"Cluster.SelfFormAfter", c.Cluster.SelfFormAfter, 10 * time.Second},
		{"Cluster.SplitBrainResolverStrategy", c.Cluster.SplitBrainResolverStrategy, "auto-down"},
		{"Cluster.AutoDownUnreachableAfter", c.Cluster.AutoDownUnreachableAfter, 15 * time.Second},
		{"Cluster.StableAfter", c.Cluster.StableAfter, 15 * time.Second},
		{"Cluster.DownIfAlone", c.Cluster.DownIfAlone, true},
		{"Cluster.DownOnConnectionRefused", c.Cluster.DownOnConnectionRefusedEnabled(), true},
		{"FailureDetector.HeartbeatInterval", c.Cluster.FailureDetector.HeartbeatInterval, time.Second},
		{"FailureDetector.AcceptableHeartbeatPause", c.Cluster.FailureDetector.AcceptableHeartbeatPause, 3 * time.Second},
		{"FailureDetector.Threshold", c.Cluster.FailureDetector.Threshold, 10.0},
		{"Node.ClusterId", c.Node.ClusterId, "default"},
		{"OpcUa.Port", c.OpcUa.Port, 4840},
		{"OpcUa.ApplicationUri", c.OpcUa.ApplicationUri, "urn:plc-host:otopcua"},
		{"OpcUa.ApplicationName", c.OpcUa.ApplicationName, "otopcua"},
		{"OpcUa.RedundancySupport", c.OpcUa.RedundancySupport, "Warm"},
		{"Redundancy.ManualFailoverDrain", c.Redundancy.ManualFailoverDrain, 2 * time.Second},
		{"Redundancy.DeviceHealth", c.Redundancy.DeviceHealth, "off"},
		{"Redundancy.DeviceFailoverAfter", c.Redundancy.DeviceFailoverAfter, 10 * time.Second},
		{"Redundancy.DeviceFailoverHold", c.Redundancy.DeviceFailoverHold, 60 * time.Second},
		{"OpcUa.Security.Policies", c.OpcUa.Security.Policies, []string{"None:None"}},
		{"OpcUa.Limits.MaxSessions", c.OpcUa.Limits.MaxSessions, 100},
		{"OpcUa.Limits.MaxSessionsPerAddress", c.OpcUa.Limits.MaxSessionsPerAddress, 50},
		{"OpcUa.Limits.UnactivatedSessionTimeout", c.OpcUa.Limits.UnactivatedSessionTimeout, 10 * time.Second},
		{"OpcUa.Limits.MaxPasswordChecksPerAddress", c.OpcUa.Limits.MaxPasswordChecksPerAddress, 2},
		{"OpcUa.Limits.MaxSecureChannelOpensPerAddress", c.OpcUa.Limits.MaxSecureChannelOpensPerAddress, 20},
		{"OpcUa.Limits.MaxTokenRenewalsPerAddress", c.OpcUa.Limits.MaxTokenRenewalsPerAddress, 10},
		{"Http.ReadTimeout", c.Http.ReadTimeout, 10 * time.Second},
		{"OpcUa.WriteMode", c.OpcUa.WriteMode, "optimistic"},
		{"OpcUa.WriteTimeout", c.OpcUa.WriteTimeout, 2 * time.Second},
		{"Deployment.PollInterval", c.Deployment.PollInterval, 5 * time.Second},
		{"Http.MaxBodyBytes", c.Http.MaxBodyBytes, 1 << 20},
		{"ConfigDb.Provider", c.ConfigDb.Provider, "sqlite"},
		{"ConfigDb.ConnectionString", c.ConfigDb.ConnectionString, "file:otopcua.db"},
		{"LocalDb.Path", c.LocalDb.Path, "otopcua-local.db"},
		{"Http.Port", c.Http.Port, 8080},
		{"Http.Hostname", c.Http.Hostname, "0.0.0.0"},
		{"Http.Addr", c.Http.Addr(), "0.0.0.0:8080"},
		{"Telemetry.LogLevel", c.Telemetry.LogLevel, "info"},
		{"Telemetry.LogFormat", c.Telemetry.LogFormat, "json"},
		{"Telemetry.MetricsEnabled", c.Telemetry.MetricsEnabled, true},
		{"NodeID", c.Cluster.NodeID(), "plc-host:4053"},
		{"IsOwnSeed", c.Cluster.IsOwnSeed(), true},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
}

func TestDefaultHostnameFallsBackToLocalhost(t *testing.T) {
	old := hostname
	hostname = func() (string, error) { return "", errors.New("no hostname") }
	defer func() { hostname = old }()
	c := Default()
	if c.Cluster.PublicHostname != "localhost" || c.OpcUa.ApplicationUri != "urn:localhost:otopcua" {
		t.Fatalf("PublicHostname %q ApplicationUri %q, want localhost", c.Cluster.PublicHostname, c.OpcUa.ApplicationUri)
	}
}

func TestLoadWithoutFileUsesDefaultsAndEnvironment(t *testing.T) {
	fixedHostname(t, "h")
	c, err := Load("", []string{"OTOPCUA_OPCUA__PORT=4999"})
	if err != nil {
		t.Fatal(err)
	}
	if c.OpcUa.Port != 4999 || c.Cluster.Port != 4053 {
		t.Fatalf("ports %d/%d", c.OpcUa.Port, c.Cluster.Port)
	}
}

const pairNodeA = `{
  "Cluster": {
    "Hostname": "127.0.0.1",
    "Port": 4053,
    "PublicHostname": "node-a.lan",
    "SeedNodes": ["akka.tcp://otopcua@node-a.lan:4053", "node-b.lan:4053"],
    "Roles": ["Admin", "DRIVER", "driver"],
    "SelfFormAfter": "00:00:20",
    "SplitBrainResolverStrategy": "Keep-Oldest",
    "AutoDownUnreachableAfter": "00:00:30",
    "StableAfter": "20s",
    "DownIfAlone": false,
    "FailureDetector": {"HeartbeatInterval": "00:00:00.500", "AcceptableHeartbeatPause": "5s", "Threshold": 12}
  },
  "Node": {"ClusterId": "site-a.line_1"},
  "OpcUa": {
    "Port": 4841,
    "ApplicationUri": "urn:node-a:otopcua",
    "ApplicationName": "Line 1 A",
    "PeerApplicationUris": ["urn:node-b:otopcua"],
    "PeerDiscoveryUrls": ["opc.tcp://node-b.lan:4840"],
    "RedundancySupport": "hot",
    "Security": {"Policies": ["none"]},
    "Limits": {"MaxSessions": 20, "UnactivatedSessionTimeout": "00:00:03"}
  },
  "ConfigDb": {"Provider": "SqlServer", "ConnectionString": "sqlserver://sa@db/otopcua"},
  "LocalDb": {"Path": "/var/lib/otopcua/local.db"},
  "Http": {"Port": 0},
  "Telemetry": {"LogLevel": "Warning", "LogFormat": "TEXT", "MetricsEnabled": false}
}`

func TestLoadFullFile(t *testing.T) {
	c := mustLoad(t, pairNodeA)
	checks := []struct {
		name      string
		got, want any
	}{
		{"Hostname", c.Cluster.Hostname, "127.0.0.1"},
		{"SeedAddresses", c.Cluster.SeedAddresses(), []SeedAddress{{"node-a.lan", 4053}, {"node-b.lan", 4053}}},
		{"Roles", c.Cluster.Roles, []string{"admin", "driver"}},
		{"SelfFormAfter", c.Cluster.SelfFormAfter, 20 * time.Second},
		{"Strategy", c.Cluster.SplitBrainResolverStrategy, "keep-oldest"},
		{"AutoDown", c.Cluster.AutoDownUnreachableAfter, 30 * time.Second},
		{"StableAfter", c.Cluster.StableAfter, 20 * time.Second},
		{"DownIfAlone", c.Cluster.DownIfAlone, false},
		{"DownOnConnectionRefused (keep-oldest default)", c.Cluster.DownOnConnectionRefusedEnabled(), false},
		{"Heartbeat", c.Cluster.FailureDetector.HeartbeatInterval, 500 * time.Millisecond},
		{"Pause", c.Cluster.FailureDetector.AcceptableHeartbeatPause, 5 * time.Second},
		{"Threshold", c.Cluster.FailureDetector.Threshold, 12.0},
		{"ClusterId", c.Node.ClusterId, "site-a.line_1"},
		{"OpcUa.Port", c.OpcUa.Port, 4841},
		{"ApplicationName", c.OpcUa.ApplicationName, "Line 1 A"},
		{"Peers", c.OpcUa.PeerApplicationUris, []string{"urn:node-b:otopcua"}},
		{"Discovery", c.OpcUa.PeerDiscoveryUrls, []string{"opc.tcp://node-b.lan:4840"}},
		{"RedundancySupport", c.OpcUa.RedundancySupport, "Hot"},
		{"Policies", c.OpcUa.Security.Policies, []string{"None:None"}},
		{"Limits.MaxSessions", c.OpcUa.Limits.MaxSessions, 20},
		{"Limits.UnactivatedSessionTimeout", c.OpcUa.Limits.UnactivatedSessionTimeout, 3 * time.Second},
		{"Provider", c.ConfigDb.Provider, "sqlserver"},
		{"ConnectionString", c.ConfigDb.ConnectionString, "sqlserver://sa@db/otopcua"},
		{"LocalDb", c.LocalDb.Path, "/var/lib/otopcua/local.db"},
		{"Http.Port", c.Http.Port, 0},
		{"Http.Addr", c.Http.Addr(), ""},
		{"BindAddr", c.Cluster.BindAddr(), "127.0.0.1:4053"},
		{"LogLevel", c.Telemetry.LogLevel, "warn"},
		{"LogFormat", c.Telemetry.LogFormat, "text"},
		{"MetricsEnabled", c.Telemetry.MetricsEnabled, false},
		{"IsOwnSeed", c.Cluster.IsOwnSeed(), true},
		{"NodeID", c.Cluster.NodeID(), "node-a.lan:4053"},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
}

func TestKeysAreCaseInsensitiveAndFlatKeysNest(t *testing.T) {
	fixedHostname(t, "h")
	c := mustLoad(t, `{
		"opcua": {"PORT": 4841},
		"OpcUa:Limits:MaxSessions": 7,
		"http.port": 8090,
		"cLuStEr": {"publichostname": "node-x", "FailureDetector:Threshold": 9},
		"Cluster": {"port": 4055}
	}`)
	if c.OpcUa.Port != 4841 || c.OpcUa.Limits.MaxSessions != 7 || c.Http.Port != 8090 {
		t.Errorf("OpcUa.Port %d MaxSessions %d Http.Port %d", c.OpcUa.Port, c.OpcUa.Limits.MaxSessions, c.Http.Port)
	}
	if c.Cluster.PublicHostname != "node-x" || c.Cluster.Port != 4055 || c.Cluster.FailureDetector.Threshold != 9 {
		t.Errorf("Cluster %+v", c.Cluster)
	}
	if c.OpcUa.ApplicationUri != "urn:node-x:otopcua" {
		t.Errorf("ApplicationUri = %q, want it derived from the loaded PublicHostname", c.OpcUa.ApplicationUri)
	}
}

func TestCommentsAndTrailingCommas(t *testing.T) {
	c := mustLoad(t, `{
		// the pair's first node
		"OpcUa": {
			"Port": 4841, /* not 4840: node-b uses it */
			"ApplicationName": "a // not a comment, /* nor this */",
		},
		"Cluster": {"SeedNodes": ["h:4053",],},
	}`)
	if c.OpcUa.Port != 4841 || c.OpcUa.ApplicationName != "a // not a comment, /* nor this */" {
		t.Fatalf("OpcUa %+v", c.OpcUa)
	}
	if !reflect.DeepEqual(c.Cluster.SeedNodes, []string{"h:4053"}) {
		t.Fatalf("SeedNodes %v", c.Cluster.SeedNodes)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	file := `{"Cluster": {"PublicHostname": "a", "SeedNodes": ["a:4053", "b:4053"], "Roles": ["admin"]},
	          "OpcUa": {"PeerApplicationUris": ["urn:b", "urn:c"]}}`
	c := mustLoad(t, file,
		"PATH=/usr/bin",
		"OTOPCUA_OPCUA__PORT=4841",
		"OTOPCUA_CLUSTER__SEEDNODES__0=akka.tcp://otopcua@a2:4053",
		"OTOPCUA_OPCUA__PEERAPPLICATIONURIS=urn:x, urn:y",
		"OTOPCUA_CLUSTER__FAILUREDETECTOR__THRESHOLD=12.5",
		"OTOPCUA_CLUSTER__SELFFORMAFTER=00:00:30",
		"OTOPCUA_CLUSTER__DOWNIFALONE=False",
		"OTOPCUA_NODE__CLUSTERID=line-2",
		"OTOPCUA_ROLES=driver",
		"OTOPCUA_SOMETHINGELSE=ignored",
		"OTOPCUA_OTHER__KEY=ignored",
	)
	checks := []struct {
		name      string
		got, want any
	}{
		{"OpcUa.Port", c.OpcUa.Port, 4841},
		{"SeedNodes (element 0 replaced, 1 kept)", c.Cluster.SeedNodes, []string{"akka.tcp://otopcua@a2:4053", "b:4053"}},
		{"Peers (comma list replaces)", c.OpcUa.PeerApplicationUris, []string{"urn:x", "urn:y"}},
		{"Threshold", c.Cluster.FailureDetector.Threshold, 12.5},
		{"SelfFormAfter", c.Cluster.SelfFormAfter, 30 * time.Second},
		{"DownIfAlone", c.Cluster.DownIfAlone, false},
		{"ClusterId", c.Node.ClusterId, "line-2"},
		{"Roles", c.Cluster.Roles, []string{"driver"}},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
}

func TestRolesVariableWinsOverClusterRoles(t *testing.T) {
	c := mustLoad(t, `{}`, "OTOPCUA_ROLES=admin", "OTOPCUA_CLUSTER__ROLES=driver")
	if !reflect.DeepEqual(c.Cluster.Roles, []string{"admin"}) {
		t.Fatalf("Roles = %v, want [admin]", c.Cluster.Roles)
	}
	c = mustLoad(t, `{}`, "OTOPCUA_CLUSTER__ROLES__1=admin")
	if !reflect.DeepEqual(c.Cluster.Roles, []string{"admin"}) {
		t.Fatalf("Roles = %v, want the default [admin driver] with element 1 replaced, repeats dropped", c.Cluster.Roles)
	}
	c = mustLoad(t, `{}`, "OTOPCUA_ROLES=")
	if len(c.Cluster.Roles) != 0 || c.Cluster.HasRole(RoleDriver) {
		t.Fatalf("Roles = %v, want none", c.Cluster.Roles)
	}
}

func TestSelfFormAfterForms(t *testing.T) {
	tests := []struct {
		json    string
		want    time.Duration
		enabled bool
	}{
		{`"00:00:05"`, 5 * time.Second, true},
		{`"250ms"`, 250 * time.Millisecond, true},
		{`null`, 0, false},
		{`"00:00:00"`, 0, false},
		{`"-00:00:01"`, 0, false},
		{`"-5s"`, 0, false},
	}
	for _, tc := range tests {
		c := mustLoad(t, `{"Cluster": {"SelfFormAfter": `+tc.json+`}}`)
		if c.Cluster.SelfFormAfter != tc.want || c.Cluster.SelfFormEnabled() != tc.enabled {
			t.Errorf("SelfFormAfter %s: got %v enabled=%v, want %v enabled=%v", tc.json, c.Cluster.SelfFormAfter, c.Cluster.SelfFormEnabled(), tc.want, tc.enabled)
		}
	}
}

func TestNullKeepsDefaultElsewhere(t *testing.T) {
	c := mustLoad(t, `{"Cluster": {"Port": null, "StableAfter": null, "DownOnConnectionRefused": null}, "OpcUa": null}`)
	if c.Cluster.Port != 4053 || c.Cluster.StableAfter != 15*time.Second || c.OpcUa.Port != 4840 || !c.Cluster.DownOnConnectionRefusedEnabled() {
		t.Fatalf("null did not keep defaults: %+v", c.Cluster)
	}
}

func TestDownOnConnectionRefused(t *testing.T) {
	for _, tc := range []struct {
		json string
		want bool
	}{
		{`{"Cluster": {"SplitBrainResolverStrategy": "auto-down"}}`, true},
		{`{"Cluster": {"SplitBrainResolverStrategy": "keep-majority"}}`, false},
		{`{"Cluster": {"SplitBrainResolverStrategy": "keep-majority", "DownOnConnectionRefused": true}}`, true},
		{`{"Cluster": {"DownOnConnectionRefused": false}}`, false},
	} {
		if got := mustLoad(t, tc.json).Cluster.DownOnConnectionRefusedEnabled(); got != tc.want {
			t.Errorf("%s: DownOnConnectionRefused = %v, want %v", tc.json, got, tc.want)
		}
	}
}

func TestAkkaConfigPathResolvedAgainstConfigDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "akka.conf"), []byte("akka {}"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "appsettings.json")
	if err := os.WriteFile(p, []byte(`{"Cluster": {"AkkaConfigPath": "akka.conf"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.AkkaConfigPath != filepath.Join(dir, "akka.conf") {
		t.Fatalf("AkkaConfigPath = %q", c.Cluster.AkkaConfigPath)
	}
}

func TestSyntaxErrorNamesFileAndLine(t *testing.T) {
	p := writeFile(t, "broken.json", "{\n  \"Cluster\": {\n    \"Port\": 4053\n    \"Roles\": []\n  }\n}\n")
	_, err := Load(p, nil)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *SyntaxError", err)
	}
	if se.File != p || se.Line != 4 {
		t.Fatalf("SyntaxError at %s:%d:%d, want %s line 4", se.File, se.Line, se.Column, p)
	}
	if !strings.Contains(err.Error(), p+":4:") {
		t.Fatalf("message %q does not name file and line", err)
	}
	for _, body := range []string{"", "[]", `{"a": }`, "{\"Cluster\": {/* open"} {
		if _, err := LoadBytes("x.json", []byte(body), nil); !errors.As(err, &se) {
			t.Errorf("LoadBytes(%q) = %v, want *SyntaxError", body, err)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.json"), nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestStrategyMessageMatchesDocumentedForm(t *testing.T) {
	_, err := Load(writeFile(t, "a.json", `{"Cluster": {"SplitBrainResolverStrategy": "keep-newest"}}`), nil)
	want := `Cluster:SplitBrainResolverStrategy = "keep-newest": accepted values are auto-down, keep-oldest, keep-majority, static-quorum, lease-majority`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant a line %s", err, want)
	}
}

func TestValidationCases(t *testing.T) {
	tests := []struct {
		name     string
		json     string
		env      []string
		key      string
		value    string
		accepted string // substring of Item.Accepted
		source   string
	}{
		{"unknown strategy", `{"Cluster": {"SplitBrainResolverStrategy": "keep-newest"}}`, nil,
			"Cluster:SplitBrainResolverStrategy", "keep-newest", "auto-down, keep-oldest, keep-majority, static-quorum, lease-majority", ""},
		{"cluster port too large", `{"Cluster": {"Port": 70000}}`, nil, "Cluster:Port", "70000", "1..65535", ""},
		{"cluster port zero", `{"Cluster": {"Port": 0}}`, nil, "Cluster:Port", "0", "1..65535", ""},
		{"opcua port negative", `{"OpcUa": {"Port": -1}}`, nil, "OpcUa:Port", "-1", "1..65535", ""},
		{"http port too large", `{"Http": {"Port": 65536}}`, nil, "Http:Port", "65536", "0 (disabled) or 1..65535", ""},
		{"port not a number", `{"OpcUa": {"Port": "abc"}}`, nil, "OpcUa:Port", "abc", "1..65535", ""},
		{"port fractional", `{"OpcUa": {"Port": 4840.5}}`, nil, "OpcUa:Port", "4840.5", "1..65535", ""},
		{"port from env", `{}`, []string{"OTOPCUA_OPCUA__PORT=x"}, "OpcUa:Port", "x", "1..65535", "OTOPCUA_OPCUA__PORT"},
		{"opcua port = cluster port", `{"OpcUa": {"Port": 4053}}`, nil, "OpcUa:Port", "4053", "not already used by Cluster:Port", ""},
		{"http port = opcua port", `{"Http": {"Port": 4840}}`, nil, "Http:Port", "4840", "not already used by OpcUa:Port", ""},
		{"seed does not parse", `{"Cluster": {"SeedNodes": ["a:4053", "node-b"]}}`, nil, "Cluster:SeedNodes:1", "node-b", "host:port or akka.tcp://otopcua@host:port", ""},
		{"seed from env", `{}`, []string{"OTOPCUA_CLUSTER__SEEDNODES=a:1,b"}, "Cluster:SeedNodes:1", "b", "host:port", "OTOPCUA_CLUSTER__SEEDNODES"},
		{"no seeds but peers", `{"OpcUa": {"PeerApplicationUris": ["urn:b"]}}`, nil, "Cluster:SeedNodes", "", "one or more seed addresses", ""},
		{"duplicate peer", `{"Cluster": {"SeedNodes": ["a:1"]}, "OpcUa": {"PeerApplicationUris": ["urn:b", "urn:c", "urn:b"]}}`, nil,
			"OpcUa:PeerApplicationUris:2", "urn:b", "already OpcUa:PeerApplicationUris:0", ""},
		{"peer is self", `{"Cluster": {"SeedNodes": ["a:1"]}, "OpcUa": {"ApplicationUri": "urn:a", "PeerApplicationUris": ["urn:a"]}}`, nil,
			"OpcUa:PeerApplicationUris:0", "urn:a", "not this node's own OpcUa:ApplicationUri", ""},
		{"peer not a URI", `{"Cluster": {"SeedNodes": ["a:1"]}, "OpcUa": {"PeerApplicationUris": ["node b"]}}`, nil,
			"OpcUa:PeerApplicationUris:0", "node b", "absolute URIs", ""},
		{"own URI not a URI", `{"OpcUa": {"ApplicationUri": "no-scheme"}}`, nil, "OpcUa:ApplicationUri", "no-scheme", "absolute URIs", ""},
		{"discovery url", `{"OpcUa": {"PeerDiscoveryUrls": ["http://b:4840"]}}`, nil, "OpcUa:PeerDiscoveryUrls:0", "http://b:4840", "opc.tcp://", ""},
		{"unknown role", `{"Cluster": {"Roles": ["admin", "drvier"]}}`, nil, "Cluster:Roles:1", "drvier", "accepted values are admin, driver", ""},
		{"unknown role from OTOPCUA_ROLES", `{}`, []string{"OTOPCUA_ROLES=admin,web"}, "Cluster:Roles:1", "web", "admin, driver", "OTOPCUA_ROLES"},
		{"bad duration", `{"Cluster": {"StableAfter": "15"}}`, nil, "Cluster:StableAfter", "15", "00:00:10", ""},
		{"duration as number", `{"Cluster": {"SelfFormAfter": 10}}`, nil, "Cluster:SelfFormAfter", "10", "10s", ""},
		{"zero duration", `{"Cluster": {"AutoDownUnreachableAfter": "00:00:00"}}`, nil, "Cluster:AutoDownUnreachableAfter", "0s", "greater than 0", ""},
		{"heartbeat negative", `{"Cluster": {"FailureDetector": {"HeartbeatInterval": "-1s"}}}`, nil, "Cluster:FailureDetector:HeartbeatInterval", "-1s", "greater than 0", ""},
		{"threshold zero", `{"Cluster": {"FailureDetector": {"Threshold": 0}}}`, nil, "Cluster:FailureDetector:Threshold", "0", "greater than 0", ""},
		{"bad redundancy support", `{"OpcUa": {"RedundancySupport": "Cold"}}`, nil, "OpcUa:RedundancySupport", "Cold", "accepted values are Warm, Hot, HotAndMirrored", ""},
		{"security policy", `{"OpcUa": {"Security": {"Policies": ["Basic256Sha256"]}}}`, nil, "OpcUa:Security:Policies:0", "Basic256Sha256", "accepted values are None:None, Basic256Sha256:Sign, Basic256Sha256:SignAndEncrypt", ""},
		{"security policy mode", `{"OpcUa": {"Security": {"Policies": ["Basic256Sha256:None"]}}}`, nil, "OpcUa:Security:Policies:0", "Basic256Sha256:None", "Aes256_Sha256_RsaPss:SignAndEncrypt", ""},
		{"security policy twice", `{"OpcUa": {"Security": {"Policies": ["basic256sha256:signandencrypt", "Basic256Sha256:SignAndEncrypt"]}}}`, nil, "OpcUa:Security:Policies:1", "Basic256Sha256:SignAndEncrypt", "already OpcUa:Security:Policies:0", ""},
		{"no security policy", `{"OpcUa": {"Security": {"Policies": []}}}`, nil, "OpcUa:Security:Policies", "", "at least one policy", ""},
		{"max sessions", `{"OpcUa": {"Limits": {"MaxSessions": 0}}}`, nil, "OpcUa:Limits:MaxSessions", "0", "≥ 1", ""},
		{"sessions per address", `{"OpcUa": {"Limits": {"MaxSessionsPerAddress": -1}}}`, nil, "OpcUa:Limits:MaxSessionsPerAddress", "-1", "≥ 1", ""},
		{"password checks per address", `{"OpcUa": {"Limits": {"MaxPasswordChecksPerAddress": 0}}}`, nil, "OpcUa:Limits:MaxPasswordChecksPerAddress", "0", "≥ 1", ""},
		{"secure channel opens per address", `{"OpcUa": {"Limits": {"MaxSecureChannelOpensPerAddress": 0}}}`, nil, "OpcUa:Limits:MaxSecureChannelOpensPerAddress", "0", "≥ 1", ""},
		{"token renewals per address", `{"OpcUa": {"Limits": {"MaxTokenRenewalsPerAddress": -2}}}`, nil, "OpcUa:Limits:MaxTokenRenewalsPerAddress", "-2", "≥ 1", ""},
		{"replay window", `{"OpcUa": {"Limits": {"SecureChannelReplayWindow": "0s"}}}`, nil, "OpcUa:Limits:SecureChannelReplayWindow", "0s", "greater than 0", ""},
		{"unactivated timeout", `{"OpcUa": {"Limits": {"UnactivatedSessionTimeout": "0s"}}}`, nil, "OpcUa:Limits:UnactivatedSessionTimeout", "0s", "greater than 0", ""},
		{"response size", `{"OpcUa": {"Limits": {"MaxResponseSize": 100}}}`, nil, "OpcUa:Limits:MaxResponseSize", "100", "≥ 65536", ""},
		{"default session timeout", `{"OpcUa": {"Limits": {"DefaultSessionTimeout": "2h"}}}`, nil, "OpcUa:Limits:DefaultSessionTimeout", "2h0m0s", "between OpcUa:Limits:MinSessionTimeout", ""},
		{"old max sessions key", `{"OpcUa": {"MaxSessions": 5}}`, nil, "OpcUa:MaxSessions", "5", "", ""},
		{"http body", `{"Http": {"MaxBodyBytes": 10}}`, nil, "Http:MaxBodyBytes", "10", "≥ 1024", ""},
		{"drain too long", `{"Redundancy": {"ManualFailoverDrain": "00:01:01"}}`, nil, "Redundancy:ManualFailoverDrain", "1m1s", "from 0s to 60s", ""},
		{"drain negative", `{"Redundancy": {"ManualFailoverDrain": "-1s"}}`, nil, "Redundancy:ManualFailoverDrain", "-1s", "from 0s to 60s", ""},
		{"device health mode", `{"Redundancy": {"DeviceHealth": "always"}}`, nil, "Redundancy:DeviceHealth", "always", "accepted values are off, level, failover", ""},
		{"device failover after zero", `{"Redundancy": {"DeviceFailoverAfter": "0s"}}`, nil, "Redundancy:DeviceFailoverAfter", "0s", "from 1s to 10m", ""},
		{"device failover after too long", `{"Redundancy": {"DeviceFailoverAfter": "00:10:01"}}`, nil, "Redundancy:DeviceFailoverAfter", "10m1s", "from 1s to 10m", ""},
		{"device failover hold negative", `{"Redundancy": {"DeviceFailoverHold": "-1s"}}`, nil, "Redundancy:DeviceFailoverHold", "-1s", "from 0s to 1h", ""},
		{"device failover hold too long", `{"Redundancy": {"DeviceFailoverHold": "01:00:01"}}`, nil, "Redundancy:DeviceFailoverHold", "1h0m1s", "from 0s to 1h", ""},
		{"http read timeout", `{"Http": {"ReadTimeout": "-1s"}}`, nil, "Http:ReadTimeout", "-1s", "greater than 0", ""},
		{"write mode", `{"OpcUa": {"WriteMode": "eventually"}}`, nil, "OpcUa:WriteMode", "eventually", "optimistic, confirmed, forward", ""},
		{"write timeout", `{"OpcUa": {"WriteTimeout": "0s"}}`, nil, "OpcUa:WriteTimeout", "0s", "greater than 0", ""},
		{"deployment poll", `{"Deployment": {"PollInterval": "0s"}}`, nil, "Deployment:PollInterval", "0s", "greater than 0", ""},
		{"unknown provider", `{"ConfigDb": {"Provider": "oracle"}}`, nil, "ConfigDb:Provider", "oracle", "accepted values are sqlite, sqlserver, postgres", ""},
		{"sqlserver without connection string", `{"ConfigDb": {"Provider": "sqlserver"}}`, nil, "ConfigDb:ConnectionString", "", "required for sqlserver", ""},
		{"empty local db", `{"LocalDb": {"Path": ""}}`, nil, "LocalDb:Path", "", "file paths", ""},
		{"empty history path", `{"History": {"Path": ""}}`, nil, "History:Path", "", "directory paths", ""},
		{"history size too small", `{"History": {"MaxSizeMiB": 15}}`, nil, "History:MaxSizeMiB", "15", "accepted values are 0 (no limit) or MiB from 16 to 16777216 (16 TiB)", ""},
		{"history size negative", `{"History": {"MaxSizeMiB": -1}}`, nil, "History:MaxSizeMiB", "-1", "0 (no limit) or MiB from 16", ""},
		{"history size too large", `{"History": {"MaxSizeMiB": 16777217}}`, nil, "History:MaxSizeMiB", "16777217", "to 16777216 (16 TiB)", ""},
		{"empty ClusterId", `{"Node": {"ClusterId": ""}}`, nil, "Node:ClusterId", "", "letters, digits", ""},
		{"ClusterId with space", `{"Node": {"ClusterId": "site a"}}`, nil, "Node:ClusterId", "site a", "letters, digits", ""},
		{"static-quorum without size", `{"Cluster": {"SplitBrainResolverStrategy": "static-quorum"}}`, nil, "Cluster:StaticQuorumSize", "0", "required by static-quorum", ""},
		{"unknown key", `{"Cluster": {"SeedNode": ["a:1"]}}`, nil, "Cluster:SeedNode", `["a:1"]`, "unknown key (did you mean Cluster:SeedNodes?)", ""},
		{"unknown flat key", `{"OpcUa:Prot": 1}`, nil, "OpcUa:Prot", "1", "unknown key (did you mean OpcUa:Port?)", ""},
		{"unknown section", `{"Clustr": {}}`, nil, "Clustr", "{}", "unknown section (did you mean Cluster?); accepted sections are Cluster, Node", ""},
		{"unknown nested key", `{"Cluster": {"FailureDetector": {"Treshold": 5}}}`, nil, "Cluster:FailureDetector:Treshold", "5", "did you mean Cluster:FailureDetector:Threshold?", ""},
		{"unknown key from env", `{}`, []string{"OTOPCUA_OPCUA__PROT=1"}, "OpcUa:prot", "1", "unknown key", "OTOPCUA_OPCUA__PROT"},
		{"env single underscore", `{}`, []string{"OTOPCUA_OPCUA_PORT=4841"}, "OTOPCUA_OPCUA_PORT", "4841", "double underscore", ""},
		{"section not an object", `{"Cluster": 5}`, nil, "Cluster", "5", "sections (JSON objects)", ""},
		{"list not a list", `{"Cluster": {"Roles": {"a": "admin"}}}`, nil, "Cluster:Roles", `{"a":"admin"}`, "lists of text", ""},
		{"bool not a bool", `{"Cluster": {"DownIfAlone": "yes"}}`, nil, "Cluster:DownIfAlone", "yes", "true or false", ""},
		{"akka config missing", `{"Cluster": {"AkkaConfigPath": "missing.conf"}}`, nil, "Cluster:AkkaConfigPath", "", "existing akka.conf", ""},
		{"log level", `{"Telemetry": {"LogLevel": "verbose"}}`, nil, "Telemetry:LogLevel", "verbose", "accepted values are debug, info, warn, error", ""},
		{"log format", `{"Telemetry": {"LogFormat": "xml"}}`, nil, "Telemetry:LogFormat", "xml", "accepted values are json, text", ""},
		{"public hostname", `{"Cluster": {"PublicHostname": "node a"}}`, nil, "Cluster:PublicHostname", "node a", "host names or IP addresses", ""},
		{"http hostname", `{"Http": {"Hostname": ""}}`, nil, "Http:Hostname", "", "bind addresses", ""},
		{"cluster secret short", `{"Cluster": {"Secret": "short"}}`, nil, "Cluster:Secret", "(hidden, 5 characters)", "secrets of at least 16 characters", ""},
		{"cluster secret short from env", `{}`, []string{"OTOPCUA_CLUSTER__SECRET=0123456789"}, "Cluster:Secret", "(hidden, 10 characters)", "at least 16", "OTOPCUA_CLUSTER__SECRET"},
		{"cluster tls without ca", `{"Cluster": {"Tls": {"CertFile": "n.crt", "KeyFile": "n.key"}}}`, nil, "Cluster:Tls:CaFile", "", "CaFile, CertFile and KeyFile together, or none", ""},
		{"tls cert without key", `{"Http": {"Tls": {"CertFile": "http.crt"}}}`, nil, "Http:Tls:KeyFile", "", "required when Http:Tls:CertFile is set", ""},
		{"tls key without cert", `{"Http": {"Tls": {"KeyFile": "http.key"}}}`, nil, "Http:Tls:CertFile", "", "required when Http:Tls:KeyFile is set", ""},
		{"tls files missing", `{"Http": {"Tls": {"CertFile": "/nonexistent/http.crt", "KeyFile": "/nonexistent/http.key"}}}`, nil, "Http:Tls:CertFile", "/nonexistent/http.crt", "readable PEM certificate whose private key is Http:Tls:KeyFile", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items := loadItems(t, tc.json, tc.env...)
			for _, it := range items {
				if it.Key != tc.key {
					continue
				}
				if tc.value != "" && it.Value != tc.value || tc.value == "" && tc.key != "Cluster:AkkaConfigPath" && it.Value != "" {
					t.Errorf("%s value = %q, want %q", it.Key, it.Value, tc.value)
				}
				if !strings.Contains(it.Accepted, tc.accepted) {
					t.Errorf("%s accepted = %q, want it to contain %q", it.Key, it.Accepted, tc.accepted)
				}
				if it.Source != tc.source {
					t.Errorf("%s source = %q, want %q", it.Key, it.Source, tc.source)
				}
				if len(items) != 1 {
					t.Errorf("got %d items, want only this one: %v", len(items), items)
				}
				return
			}
			t.Fatalf("no item for %s in %v", tc.key, items)
		})
	}
}

func TestHTTPTLSPairLoads(t *testing.T) {
	cert, key := testcert.Write(t)
	body := fmt.Sprintf(`{"Http": {"Tls": {"CertFile": %q, "KeyFile": %q}}}`, cert, key)
	c, err := Load(writeFile(t, "appsettings.json", body), nil)
	if err != nil {
		t.Fatalf("a valid certificate and key: %v", err)
	}
	if !c.Http.Tls.Enabled() || c.Http.Tls.CertFile != cert {
		t.Fatalf("Http:Tls = %+v", c.Http.Tls)
	}
	items := loadItems(t, body, "OTOPCUA_HTTP__TLS__CERTFILE="+key)
	if len(items) != 1 || items[0].Key != "Http:Tls:CertFile" || items[0].Value != key {
		t.Fatalf("the key file given as the certificate (environment): %v, want one Http:Tls:CertFile item", items)
	}
	c = Default()
	for host, want := range map[string]bool{"127.0.0.1": true, "127.0.0.2": true, "::1": true, "localhost": true, "0.0.0.0": false, "10.0.0.5": false, "plant-a": false} {
		c.Http.Hostname = host
		if c.Http.Loopback() != want {
			t.Errorf("Http:Hostname %q: Loopback() = %v, want %v", host, !want, want)
		}
	}
}

func TestValidationCollectsEveryError(t *testing.T) {
	items := loadItems(t, `{
		"Cluster": {"Port": 0, "SplitBrainResolverStrategy": "keep-newest", "SeedNode": [], "Roles": ["web"]},
		"Node": {"ClusterId": ""},
		"OpcUa": {"RedundancySupport": "cold"},
		"ConfigDb": {"Provider": "oracle"}
	}`, "OTOPCUA_HTTP__PORT=99999")
	want := []string{
		`Cluster:SeedNode = []: unknown key (did you mean Cluster:SeedNodes?)`,
		`Cluster:Port = "0": accepted values are 1..65535`,
		`Cluster:Roles:0 = "web": accepted values are admin, driver`,
		`Cluster:SplitBrainResolverStrategy = "keep-newest": accepted values are auto-down, keep-oldest, keep-majority, static-quorum, lease-majority`,
		`Node:ClusterId = "": accepted values are non-empty names`,
		`OpcUa:RedundancySupport = "cold": accepted values are Warm, Hot, HotAndMirrored`,
		`ConfigDb:Provider = "oracle": accepted values are sqlite, sqlserver, postgres`,
		`Http:Port = "99999" (from OTOPCUA_HTTP__PORT): accepted values are 0 (disabled) or 1..65535`,
	}
	if len(items) != len(want) {
		t.Fatalf("got %d items, want %d:\n%v", len(items), len(want), items)
	}
	for i, w := range want {
		if !strings.HasPrefix(items[i].String(), w) {
			t.Errorf("item %d = %s\nwant prefix %s", i, items[i], w)
		}
	}
	err := &ValidationError{File: "f.json", Items: items}
	if !strings.HasPrefix(err.Error(), "invalid configuration in f.json: 8 problems\n  ") {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestValidateOnBuiltConfig(t *testing.T) {
	c := Default()
	c.Cluster.Port, c.OpcUa.Port, c.Http.Port = 5000, 5000, 5000
	err := c.Validate()
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Items) != 2 {
		t.Fatalf("Validate = %v, want two collisions", err)
	}
	if ve.Items[0].Key != "OpcUa:Port" || ve.Items[1].Key != "Http:Port" {
		t.Fatalf("items %v", ve.Items)
	}
}

func TestWarnings(t *testing.T) {
	c := mustLoad(t, `{"Cluster": {"PublicHostname": "c", "SeedNodes": ["a:4053", "b:4053"], "SplitBrainResolverStrategy": "keep-oldest"}}`)
	w := strings.Join(c.Warnings(), "\n")
	if !strings.Contains(w, "not in its own Cluster:SeedNodes") || !strings.Contains(w, "keep-oldest on a two-node pair") {
		t.Fatalf("warnings %q", w)
	}
	c = mustLoad(t, `{"Cluster": {"Hostname": "127.0.0.1", "PublicHostname": "a", "SeedNodes": ["a:4053", "b:4053"]}}`)
	if w := c.Warnings(); len(w) != 0 {
		t.Fatalf("warnings %q, want none", w)
	}
}

func TestSummary(t *testing.T) {
	c := mustLoad(t, pairNodeA)
	want := "node=node-a.lan:4053 cluster-id=site-a.line_1 roles=admin,driver seeds=2 strategy=keep-oldest opcua=4841 uri=urn:node-a:otopcua redundancy=Hot peers=1 http=disabled configdb=sqlserver cluster-tls=off cluster-secret=(none)"
	if got := c.Summary(); got != want {
		t.Fatalf("Summary\n got %s\nwant %s", got, want)
	}
}

func TestSyntaxErrorColumn(t *testing.T) {
	_, err := LoadBytes("c.json", []byte("{\n  \"OpcUa\" {}\n}"), nil)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 || se.Column != 11 {
		t.Fatalf("err = %#v, want line 2 column 11 (the '{')", err)
	}
}

func TestItemString(t *testing.T) {
	for _, tc := range []struct {
		it   Item
		want string
	}{
		{Item{Key: "Cluster:Port", Value: "0", Accepted: "accepted values are 1..65535"}, `Cluster:Port = "0": accepted values are 1..65535`},
		{Item{Key: "Cluster:SeedNode", Value: `["a:1"]`, Accepted: "unknown key"}, `Cluster:SeedNode = ["a:1"]: unknown key`},
		{Item{Key: "OpcUa:Port", Value: "x", Accepted: "a", Source: "OTOPCUA_OPCUA__PORT"}, `OpcUa:Port = "x" (from OTOPCUA_OPCUA__PORT): a`},
		{Item{Key: "K", Value: "[not json", Accepted: "a"}, `K = "[not json": a`},
	} {
		if got := tc.it.String(); got != tc.want {
			t.Errorf("String() = %s, want %s", got, tc.want)
		}
	}
}

// TestManualFailoverDrainBounds: 0 s (leave at once) and 60 s are the
// ends of the accepted range, in either duration notation, and the
// environment sets the key too.
func TestManualFailoverDrainBounds(t *testing.T) {
	for json, want := range map[string]time.Duration{`"0s"`: 0, `"00:01:00"`: time.Minute, `"500ms"`: 500 * time.Millisecond} {
		c := mustLoad(t, `{"Redundancy": {"ManualFailoverDrain": `+json+`}}`)
		if c.Redundancy.ManualFailoverDrain != want {
			t.Errorf("ManualFailoverDrain %s = %v, want %v", json, c.Redundancy.ManualFailoverDrain, want)
		}
	}
	c := mustLoad(t, `{}`, "OTOPCUA_Redundancy__ManualFailoverDrain=00:00:07")
	if c.Redundancy.ManualFailoverDrain != 7*time.Second {
		t.Errorf("from the environment: %v, want 7s", c.Redundancy.ManualFailoverDrain)
	}
}

func TestClusterTLSFilesMustLoad(t *testing.T) {
	ca := testcert.NewCA(t, "cluster ca")
	cert, key := ca.Node(t, "a")
	good := fmt.Sprintf(`{"Cluster": {"Tls": {"CaFile": %q, "CertFile": %q, "KeyFile": %q}}}`, ca.File, cert, key)
	c := mustLoad(t, good)
	if !c.Cluster.Tls.Enabled() || c.Cluster.Tls.CaFile != ca.File {
		t.Fatalf("Cluster:Tls = %+v", c.Cluster.Tls)
	}
	// The key given as the CA, the CA given as the key.
	for _, tc := range []struct{ caFile, keyFile, key, value string }{
		{key, key, "Cluster:Tls:CaFile", key},
		{ca.File, ca.File, "Cluster:Tls:CertFile", cert},
		{"/nonexistent/ca.crt", key, "Cluster:Tls:CaFile", "/nonexistent/ca.crt"},
	} {
		items := loadItems(t, fmt.Sprintf(`{"Cluster": {"Tls": {"CaFile": %q, "CertFile": %q, "KeyFile": %q}}}`, tc.caFile, cert, tc.keyFile))
		if len(items) != 1 || items[0].Key != tc.key || items[0].Value != tc.value {
			t.Errorf("CaFile %s KeyFile %s: %v, want one %s item naming %s", tc.caFile, tc.keyFile, items, tc.key, tc.value)
		}
	}
	items := loadItems(t, `{"Cluster": {"Tls": {"CaFile": "ca.crt"}}}`)
	if len(items) != 2 || items[0].Key != "Cluster:Tls:CertFile" || items[1].Key != "Cluster:Tls:KeyFile" {
		t.Fatalf("CaFile alone: %v, want CertFile and KeyFile items", items)
	}
}

func TestClusterSecretNeverShown(t *testing.T) {
	const secret = "correct-horse-battery-staple"
	c := mustLoad(t, `{}`, "OTOPCUA_CLUSTER__SECRET="+secret)
	if c.Cluster.Secret != secret {
		t.Fatalf("Cluster:Secret from the environment = %q", c.Cluster.Secret)
	}
	if s := c.Summary(); strings.Contains(s, secret) || !strings.Contains(s, "cluster-secret=(set)") {
		t.Fatalf("Summary %q: want cluster-secret=(set) and not the secret", s)
	}
	items := loadItems(t, `{"Cluster": {"Secret": "tooshort-secret"}}`)
	if len(items) != 1 || strings.Contains(items[0].String(), "tooshort-secret") {
		t.Fatalf("items %v: want one item without the value", items)
	}
}

func TestClusterSecurityWarnings(t *testing.T) {
	ca := testcert.NewCA(t, "cluster ca")
	cert, key := ca.Node(t, "a")
	tlsKeys := fmt.Sprintf(`"Tls": {"CaFile": %q, "CertFile": %q, "KeyFile": %q}`, ca.File, cert, key)
	for _, tc := range []struct {
		name, cluster string
		want          []string
	}{
		{"open on every interface", `"Hostname": "0.0.0.0"`, []string{"Cluster:Tls is not set", "Cluster:Secret is not set"}},
		{"tls without secret", `"Hostname": "10.0.0.5", ` + tlsKeys, []string{"Cluster:Secret is not set"}},
		{"secret without tls", `"Hostname": "10.0.0.5", "Secret": "0123456789abcdef"`, []string{"Cluster:Tls is not set"}},
		{"both", `"Hostname": "10.0.0.5", "Secret": "0123456789abcdef", ` + tlsKeys, nil},
		{"loopback", `"Hostname": "127.0.0.1"`, nil},
	} {
		c := mustLoad(t, `{"Cluster": {"PublicHostname": "a", "SeedNodes": ["a:4053", "b:4053"], `+tc.cluster+`}}`)
		w := c.Warnings()
		if len(w) != len(tc.want) {
			t.Errorf("%s: warnings %q, want %d", tc.name, w, len(tc.want))
			continue
		}
		for i, s := range tc.want {
			if !strings.Contains(w[i], s) {
				t.Errorf("%s: warning %q, want it to contain %q", tc.name, w[i], s)
			}
		}
	}
}

// TestSecurityPoliciesAreSpelledCanonically: any case is accepted and
// stored as listed in SecurityPolicies; "None" alone is "None:None".
func TestSecurityPoliciesAreSpelledCanonically(t *testing.T) {
	for in, want := range map[string]string{
		"none":                                 "None:None",
		"NONE:none":                            "None:None",
		"basic256sha256:signandencrypt":        "Basic256Sha256:SignAndEncrypt",
		"AES256_SHA256_RSAPSS:sign":            "Aes256_Sha256_RsaPss:Sign",
		"Aes128_Sha256_RsaOaep:SignAndEncrypt": "Aes128_Sha256_RsaOaep:SignAndEncrypt",
		"Basic256:Sign":                        "Basic256:Sign",
	} {
		if got := canonicalPolicy(in); got != want {
			t.Errorf("canonicalPolicy(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpcUaAuthorization(t *testing.T) {
	d := Default()
	all := []string{RightRead, RightWrite, RightAcknowledge, RightCall}
	want := map[string][]string{"Administrator": all, "Operator": all, "ConfigEditor": {RightRead},
		"Designer": {RightRead}, "Viewer": {RightRead}, "Anonymous": {RightRead}}
	if got := d.OpcUa.Authorization.ByRole(); !reflect.DeepEqual(got, want) {
		t.Fatalf("default OpcUa:Authorization %v, want %v", got, want)
	}
	if !d.OpcUa.Security.AllowAnonymous {
		t.Fatal("OpcUa:Security:AllowAnonymous defaults to false, want true")
	}

	// A role given replaces its list (any case); the others keep theirs.
	cfg := mustLoad(t, `{"OpcUa": {"Security": {"AllowAnonymous": false}, "Authorization": {"Viewer": ["Read", "ACKNOWLEDGE"], "Anonymous": []}}}`)
	got := cfg.OpcUa.Authorization.ByRole()
	if !reflect.DeepEqual(got["Viewer"], []string{RightRead, RightAcknowledge}) || len(got["Anonymous"]) != 0 ||
		!reflect.DeepEqual(got["Operator"], all) || cfg.OpcUa.Security.AllowAnonymous {
		t.Fatalf("loaded %v, AllowAnonymous %v", got, cfg.OpcUa.Security.AllowAnonymous)
	}

	items := loadItems(t, `{"OpcUa": {"Authorization": {"Operator": ["read", "delete"], "Superuser": ["read"]}}}`)
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key+" = "+it.Value+": "+it.Accepted)
	}
	text := strings.Join(keys, "\n")
	for _, w := range []string{"OpcUa:Authorization:Operator:1 = delete: accepted values are read, write, acknowledge, call",
		"Superuser", "Anonymous"} {
		if !strings.Contains(text, w) {
			t.Errorf("problems\n%s\nlack %q", text, w)
		}
	}
}

// TestLeaseKeys: lease-majority without a shared lease stops start-up
// naming Cluster:Lease:Provider; a provider, its TTL and its endpoints are
// checked; the fast path is on by default under lease-majority.
func TestLeaseKeys(t *testing.T) {
	for _, tc := range []struct {
		name, json, key string
	}{
		{"lease-majority without a provider", `{"Cluster": {"SplitBrainResolverStrategy": "lease-majority"}}`, "Cluster:Lease:Provider"},
		{"unknown provider", `{"Cluster": {"Lease": {"Provider": "zookeeper"}}}`, "Cluster:Lease:Provider"},
		{"etcd without endpoints", `{"Cluster": {"SplitBrainResolverStrategy": "lease-majority", "Lease": {"Provider": "etcd"}}}`, "Cluster:Lease:Endpoints"},
		{"bad endpoint", `{"Cluster": {"Lease": {"Provider": "etcd", "Endpoints": ["127.0.0.1:2379"]}}}`, "Cluster:Lease:Endpoints:0"},
		{"ttl too short", `{"Cluster": {"Lease": {"Ttl": "900ms"}}}`, "Cluster:Lease:Ttl"},
		{"hold too long", `{"Redundancy": {"PromotionHold": "31s"}}`, "Redundancy:PromotionHold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := loadItems(t, tc.json)
			found := false
			for _, it := range items {
				found = found || it.Key == tc.key
			}
			if !found {
				t.Fatalf("problems %v, want one for %s", items, tc.key)
			}
		})
	}
	for _, it := range loadItems(t, `{"Cluster": {"Lease": {"Ttl": "900ms"}}}`) {
		if it.Key == "Cluster:Lease:Ttl" && (it.Value != "900ms" || !strings.Contains(it.Accepted, "from 1s to 60s")) {
			t.Fatalf("Cluster:Lease:Ttl problem %+v, want the value 900ms and the accepted 1s to 60s", it)
		}
	}
	if c := mustLoad(t, `{"Cluster": {"SplitBrainResolverStrategy": "lease-majority", "Lease": {"Provider": "configdb", "Ttl": "1s"}}, "ConfigDb": {"Provider": "postgres", "ConnectionString": "postgres://h/db"}}`); c.Cluster.Lease.Ttl != time.Second {
		t.Fatalf("the shortest TTL accepted, 1s: %v", c.Cluster.Lease.Ttl)
	}
	c := mustLoad(t, `{"Cluster": {"SplitBrainResolverStrategy": "lease-majority", "Lease": {"Provider": "ETCD", "Endpoints": ["http://127.0.0.1:2379"]}}}`)
	ad := mustLoad(t, `{}`).Cluster
	if c.Cluster.StableAfter != 500*time.Millisecond || ad.StableAfter != 15*time.Second {
		t.Fatalf("stable-after %v under lease-majority, want 500ms (15s under auto-down: %v)", c.Cluster.StableAfter, ad.StableAfter)
	}
	if fd := c.Cluster.FailureDetector; fd.HeartbeatInterval != 500*time.Millisecond || fd.AcceptableHeartbeatPause != time.Second {
		t.Fatalf("lease-majority failure detector %+v, want heartbeat 500ms, pause 1s", fd)
	}
	if fd := ad.FailureDetector; fd.HeartbeatInterval != time.Second || fd.AcceptableHeartbeatPause != 3*time.Second {
		t.Fatalf("auto-down failure detector %+v, want the reference's heartbeat 1s, pause 3s", fd)
	}
	ex := mustLoad(t, `{"Cluster": {"SplitBrainResolverStrategy": "lease-majority", "Lease": {"Provider": "etcd", "Endpoints": ["http://127.0.0.1:2379"]}, "FailureDetector": {"HeartbeatInterval": "2s"}}}`)
	if ex.Cluster.FailureDetector.HeartbeatInterval != 2*time.Second {
		t.Fatalf("an explicit heartbeat interval %v, want 2s kept", ex.Cluster.FailureDetector.HeartbeatInterval)
	}
	if c.Cluster.Lease.Provider != LeaseEtcd || c.Cluster.Lease.Ttl != DefaultLeaseTtl || !c.Cluster.DownOnConnectionRefusedEnabled() || c.Redundancy.PromotionHold != 250*time.Millisecond {
		t.Fatalf("lease %+v fast path %v hold %v", c.Cluster.Lease, c.Cluster.DownOnConnectionRefusedEnabled(), c.Redundancy.PromotionHold)
	}
}

func TestLeaseWarnings(t *testing.T) {
	c := mustLoad(t, `{"Cluster": {"SplitBrainResolverStrategy": "lease-majority", "Lease": {"Provider": "configdb"}}}`)
	if !strings.Contains(strings.Join(c.Warnings(), "\n"), "Cluster:Lease:Provider is configdb on a SQLite Config DB") {
		t.Fatalf("no warning for a lease on a local SQLite file: %v", c.Warnings())
	}
	c = mustLoad(t, `{"Cluster": {"Lease": {"Provider": "etcd", "Endpoints": ["http://127.0.0.1:2379"]}}}`)
	if !strings.Contains(strings.Join(c.Warnings(), "\n"), "only lease-majority uses the lease") {
		t.Fatalf("no warning for an unused lease: %v", c.Warnings())
	}
}

// TestAnonymousReadWarns: Http:AnonymousRead is off by default, loads from
// the file and from OTOPCUA_HTTP__ANONYMOUSREAD, and warns (naming the key
// and the address) only while it is on and the HTTP port serves.
func TestAnonymousReadWarns(t *testing.T) {
	const loop = `{"Cluster": {"Hostname": "127.0.0.1", "PublicHostname": "a", "SeedNodes": ["a:4053"]}, "Http": {"Hostname": "127.0.0.1", "Port": 8081%s}}`
	for _, tc := range []struct {
		name, extra string
		environ     []string
		wantOn      bool
	}{
		{"default", "", nil, false},
		{"file true", `, "AnonymousRead": true`, nil, true},
		{"file false", `, "AnonymousRead": false`, nil, false},
		{"environment", "", []string{"OTOPCUA_HTTP__ANONYMOUSREAD=true"}, true},
		{"environment wins", `, "AnonymousRead": true`, []string{"OTOPCUA_HTTP__ANONYMOUSREAD=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t, fmt.Sprintf(loop, tc.extra), tc.environ...)
			if c.Http.AnonymousRead != tc.wantOn {
				t.Fatalf("Http:AnonymousRead = %v, want %v", c.Http.AnonymousRead, tc.wantOn)
			}
			w := strings.Join(c.Warnings(), "\n")
			warned := strings.Contains(w, "Http:AnonymousRead is true: 127.0.0.1:8081 serves")
			if warned != tc.wantOn {
				t.Fatalf("warned %v, want %v: %q", warned, tc.wantOn, w)
			}
		})
	}
	if Default().Http.AnonymousRead {
		t.Fatal("Http:AnonymousRead defaults to true, want false")
	}
	c := mustLoad(t, `{"Http": {"Port": 0, "AnonymousRead": true}}`)
	if strings.Contains(strings.Join(c.Warnings(), "\n"), "AnonymousRead") {
		t.Fatal("warned about Http:AnonymousRead with the HTTP port off")
	}
	if _, err := LoadBytes("c.json", []byte(`{"Http": {"AnonymousRead": "yes"}}`), nil); err == nil || !strings.Contains(err.Error(), "Http:AnonymousRead") {
		t.Fatalf("a non-boolean Http:AnonymousRead loaded: %v", err)
	}
}

// TestDeviceHealthKeys: each mode is accepted in any case, from the file
// and from the environment, with its timings.
func TestDeviceHealthKeys(t *testing.T) {
	for json, want := range map[string]string{`"off"`: "off", `"Level"`: "level", `" FAILOVER "`: "failover"} {
		c := mustLoad(t, `{"Redundancy": {"DeviceHealth": `+json+`, "DeviceFailoverAfter": "00:00:03", "DeviceFailoverHold": "0s"}}`)
		if c.Redundancy.DeviceHealth != want || c.Redundancy.DeviceFailoverAfter != 3*time.Second || c.Redundancy.DeviceFailoverHold != 0 {
			t.Errorf("DeviceHealth %s: got %q after %v hold %v", json, c.Redundancy.DeviceHealth, c.Redundancy.DeviceFailoverAfter, c.Redundancy.DeviceFailoverHold)
		}
	}
	c := mustLoad(t, `{}`, "OTOPCUA_Redundancy__DeviceHealth=failover", "OTOPCUA_Redundancy__DeviceFailoverHold=00:02:00")
	if c.Redundancy.DeviceHealth != "failover" || c.Redundancy.DeviceFailoverHold != 2*time.Minute {
		t.Errorf("from the environment: %q hold %v", c.Redundancy.DeviceHealth, c.Redundancy.DeviceFailoverHold)
	}
}

// TestWriteModeForwardAccepted: "forward" is an OpcUa:WriteMode, in any
// case, and the default stays the reference's "optimistic".
func TestWriteModeForwardAccepted(t *testing.T) {
	if c := mustLoad(t, `{"OpcUa": {"WriteMode": "Forward"}}`); c.OpcUa.WriteMode != WriteModeForward {
		t.Fatalf("WriteMode %q, want %q", c.OpcUa.WriteMode, WriteModeForward)
	}
	if c := mustLoad(t, `{}`); c.OpcUa.WriteMode != WriteModeOptimistic {
		t.Fatalf("default WriteMode %q, want %q", c.OpcUa.WriteMode, WriteModeOptimistic)
	}
}
