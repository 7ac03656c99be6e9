package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
	hoconcompat "github.com/otopcua/otopcua/hocon-compat"
)

// referenceAkkaConf is the akka.conf the reference product shipped before
// its auto-down change.
const referenceAkkaConf = `akka {
  actor.provider = cluster
  cluster {
    seed-nodes = ["akka.tcp://OtOpcUa@node-a.lan:4053", "akka.tcp://OtOpcUa@node-b.lan:4053"]
    roles = [admin, driver]
    downing-provider-class = "Akka.Cluster.SBR.SplitBrainResolverProvider, Akka.Cluster"
    split-brain-resolver {
      active-strategy = keep-oldest
      stable-after = 15s
      keep-oldest.down-if-alone = on
    }
    failure-detector { heartbeat-interval = 1 s, acceptable-heartbeat-pause = 3 s, threshold = 12.0 }
    run-coordinated-shutdown-when-down = on
  }
}
`

// writePair writes appsettings.json (with the given Cluster keys added) and
// akka.conf into a new directory and returns the JSON path.
func writePair(t *testing.T, clusterKeys, akkaConf string) string {
	t.Helper()
	dir := t.TempDir()
	js := `{
  // node A of a pair
  "Cluster": {
    "PublicHostname": "node-a.lan",
    "AkkaConfigPath": "akka.conf",` + clusterKeys + `
  },
}`
	if err := os.WriteFile(filepath.Join(dir, "appsettings.json"), []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "akka.conf"), []byte(akkaConf), 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "appsettings.json")
}

func runCLI(environ []string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr, environ)
	return code, stdout.String(), stderr.String()
}

// readBack parses the printed HOCON the way an operator's tooling would.
func readBack(t *testing.T, out string) hoconcompat.ClusterSettings {
	t.Helper()
	doc, err := hoconcompat.Parse("stdout", []byte(out))
	if err != nil {
		t.Fatalf("printed HOCON does not parse: %v\n%s", err, out)
	}
	h, ws, err := hoconcompat.Extract(doc)
	if err != nil || len(ws) != 0 {
		t.Fatalf("printed HOCON: %v, warnings %v\n%s", err, ws, out)
	}
	return h
}

func TestConfigEffectiveAkkaConfFillsDefaults(t *testing.T) {
	path := writePair(t, `
    "StableAfter": "00:00:20"`, referenceAkkaConf)
	code, out, errOut := runCLI(nil, "config", "effective", path)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	h := readBack(t, out)
	if h.Strategy.Value != "keep-oldest" || h.StableAfter.Value != 20*time.Second || h.Threshold.Value != 12 || len(h.SeedNodes.Value) != 2 {
		t.Errorf("effective strategy %v stable-after %v threshold %v seeds %v", h.Strategy.Value, h.StableAfter.Value, h.Threshold.Value, h.SeedNodes.Value)
	}
	if h.DownOnConnectionRefused.Value {
		t.Error("down-on-connection-refused is on under keep-oldest from akka.conf")
	}
	akkaConf := filepath.Join(filepath.Dir(path), "akka.conf")
	for _, want := range []string{
		"warning: " + akkaConf + ":9:22: Cluster:StableAfter: 20s from appsettings.json or the environment wins over akka.cluster.split-brain-resolver.stable-after = 15s",
		"warning: " + akkaConf + ":13:42: akka.cluster.run-coordinated-shutdown-when-down: not read by otopcua",
		"akka.conf selects keep-oldest on a two-node pair",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "stable-after = 20s") || !strings.Contains(out, "# from Cluster:StableAfter") {
		t.Errorf("stdout does not show where stable-after came from:\n%s", out)
	}
}

func TestConfigEffectiveExplicitStrategyWins(t *testing.T) {
	path := writePair(t, `
    "SplitBrainResolverStrategy": "auto-down"`, referenceAkkaConf)
	code, out, errOut := runCLI(nil, "config", "effective", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if h := readBack(t, out); h.Strategy.Value != "auto-down" || !h.DownOnConnectionRefused.Value {
		t.Errorf("strategy %v down-on-connection-refused %v, want auto-down and on", h.Strategy.Value, h.DownOnConnectionRefused.Value)
	}
	want := `Cluster:SplitBrainResolverStrategy: "auto-down" from appsettings.json or the environment wins over akka.cluster.split-brain-resolver.active-strategy = "keep-oldest"`
	if !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks the conflict:\n%s", errOut)
	}
}

