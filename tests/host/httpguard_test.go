package host_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// readRoutes are the GET routes of Http:Port that show plant data: the
// host's read reports and the admin API's reads. /healthz, /readyz and
// /metrics stay open (the Prometheus convention).
var readRoutes = []string{
	"/api/cluster/members", "/api/cluster/config", "/api/actors", "/api/deployment",
	"/alerts", "/api/localdb", "/api/historian", "/api/clusters", "/api/clusters/test/redundancy",
}

// openRoutes stay open whatever Http:AnonymousRead says.
var openRoutes = []string{"/healthz", "/readyz?exclude=cluster&exclude=configdb", "/metrics"}

// guardedNodeConfig is a driver node with a LocalDb, LocalDb replication
// towards a peer that is not there (so /api/localdb is served) and its
// own SQLite Config DB in dir, Http:AnonymousRead as given.
func guardedNodeConfig(t *testing.T, dir string, anonymousRead bool) map[string]any {
	cfg := procs.BaseConfig("guarded", procs.NewPorts(t))
	cfg["Http"].(map[string]any)["AnonymousRead"] = anonymousRead
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(dir, "config.db")}
	cfg["LocalDb"] = map[string]any{
		"Path": filepath.Join(dir, "local.db"), "SyncListenPort": procs.UniquePort(t),
		"Peers": []string{fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t))}, "Replication": map[string]any{"ApiKey": "0123456789abcdef-pair-key"},
	}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	return cfg
}

// get GETs path on n with the bearer token ("" none) and returns the
// status and the start of the body.
func get(t *testing.T, n *procs.Node, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, n.HTTP()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, string(body)
}

// otopcua runs the binary with args and env added to the environment,
// and returns its standard output and error together.
func otopcua(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(procs.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestReadRoutesNeedAViewerOnARealNode runs two nodes: one as shipped,
// where every /api/* and /alerts route answers 401 without credentials
// and 200 to a Viewer's API token (`otopcua user token`), and one with
// Http:AnonymousRead, which serves the host's read reports to anyone
// (the admin API stays signed in) and warns at start-up naming the key.
// The probes and /metrics are open on both.
func TestReadRoutesNeedAViewerOnARealNode(t *testing.T) {
	guardedCfg := guardedNodeConfig(t, t.TempDir(), false)
	token := procs.AddUser(t, guardedCfg, "watcher", "Viewer", "watcher-password-1")
	guarded := procs.Start(t, "guarded", guardedCfg)
	lab := procs.Start(t, "lab", guardedNodeConfig(t, t.TempDir(), true))
	guarded.WaitFullyReady(60 * time.Second)
	lab.WaitFullyReady(60 * time.Second)

	for _, path := range readRoutes {
		if code, body := get(t, guarded, path, ""); code != http.StatusUnauthorized || !strings.Contains(body, `"not authenticated"`) {
			t.Errorf("guarded node: GET %s without credentials: %d %s, want 401 not authenticated", path, code, body)
		}
		if code, body := get(t, guarded, path, token); code != http.StatusOK {
			t.Errorf("guarded node: GET %s with a Viewer's token: %d %s, want 200", path, code, body)
		}
		wrong := token[:len(token)-4] + "AAAA"
		if code, _ := get(t, guarded, path, wrong); code != http.StatusUnauthorized {
			t.Errorf("guarded node: GET %s with a wrong token: %d, want 401", path, code)
		}
	}
	for _, path := range readRoutes {
		want := http.StatusOK
		if strings.HasPrefix(path, "/api/clusters") {
			want = http.StatusUnauthorized // the admin API is never opened
		}
		if code, body := get(t, lab, path, ""); code != want {
			t.Errorf("Http:AnonymousRead node: GET %s without credentials: %d %s, want %d", path, code, body, want)
		}
	}
	for _, n := range []*procs.Node{guarded, lab} {
		for _, path := range openRoutes {
			if code, body := get(t, n, path, ""); code != http.StatusOK {
				t.Errorf("%s: GET %s without credentials: %d %s, want 200 (open)", n.Name, path, code, body)
			}
		}
	}
	const warning = "Http:AnonymousRead is true"
	if !strings.Contains(lab.Log(), warning) || !strings.Contains(grep(lab.Log(), warning), `"level":"WARN"`) {
		t.Errorf("the Http:AnonymousRead node did not warn at start-up:\n%s", lab.Log())
	}
	if strings.Contains(guarded.Log(), warning) {
		t.Errorf("the node without Http:AnonymousRead warned about it:\n%s", grep(guarded.Log(), warning))
	}
	out, err := otopcua(t, []string{"OTOPCUA_TOKEN=" + token}, "status", "--url", guarded.HTTP())
	if err != nil || !strings.Contains(out, "ACTOR") {
		t.Errorf("otopcua status with OTOPCUA_TOKEN: %v\n%s", err, out)
	}
	if out, err := otopcua(t, nil, "status", "--url", guarded.HTTP()); err == nil || !strings.Contains(out, "OTOPCUA_TOKEN") {
		t.Errorf("otopcua status without a token: %v\n%s", err, out)
	}
}
