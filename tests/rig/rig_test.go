package rig

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/otopcua/otopcua/packaging/grafana"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// Loopback addresses of the rig: one per service, so every node keeps the
// compose file's ports (4053, 4840, 8080) as in its own container.
const (
	nodeNet = "127.0.10."
	simNet  = "127.0.11."
)

// addressPlan maps compose service names to loopback addresses.
type addressPlan struct {
	host     map[string]string // service → IP
	override map[string]string // "service:port" → "ip:port" (the Config DB)
}

var hostPort = regexp.MustCompile(`([A-Za-z0-9][A-Za-z0-9._-]*):(\d+)`)

// rewrite replaces every "service:port" of a known service in s.
func (a addressPlan) rewrite(s string) string {
	return hostPort.ReplaceAllStringFunc(s, func(m string) string {
		if o, ok := a.override[m]; ok {
			return o
		}
		sub := hostPort.FindStringSubmatch(m)
		if ip, ok := a.host[sub[1]]; ok {
			return ip + ":" + sub[2]
		}
		return m
	})
}

// rigNode is one running node.
type rigNode struct {
	Node
	ip   string
	proc *proc
	env  []string
}

func (n *rigNode) http() string { return fmt.Sprintf("http://%s:%d", n.ip, n.HTTPPort) }

// instance is the node's Prometheus instance label.
func (n *rigNode) instance() string { return fmt.Sprintf("%s:%d", n.ip, n.HTTPPort) }