func TestConfigEffectiveEnvironmentIsExplicit(t *testing.T) {
	path := writePair(t, "", referenceAkkaConf)
	env := []string{"OTOPCUA_CLUSTER__SPLITBRAINRESOLVERSTRATEGY=auto-down"}
	_, out, _ := runCLI(env, "config", "effective", path)
	if h := readBack(t, out); h.Strategy.Value != "auto-down" {
		t.Errorf("with the environment override: strategy %v", h.Strategy.Value)
	}
	_, out, _ = runCLI(env, "config", "effective", "--ignore-env", path)
	if h := readBack(t, out); h.Strategy.Value != "keep-oldest" {
		t.Errorf("--ignore-env: strategy %v", h.Strategy.Value)
	}
}

func TestConfigEffectiveRejectsBadAkkaConf(t *testing.T) {
	path := writePair(t, "", "akka.cluster.downing-provider-class = \"Akka.Cluster.NoDowning\"\n")
	code, out, errOut := runCLI(nil, "config", "effective", path)
	if code != exitUsage || out != "" {
		t.Fatalf("exit %d stdout %q", code, out)
	}
	if !strings.Contains(errOut, `akka.conf:1:39: akka.cluster.downing-provider-class = "Akka.Cluster.NoDowning": accepted values are Akka.Cluster.AutoDowning and Akka.Cluster.SBR.SplitBrainResolverProvider`) {
		t.Errorf("stderr: %s", errOut)
	}
	path = writePair(t, "", "akka.cluster { roles = [admin\n")
	if code, _, errOut := runCLI(nil, "config", "effective", path); code != exitUsage || !strings.Contains(errOut, "akka.conf:1:24: missing ']'") {
		t.Errorf("syntax error: exit %d stderr %s", code, errOut)
	}
}

func TestConfigEffectiveWithoutAkkaConf(t *testing.T) {
	code, out, errOut := runCLI(nil, "config", "effective", nodeA)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d stderr %s", code, errOut)
	}
	h := readBack(t, out)
	if h.Strategy.Value != "auto-down" || h.AutoDownUnreachableAfter.Value != 15*time.Second || h.SelfFormAfter.Value != 10*time.Second {
		t.Errorf("defaults: %v %v %v\n%s", h.Strategy.Value, h.AutoDownUnreachableAfter.Value, h.SelfFormAfter.Value, out)
	}
}

