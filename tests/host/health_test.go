package host_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/otopcua/otopcua/internal/testcert"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// health runs `otopcua health args...` and returns its exit code and
// output.
func health(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(procs.Binary(t), append([]string{"health"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = t.TempDir() // no appsettings.json there
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

type readyReport struct {
	Status string   `json:"status"`
	Failed []string `json:"failed"`
	Checks []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
}

func readyz(n *procs.Node, query string) (int, readyReport, error) {
	resp, err := http.Get(n.HTTP() + "/readyz" + query)
	if err != nil {
		return 0, readyReport{}, err
	}
	defer resp.Body.Close()
	var r readyReport
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return resp.StatusCode, r, fmt.Errorf("/readyz body: %w", err)
	}
	return resp.StatusCode, r, nil
}

// scrape parses the node's /metrics.
func scrape(t *testing.T, n *procs.Node) map[string]*familyView {
	t.Helper()
	resp, err := http.Get(n.HTTP() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*familyView{}
	for name, f := range fams {
		v := &familyView{help: f.GetHelp(), series: map[string]float64{}}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			var val float64
			switch {
			case m.Gauge != nil:
				val = m.GetGauge().GetValue()
			case m.Counter != nil:
				val = m.GetCounter().GetValue()
			case m.Histogram != nil:
				val = float64(m.GetHistogram().GetSampleCount())
			}
			v.series[strings.Join(labels, ",")] = val
		}
		out[name] = v
	}
	return out
}

type familyView struct {
	help   string
	series map[string]float64 // "k=v,k=v" (sorted as exported) → value
}

// TestHealthEndpointsAndCommandFollowTheConfigDb runs one node on a real
// PostgreSQL Config DB: ready with every check, then not ready while the
// database is stopped, then ready again; `otopcua health` exits 0 and 1
// accordingly, and the operator's series are on /metrics with their HELP.
func TestHealthEndpointsAndCommandFollowTheConfigDb(t *testing.T) {
	db := pg.Start(t)
	ports := procs.NewPorts(t)
	cfg := procs.BaseConfig("node-h", ports)
	cfg["Node"] = map[string]any{"ClusterId": "SITE-H"}
	cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": db.DSN()}
	n := procs.Start(t, "node-h", cfg)
	n.WaitFullyReady(60 * time.Second)
	url := n.HTTP() + "/readyz"

	code, out := health(t, "--url", url)
	if code != 0 || strings.TrimSpace(out) != "ready" {
		t.Fatalf("otopcua health on a ready node: exit %d, %q", code, out)
	}
	// The lone node is Primary of its ClusterId: healthy (250).
	procs.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if code, out := health(t, "--url", url, "--healthy"); code != 0 {
			return fmt.Errorf("--healthy: exit %d, %q", code, out)
		}
		return nil
	})
	// Without --url, the node of the environment's Http:Port.
	if code, out := healthEnv(t, []string{fmt.Sprintf("OTOPCUA_HTTP__PORT=%d", ports.HTTP), "OTOPCUA_HTTP__HOSTNAME=0.0.0.0"}); code != 0 {
		t.Fatalf("otopcua health with the port from the environment: exit %d, %q", code, out)
	}
	if code, out := health(t, "--url", n.HTTP()+"/healthz", "--live"); code != 0 {
		t.Fatalf("health of /healthz: exit %d, %q", code, out)
	}
	_, r, err := readyz(n, "")
	if err != nil || r.Status != "ready" || len(r.Checks) != 3 {
		t.Fatalf("/readyz = %+v, %v; want ready with the opcua, cluster and configdb checks", r, err)
	}

	m := scrape(t, n)
	want := map[string]string{
		"otopcua_redundancy_service_level":              "cluster_id=SITE-H",
		"otopcua_redundancy_is_primary":                 "cluster_id=SITE-H",
		"otopcua_redundancy_epoch":                      "cluster_id=SITE-H",
		"otopcua_redundancy_role":                       "cluster_id=SITE-H,role=primary",
		"otopcua_configdb_reachable":                    "",
		"otopcua_cluster_self_up":                       "",
		"otopcua_cluster_members_by_cluster_id":         "cluster_id=SITE-H,status=Up",
		"otopcua_cluster_is_oldest_by_cluster_id":       "cluster_id=SITE-H,role=driver",
		"otopcua_node_info":                             "application_uri=urn:node-h:otopcua,cluster_id=SITE-H,node_id=127.0.0.1:" + fmt.Sprint(ports.Cluster),
		"otopcua_redundancy_service_level_change_total": "level=250",
		"otopcua_redundancy_primary_gate_denied_total":  "reason=role-unknown,site=write",
		"otopcua_cluster_members":                       "status=Up",
	}
	for name, series := range want {
		f, ok := m[name]
		if !ok {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		if _, ok := f.series[series]; !ok {
			t.Errorf("%s lacks the series {%s}; has %v", name, series, f.series)
		}
	}
	for name, f := range m {
		if strings.HasPrefix(name, "otopcua_") && len(f.help) < 20 {
			t.Errorf("%s has no HELP an operator can read: %q", name, f.help)
		}
	}
	gauge := func(name, series string) float64 {
		if f, ok := m[name]; ok {
			return f.series[series]
		}
		return -1
	}
	procs.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		m = scrape(t, n)
		if v := gauge("otopcua_redundancy_service_level", "cluster_id=SITE-H"); v != 250 {
			return fmt.Errorf("service_level %v, want 250", v)
		}
		if gauge("otopcua_redundancy_is_primary", "cluster_id=SITE-H") != 1 || gauge("otopcua_redundancy_epoch", "cluster_id=SITE-H") < 1 ||
			gauge("otopcua_redundancy_role", "cluster_id=SITE-H,role=primary") != 1 || gauge("otopcua_redundancy_role", "cluster_id=SITE-H,role=unknown") != 0 {
			return fmt.Errorf("redundancy gauges: %v %v %v", m["otopcua_redundancy_is_primary"].series, m["otopcua_redundancy_epoch"].series, m["otopcua_redundancy_role"].series)
		}
		if gauge("otopcua_configdb_reachable", "") != 1 || gauge("otopcua_cluster_self_up", "") != 1 ||
			gauge("otopcua_cluster_is_oldest_by_cluster_id", "cluster_id=SITE-H,role=driver") != 1 {
			return fmt.Errorf("configdb/self_up/is_oldest: %v %v %v", m["otopcua_configdb_reachable"].series, m["otopcua_cluster_self_up"].series, m["otopcua_cluster_is_oldest_by_cluster_id"].series)
		}
		return nil
	})
	if len(m["otopcua_build_info"].series) != 1 {
		t.Errorf("build_info %v", m["otopcua_build_info"].series)
	}

	// The Config DB stops: /readyz names the configdb check within a
	// probe interval or two, `otopcua health` exits 1 and says why.
	db.Stop()
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		code, r, err := readyz(n, "")
		if err != nil {
			return err
		}
		if code != http.StatusServiceUnavailable || r.Status != "not ready" || len(r.Failed) != 1 || r.Failed[0] != "configdb" {
			return fmt.Errorf("/readyz %d %+v", code, r)
		}
		return nil
	})
	code, out = health(t, "--url", url)
	if code != 1 || !strings.HasPrefix(out, "not ready") || !strings.Contains(out, "configdb: Config DB unreachable") {
		t.Fatalf("otopcua health while the Config DB is stopped: exit %d, %q", code, out)
	}
	if gauge := scrape(t, n)["otopcua_configdb_reachable"].series[""]; gauge != 0 {
		t.Fatalf("otopcua_configdb_reachable = %v while the Config DB is stopped", gauge)
	}
	// /healthz stays 200: the process is alive and must not be restarted
	// for an outage it cannot fix.
	if code, out := health(t, "--url", n.HTTP()+"/healthz"); code != 0 {
		t.Fatalf("/healthz while the Config DB is stopped: exit %d, %q", code, out)
	}

	db.Start()
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		if code, out := health(t, "--url", url); code != 0 {
			return fmt.Errorf("exit %d, %q", code, out)
		}
		return nil
	})
}