// TestRigAsProcesses runs docker-compose.yml's topology as plain processes:
// six `otopcua host` nodes (three ClusterIds, one mesh), PostgreSQL, the
// three Modbus simulators, the one-shot deploy and a real Prometheus with
// the committed prometheus.yml and alert rules. Prometheus must see
// exactly one Primary per ClusterId; every dashboard panel's query must
// return data; after a SIGKILL of one Primary the "two Primaries" and "no
// Primary" alerts must stay inactive (not even pending) while the other
// node of that pair takes over; the killed node restarted at the same
// address rejoins as Secondary.
func TestRigAsProcesses(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed (Debian package prometheus; scripts/test.sh installs it)")
	}
	project, top := loadTopology(t)
	bin := procs.Binary(t)

	// The Config DB: PostgreSQL with the compose file's role and database.
	db := pg.Start(t)
	dbEnv := top.ConfigDb.Environment
	createRole(t, db.DSN(), *dbEnv["POSTGRES_USER"], *dbEnv["POSTGRES_PASSWORD"], *dbEnv["POSTGRES_DB"])

	plan := addressPlan{host: map[string]string{}, override: map[string]string{}}
	for i, n := range top.Nodes {
		plan.host[n.Service] = fmt.Sprintf("%s%d", nodeNet, i+1)
	}
	for i, s := range top.Simulators {
		plan.host[s.Service] = fmt.Sprintf("%s%d", simNet, i+1)
	}
	plan.override[top.ConfigDb.Name+":5432"] = db.Addr()

	// The field devices.
	for _, s := range top.Simulators {
		argv := append([]string{bin}, s.Command...)
		for i, a := range argv {
			if a == s.Listen {
				_, port, err := SplitHostPort(s.Listen)
				if err != nil {
					t.Fatal(err)
				}
				argv[i] = fmt.Sprintf("%s:%d", plan.host[s.Service], port)
			}
		}
		startProc(t, s.Service, nil, argv...)
	}

	// The one-shot deploy, with its documents' device addresses mapped.
	deployDir := t.TempDir()
	argv := []string{bin}
	for _, a := range top.Deploy.Command {
		if hp := HostPath(top.Deploy, a); hp != "" {
			b, err := os.ReadFile(hp)
			if err != nil {
				t.Fatal(err)
			}
			a = filepath.Join(deployDir, filepath.Base(hp))
			if err := os.WriteFile(a, []byte(plan.rewrite(string(b))), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		argv = append(argv, a)
	}
	deployEnv := envOf(top.Deploy.Environment, plan)
	deploy := exec.Command(argv[0], argv[1:]...)
	deploy.Dir = t.TempDir()
	deploy.Env = append(cleanEnviron(), deployEnv...)
	out, err := deploy.CombinedOutput()
	if err != nil || strings.Count(string(out), "deployed cluster ") != len(top.ClusterIDs()) {
		t.Fatalf("deploy: %v\n%s", err, out)
	}

	// The nodes.
	var nodes []*rigNode
	for _, n := range top.Nodes {
		ip := plan.host[n.Service]
		env := envOf(project.Services[n.Service].Environment, plan)
		dir := t.TempDir()
		env = append(env,
			// The container's 0.0.0.0 and its service name are this address here.
			"OTOPCUA_CLUSTER__HOSTNAME="+ip,
			"OTOPCUA_CLUSTER__PUBLICHOSTNAME="+ip,
			"OTOPCUA_HTTP__HOSTNAME="+ip,
			"OTOPCUA_LOCALDB__PATH="+filepath.Join(dir, "otopcua-local.db"),
		)
		rn := &rigNode{Node: n, ip: ip, env: env}
		rn.proc = startProc(t, n.Service, env, append([]string{bin}, project.Services[n.Service].Command...)...)
		nodes = append(nodes, rn)
	}
	byService := map[string]*rigNode{}
	for _, n := range nodes {
		byService[n.Service] = n
	}

	// Prometheus with the committed configuration, targets mapped.
	prom := startPrometheus(t, promBin, top, plan)

	// Every node ready: OPC UA listening, Up, Config DB answering.
	for _, n := range nodes {
		procs.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
			if !n.proc.alive() {
				t.Fatalf("%s exited:\n%s", n.Service, n.proc.output())
			}
			return httpOK(n.http() + "/readyz")
		})
	}
	// `otopcua health` agrees, as the image's HEALTHCHECK runs it.
	for _, n := range nodes {
		cmd := exec.Command(bin, "health")
		cmd.Env = append(cleanEnviron(), n.env...)
		cmd.Dir = t.TempDir()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("otopcua health on %s: %v\n%s", n.Service, err, out)
		}
	}

	// Prometheus scrapes all six and sees one Primary per ClusterId, the
	// one each pair's own cluster view elects.
	primaries := map[string]string{} // cluster_id → instance
	procs.CheckFor(t, 60*time.Second, 500*time.Millisecond, func() error {
		up, err := prom.query(`up{job="otopcua"} == 1`)
		if err != nil {
			return err
		}
		if len(up) != len(nodes) {
			return fmt.Errorf("Prometheus scrapes %d nodes up, want %d", len(up), len(nodes))
		}
		got, err := prom.primaries()
		if err != nil {
			return err
		}
		for _, cid := range top.ClusterIDs() {
			if len(got[cid]) != 1 {
				return fmt.Errorf("ClusterId %s: Primaries %v, want exactly one", cid, got[cid])
			}
			primaries[cid] = got[cid][0]
		}
		return nil
	})
	for _, cid := range top.ClusterIDs() {
		pair := top.NodesOf(cid)
		view, err := procs.FetchView(nil, byService[pair[0].Service].http(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		oldest, ok := view.OldestUp("driver", cid)
		if !ok {
			t.Fatalf("%s: no oldest Up driver in %s", cid, view)
		}
		want := ""
		for _, n := range nodes {
			if fmt.Sprintf("%s:%d", n.PublicHostname, n.ClusterPort) == oldest.Address || fmt.Sprintf("%s:%d", n.ip, n.ClusterPort) == oldest.Address {
				want = n.instance()
			}
		}
		if primaries[cid] != want {
			t.Fatalf("%s: Prometheus shows Primary %s, the cluster elects %s (%s)", cid, primaries[cid], want, oldest.Address)
		}
	}
	t.Logf("Primaries: %v", primaries)

	// SIGKILL the Primary of SITE-A; its partner takes over while the
	// alerts stay inactive.
	const cid = "SITE-A"
	var victim, survivor *rigNode
	for _, n := range top.NodesOf(cid) {
		if byService[n.Service].instance() == primaries[cid] {
			victim = byService[n.Service]
		} else {
			survivor = byService[n.Service]
		}
	}
	watched := []string{"OtopcuaTwoPrimaries", "OtopcuaNoPrimary"}
	// At boot a pair has no Primary for a moment and the rule evaluation
	// (every 5 s) may have caught that as pending: wait for the first
	// evaluation that sees the Primaries.
	procs.CheckFor(t, 30*time.Second, 500*time.Millisecond, func() error { return prom.noAlerts(watched) })
	killed := time.Now()
	victim.proc.kill()
	var tookOver time.Duration
	procs.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		if err := prom.noAlerts(watched); isAlert(err) {
			t.Fatalf("during the failover: %v", err)
		}
		if tookOver == 0 {
			if v, err := scrapeGauge(survivor.http(), `otopcua_redundancy_is_primary{cluster_id="`+cid+`"}`); err != nil || v != 1 {
				return fmt.Errorf("%s not Primary yet (%v, %v)", survivor.Service, v, err)
			}
			tookOver = time.Since(killed)
		}
		got, err := prom.primaries()
		if err != nil {
			return err
		}
		if !slices.Equal(got[cid], []string{survivor.instance()}) {
			return fmt.Errorf("Prometheus shows %s Primaries %v, want %s", cid, got[cid], survivor.instance())
		}
		return nil
	})
	t.Logf("%s took over %v after the SIGKILL of %s; Prometheus saw it %v after", survivor.Service, tookOver.Round(time.Millisecond), victim.Service, time.Since(killed).Round(time.Millisecond))
	// The alert windows (20 s and 30 s look-backs) pass over the kill with
	// nothing pending.
	procs.Holds(t, 35*time.Second, 500*time.Millisecond, func() error { return prom.noAlerts(watched) })
	if v, err := prom.query(`otopcua_redundancy_membership_to_service_level_seconds_count{cluster_id="` + cid + `",instance="` + survivor.instance() + `"} > 0`); err != nil || len(v) != 1 {
		t.Fatalf("the survivor's membership-to-ServiceLevel histogram has no observation: %v %v", v, err)
	}

	// Every dashboard panel's query returns data.
	dashboards, _ := filepath.Glob(filepath.Join(procs.RepoRoot(), "packaging", "grafana", "dashboards", "*.json"))
	if len(dashboards) < 2 {
		t.Fatalf("dashboards: %v", dashboards)
	}
	vars := map[string]string{"instance": survivor.instance(), "__rate_interval": "1m", "__interval": "5s", "__range": "5m"}
	queries, sawFailovers := 0, false
	for _, path := range dashboards {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		qs, err := grafana.PanelQueries(b)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, q := range qs {
			expr := grafana.ExpandForTest(q.Expr, vars)
			res, err := prom.query(expr)
			if err != nil || len(res) == 0 {
				t.Errorf("%s / %q / %s: %s returned no data (%v)", q.Dashboard, q.Panel, q.RefID, expr, err)
			}
			queries++
			if q.Panel == "Failovers in the time range" {
				sawFailovers = true
				failovers := map[string]string{}
				for _, r := range res {
					failovers[r.Metric["cluster_id"]] = fmt.Sprint(r.Value[1])
				}
				if failovers[cid] != "1" || failovers["MAIN"] != "0" || failovers["SITE-B"] != "0" {
					t.Errorf("the fleet dashboard counts failovers %v, want 1 in %s and 0 elsewhere", failovers, cid)
				}
			}
		}
	}
	t.Logf("%d dashboard queries answered", queries)
	if !sawFailovers {
		t.Error(`the fleet dashboard has no "Failovers in the time range" panel`)
	}

	// The killed node restarts at the same address and rejoins as the
	// Secondary: the survivor stays Primary, the alerts stay quiet.
	victim.proc.start()
	procs.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		if err := prom.noAlerts(watched); isAlert(err) {
			t.Fatalf("while %s rejoins: %v", victim.Service, err)
		}
		if err := httpOK(victim.http() + "/readyz"); err != nil {
			return err
		}
		v, err := scrapeGauge(victim.http(), `otopcua_redundancy_role{cluster_id="`+cid+`",role="secondary"}`)
		if err != nil || v != 1 {
			return fmt.Errorf("%s not Secondary yet (%v, %v)", victim.Service, v, err)
		}
		got, err := prom.primaries()
		if err != nil {
			return err
		}
		if !slices.Equal(got[cid], []string{survivor.instance()}) {
			return fmt.Errorf("%s Primaries %v, want only %s", cid, got[cid], survivor.instance())
		}
		return nil
	})
}