func TestConfigEffectiveFromRunningNode(t *testing.T) {
	const body = "akka.cluster {\n  downing-provider-class = \"Akka.Cluster.AutoDowning\"\n}"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/cluster/config" || r.Method != http.MethodGet {
			http.Error(w, "no such endpoint", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	for _, u := range []string{srv.URL, srv.URL + "/", srv.URL + "/api/cluster/config"} {
		code, out, errOut := runCLI(nil, "config", "effective", "--url", u)
		if code != 0 || out != body+"\n" {
			t.Errorf("--url %s: exit %d stdout %q stderr %q", u, code, out, errOut)
		}
	}
	if code, _, errOut := runCLI(nil, "config", "effective", "--url", srv.URL+"/other"); code != exitFailure || !strings.Contains(errOut, "404 Not Found: no such endpoint") {
		t.Errorf("404: exit %d stderr %q", code, errOut)
	}
	srv.Close()
	if code, _, errOut := runCLI(nil, "config", "effective", "--url", srv.URL); code != exitFailure || !strings.Contains(errOut, "asking the node") {
		t.Errorf("node down: exit %d stderr %q", code, errOut)
	}
}

func TestConfigEffectiveUsage(t *testing.T) {
	for _, args := range [][]string{
		{"config", "effective"},
		{"config", "effective", nodeA, "--url", "http://127.0.0.1:1"},
		{"config", "effective", "--url", "ftp://host"},
		{"config", "effective", "--url", "127.0.0.1:8080"},
		{"config", "effective", "a.json", "b.json"},
	} {
		if code, _, errOut := runCLI(nil, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d; stderr %q", args, code, exitUsage, errOut)
		}
	}
}

func TestBinaryConfigEffective(t *testing.T) {
	path := writePair(t, "", referenceAkkaConf)
	code, out := runBinary(t, cleanEnv(), "config", "effective", path)
	if code != 0 || !strings.Contains(out, "active-strategy = keep-oldest") || !strings.Contains(out, "warning: ") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// TestConfigEffectiveShowsFloatingAddress: the effective
// Redundancy:FloatingAddress keys follow the cluster settings as comments
// (the output still reads back as an akka.conf), and config check prints
// the section's line; auto-down with an address is refused naming both
// keys.
func TestConfigEffectiveShowsFloatingAddress(t *testing.T) {
	path := writePair(t, `
    "SplitBrainResolverStrategy": "keep-oldest"`, referenceAkkaConf)
	env := []string{
		"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__ADDRESS=10.0.0.100/24",
		"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__INTERFACE=eth0",
		"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__ANNOUNCECOUNT=5",
	}
	code, out, errOut := runCLI(env, "config", "effective", path)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if h := readBack(t, out); h.Strategy.Value != "keep-oldest" {
		t.Errorf("strategy %v", h.Strategy.Value)
	}
	for _, want := range []string{
		"# Redundancy:FloatingAddress (appsettings.json only): floating address 10.0.0.100/24 provider=linux interface=eth0 announce=5x200ms",
		`#   Redundancy:FloatingAddress:Address = "10.0.0.100/24"`,
		"#   Redundancy:FloatingAddress:HeartbeatTtl = 1.5s",
		"#   Redundancy:FloatingAddress:AnnounceCount = 5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(env, "config", "check", path)
	if code != 0 || !strings.Contains(out, "\nfloating address 10.0.0.100/24 provider=linux interface=eth0") {
		t.Errorf("config check: exit %d\n%s", code, out)
	}
	if _, out, _ = runCLI(nil, "config", "effective", path); !strings.Contains(out, "floating address off (Redundancy:FloatingAddress:Address is not set)") {
		t.Errorf("without an address:\n%s", out)
	}
	auto := filepath.Join(t.TempDir(), "appsettings.json")
	if err := os.WriteFile(auto, []byte(`{"Cluster": {"PublicHostname": "node-a.lan"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(env, "config", "check", auto)
	want := `Cluster:SplitBrainResolverStrategy = "auto-down": accepted values with Redundancy:FloatingAddress:Address set are lease-majority, keep-oldest or keep-majority: under auto-down both sides of a partition become Primary and both would claim the floating address 10.0.0.100/24; set Redundancy:FloatingAddress:AllowDualClaim to true to accept that`
	if code != exitUsage || !strings.Contains(errOut, want) {
		t.Errorf("auto-down with a floating address: exit %d\n%s\nwant %s", code, errOut, want)
	}
}

// TestHostJudgesFloatingAddressOnAkkaConfStrategy: with
// Cluster:AkkaConfigPath the host judges a floating address on the
// strategy once akka.conf is applied: refused when akka.conf selects a
// static quorum of one (each side of the pair's partition meets it),
// accepted when it selects keep-oldest although appsettings.json names no
// strategy (its default auto-down would be refused).
func TestHostJudgesFloatingAddressOnAkkaConfStrategy(t *testing.T) {
	started := false
	withRunHost(t, func(context.Context, *config.Config, *slog.Logger) error { started = true; return nil })
	env := []string{"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__ADDRESS=10.0.0.100/24", "OTOPCUA_REDUNDANCY__FLOATINGADDRESS__INTERFACE=eth0",
		"OTOPCUA_HTTP__PORT=0", "OTOPCUA_CLUSTER__HOSTNAME=127.0.0.1"}
	autoDown := strings.Replace(referenceAkkaConf, "active-strategy = keep-oldest", "active-strategy = static-quorum\n      static-quorum.quorum-size = 1", 1)
	code, _, errOut := runCLI(env, "host", "--config", writePair(t, "", autoDown))
	if code != exitUsage || started || !strings.Contains(errOut, "under static-quorum both sides of a partition become Primary and both would claim the floating address 10.0.0.100/24") {
		t.Fatalf("static-quorum of one in akka.conf: exit %d started %v\n%s", code, started, errOut)
	}
	code, _, errOut = runCLI(env, "host", "--config", writePair(t, "", referenceAkkaConf))
	if code != 0 || !started {
		t.Fatalf("keep-oldest from akka.conf: exit %d started %v\n%s", code, started, errOut)
	}
}
