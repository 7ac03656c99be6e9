package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/configdb"
)

// These tests run the built binary as `otopcua deploy` against an SQLite
// Config DB file in the test's directory.

const simDocument = `{
  "clusterId": "site-a",
  "devices": [
    {"name": "sim", "driver": "simulated", "pollInterval": "00:00:00.250",
     "tags": [{"name": "Ramp", "type": "float64", "signal": "ramp", "period": "10s", "min": 0, "max": 100}]}
  ]
}`

func runDeploy(t *testing.T, env []string, args ...string) binaryRun {
	t.Helper()
	return runCommand(t, env, "", append([]string{"deploy"}, args...)...)
}

// deployFixture is a directory with an appsettings.json for ClusterId
// site-a whose Config DB is an SQLite file beside it.
type deployFixture struct {
	dir, config, dbFile string
}

func newDeployFixture(t *testing.T) *deployFixture {
	t.Helper()
	dir := t.TempDir()
	f := &deployFixture{dir: dir, config: filepath.Join(dir, "appsettings.json"), dbFile: filepath.Join(dir, "config.db")}
	f.writeConfig(t, "site-a", "file:"+f.dbFile)
	return f
}

func (f *deployFixture) writeConfig(t *testing.T, clusterID, connectionString string) {
	t.Helper()
	cfg := map[string]any{
		"Node":     map[string]any{"ClusterId": clusterID},
		"ConfigDb": map[string]any{"Provider": "sqlite", "ConnectionString": connectionString},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.config, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// file writes a document into the fixture's directory.
func (f *deployFixture) file(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// latest reads the newest stored deployment of site-a (ok false: none, or
// no Config DB file at all).
func (f *deployFixture) latest(t *testing.T) (configdb.Deployment, bool) {
	t.Helper()
	if _, err := os.Stat(f.dbFile); err != nil {
		return configdb.Deployment{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := configdb.Open(ctx, "sqlite", "file:"+f.dbFile)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := db.LatestDeployment(ctx, "site-a")
	if errors.Is(err, configdb.ErrNotFound) {
		return configdb.Deployment{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return d, true
}

var deployedLine = regexp.MustCompile(`^deployed cluster site-a version (\d+) \((.*)\)\n$`)

func TestBinaryDeployStoresVersions(t *testing.T) {
	f := newDeployFixture(t)
	doc := f.file(t, "sim.json", simDocument)

	r := runDeploy(t, cleanEnv(), doc, "--config", f.config)
	m := deployedLine.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || m[1] != "1" || !strings.HasPrefix(m[2], "1 device, 1 tag, 0 alarms, sha256 ") || r.stderr != "" {
		t.Fatalf("first deploy: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	stored, ok := f.latest(t)
	if !ok || stored.Version != 1 || string(stored.Document) != simDocument || !strings.HasSuffix(m[2], "sha256 "+stored.SHA256) {
		t.Fatalf("stored %+v, %v; want version 1 holding the file's bytes", stored, ok)
	}

	// The same file again: nothing new.
	r = runDeploy(t, cleanEnv(), doc, "--config", f.config)
	if m := deployedLine.FindStringSubmatch(r.stdout); r.code != 0 || m == nil || m[1] != "1" || !strings.HasPrefix(m[2], "unchanged: ") {
		t.Fatalf("second deploy: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}

	// A changed document is version 2; -c is --config.
	changed := strings.Replace(simDocument, `"max": 100`, `"max": 50`, 1)
	r = runDeploy(t, cleanEnv(), f.file(t, "sim.json", changed), "-c", f.config)
	if m := deployedLine.FindStringSubmatch(r.stdout); r.code != 0 || m == nil || m[1] != "2" {
		t.Fatalf("third deploy: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if stored, _ := f.latest(t); stored.Version != 2 || string(stored.Document) != changed {
		t.Fatalf("newest stored version %d holds %q", stored.Version, stored.Document)
	}
}

func TestBinaryDeployEnvironmentOverrides(t *testing.T) {
	f := newDeployFixture(t)
	f.writeConfig(t, "site-b", "file:"+filepath.Join(f.dir, "other.db"))
	doc := f.file(t, "sim.json", simDocument)
	env := cleanEnv("OTOPCUA_NODE__CLUSTERID=site-a", "OTOPCUA_CONFIGDB__CONNECTIONSTRING=file:"+f.dbFile)
	if r := runDeploy(t, env, doc, "--config", f.config); r.code != 0 {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if _, ok := f.latest(t); !ok {
		t.Fatal("the deployment is not in the Config DB named by OTOPCUA_CONFIGDB__CONNECTIONSTRING")
	}
}

// invalidDocument has problems of several kinds; wantLines are its lines.
const invalidDocument = `{
  "clusterId": "site-a",
  "devices": [
    {"name": "press1", "driver": "modbus-tcp", "address": "10.20.0.5", "pollInterval": "5ms",
     "tags": [
       {"name": "Setpoint", "table": "holding", "address": 0, "type": "int16", "writable": true},
       {"name": "Speed", "table": "holding", "address": 0, "type": "float32"},
       {"name": "Run", "table": "coil", "address": 70000, "type": "bool", "scale": 2}
     ]}
  ]
}`

var wantLines = []string{
	`  devices[0].address = "10.20.0.5": accepted values are host:port of the Modbus TCP device, such as 10.20.0.5:502 (port 1..65535)`,
	`  devices[0].pollInterval = "5ms": accepted values are durations of at least 10ms, as a TimeSpan such as 00:00:10, 1.02:03:04 or 00:00:00.250, or a Go duration such as 10s or 250ms (default 1s)`,
	`  devices[0].tags[1].address = 0: accepted values are addresses not overlapping devices[0].tags[0] "Setpoint" (holding register 0)`,
	`  devices[0].tags[2].address = 70000: accepted values are whole numbers 0..65535 (0-based addresses)`,
	`  devices[0].tags[2].scale = 2: accepted only for numeric types; remove it for a bool tag`,
}

func TestBinaryDeployRefusesAnInvalidDocument(t *testing.T) {
	f := newDeployFixture(t)
	doc := f.file(t, "bad.json", invalidDocument)
	for _, args := range [][]string{{doc, "--config", f.config}, {"--check", doc}} {
		r := runDeploy(t, cleanEnv(), args...)
		want := "invalid deployment document in " + doc + ": 5 problems\n" + strings.Join(wantLines, "\n") + "\n"
		if r.code != 2 || r.stderr != want || r.stdout != "" {
			t.Fatalf("%q: exit %d\nstdout %q\nstderr:\n%s\nwant exit 2 and:\n%s", args, r.code, r.stdout, r.stderr, want)
		}
	}
	if _, ok := f.latest(t); ok {
		t.Fatal("an invalid document was stored")
	}
}

// TestBinaryDeployRefusesTooManyTags: a device of 10,001 simulated tags is
// refused by deploy --check and by deploy alike, naming the device's tags,
// the list as written (cut) and the cap with the count; nothing is stored.
func TestBinaryDeployRefusesTooManyTags(t *testing.T) {
	f := newDeployFixture(t)
	tags := make([]string, 10001)
	for i := range tags {
		tags[i] = fmt.Sprintf(`{"name": "t%d", "type": "int16", "signal": "constant", "min": 1}`, i)
	}
	doc := f.file(t, "big.json", `{"clusterId": "site-a", "devices": [{"name": "sim", "driver": "simulated", "tags": [`+
		strings.Join(tags, ", ")+`]}]}`)
	want := "invalid deployment document in " + doc + ": 1 problem\n" +
		`  devices[0].tags = [{"name":"t0","type":"int16","signal":"constant","min":1},{"name":"t1","type":"i…: ` +
		"accepted values are lists of at most 10000 tags per device; the device has 10001\n"
	for _, args := range [][]string{{"--check", doc}, {doc, "--config", f.config}} {
		r := runDeploy(t, cleanEnv(), args...)
		if r.code != 2 || r.stderr != want || r.stdout != "" {
			t.Fatalf("%q: exit %d\nstdout %q\nstderr:\n%s\nwant exit 2 and:\n%s", args, r.code, r.stdout, r.stderr, want)
		}
	}
	if _, ok := f.latest(t); ok {
		t.Fatal("a document over the cap was stored")
	}
}

func TestBinaryDeploySyntaxError(t *testing.T) {
	f := newDeployFixture(t)
	doc := f.file(t, "broken.json", "{\n  \"clusterId\": \"site-a\",\n  \"devices\": [}\n")
	r := runDeploy(t, cleanEnv(), doc, "--config", f.config)
	if want := "deploy: " + doc + ":3:15: invalid character '}' looking for beginning of value\n"; r.code != 2 || r.stderr != want {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, want)
	}
}

func TestBinaryDeployRefusesAnotherCluster(t *testing.T) {
	f := newDeployFixture(t)
	doc := f.file(t, "b.json", strings.Replace(simDocument, `"site-a"`, `"site-b"`, 1))
	want := "deploy: " + doc + ` is for clusterId "site-b" but Node:ClusterId is "site-a" (` + f.config +
		"): a node applies only its own cluster's deployment\n"
	for _, args := range [][]string{{doc, "--config", f.config}, {"--check", "--config", f.config, doc}} {
		r := runDeploy(t, cleanEnv(), args...)
		if r.code != 2 || r.stderr != want {
			t.Fatalf("%q: exit %d, stderr %q; want 2 and %q", args, r.code, r.stderr, want)
		}
	}
	if _, ok := f.latest(t); ok {
		t.Fatal("a document of another cluster was stored")
	}
}

func TestBinaryDeployCheckTouchesNoDatabase(t *testing.T) {
	f := newDeployFixture(t)
	doc := f.file(t, "sim.json", simDocument)
	r := runDeploy(t, cleanEnv(), "--check", doc)
	if want := "ok: " + doc + ": cluster site-a, 1 device, 1 tag, 0 alarms\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", r.code, r.stdout, r.stderr, want)
	}
	// --check with a matching --config reads the configuration only.
	if r := runDeploy(t, cleanEnv(), "--check", "--config", f.config, doc); r.code != 0 {
		t.Fatalf("--check --config: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(f.dbFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--check created the Config DB file: %v", err)
	}
}

func TestBinaryDeployConfigDbFailure(t *testing.T) {
	f := newDeployFixture(t)
	f.writeConfig(t, "site-a", "file:"+filepath.Join(f.dir, "no-such-dir", "config.db"))
	doc := f.file(t, "sim.json", simDocument)
	r := runDeploy(t, cleanEnv(), doc, "--config", f.config)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "deploy: Config DB (ConfigDb:Provider sqlite): ") || !strings.Contains(r.stderr, "no-such-dir") {
		t.Fatalf("exit %d, stderr %q; want 1 and the Config DB's error", r.code, r.stderr)
	}

	// A networked Config DB that does not answer: exit 1 within --timeout.
	f.writeConfig(t, "site-a", "")
	env := cleanEnv("OTOPCUA_CONFIGDB__PROVIDER=postgres",
		"OTOPCUA_CONFIGDB__CONNECTIONSTRING=postgres://otopcua@127.0.0.1:1/otopcua?sslmode=disable&connect_timeout=1")
	start := time.Now()
	r = runDeploy(t, env, doc, "--config", f.config, "--timeout", "3s")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "deploy: Config DB (ConfigDb:Provider postgres): ") {
		t.Fatalf("exit %d, stderr %q; want 1", r.code, r.stderr)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("deploy against a closed port took %v", took)
	}
}

func TestBinaryDeployUsage(t *testing.T) {
	f := newDeployFixture(t)
	for _, args := range [][]string{{}, {"--no-such-flag", "a.json"}} {
		r := runDeploy(t, cleanEnv(), args...)
		if r.code != 2 || !strings.Contains(r.stderr, "otopcua --help") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a usage hint", args, r.code, r.stderr)
		}
	}
	missing := filepath.Join(f.dir, "missing.json")
	if r := runDeploy(t, cleanEnv(), "--check", missing); r.code != 2 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing document: exit %d, stderr %q", r.code, r.stderr)
	}
	doc := f.file(t, "sim.json", simDocument)
	if r := runDeploy(t, cleanEnv(), doc, "--config", filepath.Join(f.dir, "missing.appsettings.json")); r.code != 2 {
		t.Errorf("missing --config file: exit %d, stderr %q; want 2", r.code, r.stderr)
	}
	// An invalid configuration is exit 2 with config's own message.
	if err := os.WriteFile(f.config, []byte(`{"Node": {"ClusterId": "site a"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runDeploy(t, cleanEnv(), doc, "--config", f.config); r.code != 2 || !strings.Contains(r.stderr, `Node:ClusterId = "site a"`) {
		t.Errorf("invalid configuration: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestBinaryDeploySeveralClusters(t *testing.T) {
	f := newDeployFixture(t)
	siteA := f.file(t, "a.json", simDocument)
	siteB := f.file(t, "b.json", strings.Replace(simDocument, `"clusterId": "site-a"`, `"clusterId": "site-b"`, 1))
	if !strings.Contains(simDocument, `"clusterId": "site-a"`) {
		t.Fatal("the fixture document changed: fix the replacement above")
	}

	// Without --any-cluster the second document is refused, and nothing
	// is stored, not even the first.
	r := runDeploy(t, cleanEnv(), siteA, siteB, "--config", f.config)
	if r.code != 2 || !strings.Contains(r.stderr, `is for clusterId "site-b" but Node:ClusterId is "site-a"`) {
		t.Fatalf("exit %d, stderr %q; want 2 naming the clusterId", r.code, r.stderr)
	}
	if _, ok := f.latest(t); ok {
		t.Fatal("a refused batch stored the first document")
	}
	// An invalid document in a batch: nothing stored either.
	bad := f.file(t, "bad.json", `{"clusterId": "site-a", "devices": [{"name": "x", "driver": "nope"}]}`)
	if r := runDeploy(t, cleanEnv(), siteA, bad, "--any-cluster", "--config", f.config); r.code != 2 {
		t.Fatalf("batch with an invalid document: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, ok := f.latest(t); ok {
		t.Fatal("a batch with an invalid document stored the valid one")
	}

	// With --any-cluster both are stored, one line each.
	r = runDeploy(t, cleanEnv(), siteA, siteB, "--any-cluster", "--config", f.config)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "deployed cluster site-a version 1 ") ||
		!strings.HasPrefix(lines[1], "deployed cluster site-b version 1 ") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if stored, ok := f.latest(t); !ok || stored.Version != 1 {
		t.Fatalf("site-a: %+v %v", stored, ok)
	}
	// --check validates every file.
	if r := runDeploy(t, cleanEnv(), "--check", siteA, bad); r.code != 2 || !strings.Contains(r.stderr, "bad.json") {
		t.Fatalf("--check of a batch: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestBinaryDeployRefusesBadAlarmConditions(t *testing.T) {
	f := newDeployFixture(t)
	doc := f.file(t, "alarms.json", `{"clusterId": "site-a",
  "devices": [{"name": "press1", "driver": "simulated",
    "tags": [{"name": "Temperature", "type": "float64", "signal": "ramp", "period": "10s", "min": 0, "max": 100}]}],
  "alarms": [
    {"name": "A", "source": "press1/Temperature", "condition": "press1.Temprature > 80", "severity": 700, "message": "m"},
    {"name": "B", "source": "press1/Temperature", "condition": "press1.Temperature + 1", "severity": 700, "message": "m"},
    {"name": "C", "source": "press1/Temperature", "condition": "press1.Temperature >", "severity": 700, "message": "m"}]}`)
	r := runDeploy(t, cleanEnv(), doc, "--config", f.config)
	for _, want := range []string{"alarms[0].condition", "unknown tag press1.Temprature", "alarms[1].condition", "not true or false", "alarms[2].condition"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.code != 2 {
		t.Fatalf("exit %d, want 2", r.code)
	}
	if _, ok := f.latest(t); ok {
		t.Fatal("a document with bad alarms was stored")
	}
}