// envOf turns a compose environment into KEY=VALUE lines with the
// addresses mapped.
func envOf(env map[string]*string, plan addressPlan) []string {
	var out []string
	for k, v := range env {
		if v != nil {
			out = append(out, k+"="+plan.rewrite(*v))
		}
	}
	slices.Sort(out)
	return out
}

func cleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTOPCUA_") {
			out = append(out, kv)
		}
	}
	return out
}

func createRole(t *testing.T, dsn, user, password, database string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", pgx.Identifier{user}.Sanitize(), password),
		fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", pgx.Identifier{database}.Sanitize(), pgx.Identifier{user}.Sanitize()),
		fmt.Sprintf("GRANT ALL ON SCHEMA public TO %s", pgx.Identifier{user}.Sanitize()),
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

func httpOK(u string) error {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return fmt.Errorf("%s: %s %s", u, resp.Status, b)
	}
	return nil
}

// scrapeGauge reads one series (as /metrics writes it, labels sorted) from
// a node's /metrics.
func scrapeGauge(base, series string) (float64, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			_, err := fmt.Sscan(v, &f)
			return f, err
		}
	}
	return 0, fmt.Errorf("%s has no %s", base, series)
}

// prometheus is the rig's Prometheus.
type prometheus struct {
	base string
	proc *proc
}