func healthEnv(t *testing.T, env []string) (int, string) {
	t.Helper()
	cmd := exec.Command(procs.Binary(t), "health")
	cmd.Env = append(env, "PATH=/usr/bin:/bin")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestHealthCommandErrors: a node that does not answer is not ready (1);
// a bad URL or a disabled HTTP port is a usage error (2).
func TestHealthCommandErrors(t *testing.T) {
	port := procs.FreePort(t)
	code, out := health(t, "--url", fmt.Sprintf("http://127.0.0.1:%d/readyz", port), "--timeout", "2s")
	if code != 1 || !strings.Contains(out, "did not answer") {
		t.Fatalf("nobody listening: exit %d, %q", code, out)
	}
	if code, out := health(t, "--url", "ftp://x"); code != 2 || !strings.Contains(out, "http://") {
		t.Fatalf("bad URL: exit %d, %q", code, out)
	}
	if code, out := healthEnv(t, []string{"OTOPCUA_HTTP__PORT=0"}); code != 2 || !strings.Contains(out, "Http:Port is 0") {
		t.Fatalf("Http:Port 0: exit %d, %q", code, out)
	}
	if code, out := healthEnv(t, []string{"OTOPCUA_HTTP__PORT=seventy"}); code != 2 || !strings.Contains(out, "Http:Port") {
		t.Fatalf("invalid Http:Port: exit %d, %q", code, out)
	}
}

// TestHealthOverTLS: with Http:Tls the node serves HTTPS only, and
// `otopcua health` of the same configuration trusts that certificate
// alone: another certificate is refused.
func TestHealthOverTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile := testcert.Write(t)
	p := procs.NewPorts(t)
	cfg := procs.BaseConfig("tls", p)
	cfg["Http"].(map[string]any)["Tls"] = map[string]any{"CertFile": certFile, "KeyFile": keyFile}
	n := procs.Start(t, "tls", cfg)
	env := func(cert, key string) []string {
		return []string{"OTOPCUA_HTTP__HOSTNAME=127.0.0.1", fmt.Sprintf("OTOPCUA_HTTP__PORT=%d", p.HTTP),
			"OTOPCUA_HTTP__TLS__CERTFILE=" + cert, "OTOPCUA_HTTP__TLS__KEYFILE=" + key}
	}
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		if code, out := healthEnv(t, env(certFile, keyFile)); code != 0 {
			return fmt.Errorf("otopcua health over TLS: exit %d: %s", code, out)
		}
		return nil
	})

	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(pair.Leaf)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(strings.Replace(n.HTTP(), "http://", "https://", 1) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics over TLS: %d", resp.StatusCode)
	}
	if resp, err := http.Get(n.HTTP() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP to the TLS port was served")
		}
	}
	otherCert, otherKey := testcert.Write(t)
	if code, out := healthEnv(t, env(otherCert, otherKey)); code != 1 || !strings.Contains(out, "not Http:Tls:CertFile") {
		t.Fatalf("otopcua health with another certificate: exit %d, %q; want 1 naming the certificate", code, out)
	}
}