func startPrometheus(t *testing.T, bin string, top *Topology, plan addressPlan) *prometheus {
	t.Helper()
	cfgFile := HostPath(top.Prometheus, flagValue(top.Prometheus.Command, "--config.file"))
	src := filepath.Dir(cfgFile)
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	// The committed files, with only the targets' addresses mapped.
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Join(src, e.Name()) == cfgFile {
			b = []byte(plan.rewrite(string(b)))
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	port := procs.UniquePort(t)
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	p := &prometheus{base: "http://" + listen}
	p.proc = startProc(t, "prometheus", nil, bin,
		"--config.file="+filepath.Join(dir, filepath.Base(cfgFile)),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen,
		"--log.level=warn")
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		if !p.proc.alive() {
			t.Fatalf("prometheus exited:\n%s", p.proc.output())
		}
		return httpOK(p.base + "/-/ready")
	})
	return p
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

// query runs an instant query and returns its vector (or scalar as one
// sample).
func (p *prometheus) query(expr string) ([]promSample, error) {
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/query?query="+url.QueryEscape(expr), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, body.Error)
	}
	switch body.Data.ResultType {
	case "vector":
		var v []promSample
		err := json.Unmarshal(body.Data.Result, &v)
		return v, err
	case "scalar":
		var s []any
		err := json.Unmarshal(body.Data.Result, &s)
		return []promSample{{Value: s}}, err
	}
	return nil, fmt.Errorf("query %s: result type %s", expr, body.Data.ResultType)
}

// primaries returns the instances with is_primary == 1, by cluster_id.
func (p *prometheus) primaries() (map[string][]string, error) {
	v, err := p.query(`otopcua_redundancy_is_primary == 1`)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, s := range v {
		out[s.Metric["cluster_id"]] = append(out[s.Metric["cluster_id"]], s.Metric["instance"])
	}
	for _, l := range out {
		slices.Sort(l)
	}
	return out, nil
}

// alertActive is noAlerts's error when an alert is pending or firing (as
// opposed to Prometheus not answering).
type alertActive struct{ msg string }

func (a *alertActive) Error() string { return a.msg }

// noAlerts returns an *alertActive when any of names is pending or firing.
func (p *prometheus) noAlerts(names []string) error {
	var body struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/alerts", &body); err != nil {
		return err
	}
	for _, a := range body.Data.Alerts {
		if slices.Contains(names, a.Labels["alertname"]) {
			return &alertActive{fmt.Sprintf("alert %s is %s: %v", a.Labels["alertname"], a.State, a.Labels)}
		}
	}
	return nil
}

func isAlert(err error) bool {
	_, ok := err.(*alertActive)
	return ok
}

func (p *prometheus) get(path string, into any) error {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(p.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("%s: %s: %w", path, b, err)
	}
	return nil
}
