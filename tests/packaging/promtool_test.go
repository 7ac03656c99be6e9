package packaging_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/otopcua/otopcua/packaging/grafana"
)

// root is the module root: go test runs in tests/packaging.
var root = filepath.Join("..", "..")

const (
	prometheusConfig = "packaging/prometheus/prometheus.yml"
	alertRules       = "packaging/prometheus/alerts.yml"
	alertTests       = "packaging/prometheus/alerts_test.yml"
	dashboardsDir    = "packaging/grafana/dashboards"
)

// The nodes of the docker-compose rig, as prometheus.yml scrapes them.
var rigTargets = []string{
	"main-1:8080", "main-2:8080",
	"site-a-1:8080", "site-a-2:8080",
	"site-b-1:8080", "site-b-2:8080",
}

// The alerts packaging/README.md documents.
var alertNames = []string{
	"OtopcuaTwoPrimaries", "OtopcuaNoPrimary", "OtopcuaServiceLevelStuck",
	"OtopcuaRoleUnknownDenials", "OtopcuaNotMemberDenials", "OtopcuaConfigDbUnreachable",
	"OtopcuaDeviceDisconnected", "OtopcuaNodeDown", "OtopcuaFloatingAddressTwoHolders", "OtopcuaFloatingAddressUnheld",
	"OtopcuaFloatingAddressConflict",
}

// promtool runs promtool in the module root and returns its output; it
// fails the test when promtool is missing or reports a problem.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runPromtool(t, args...)
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func runPromtool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: install the Debian package prometheus (apt-get install prometheus; scripts/test.sh does it)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func readYAML(t *testing.T, rel string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

type prometheusYAML struct {
	Global struct {
		ScrapeInterval     string `yaml:"scrape_interval"`
		EvaluationInterval string `yaml:"evaluation_interval"`
	} `yaml:"global"`
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

func TestPrometheusConfig(t *testing.T) {
	promtool(t, "check", "config", prometheusConfig)

	var c prometheusYAML
	readYAML(t, prometheusConfig, &c)
	if c.Global.ScrapeInterval != "5s" || c.Global.EvaluationInterval != "5s" {
		t.Errorf("scrape_interval %q, evaluation_interval %q: want 5s and 5s (the alert windows assume it)",
			c.Global.ScrapeInterval, c.Global.EvaluationInterval)
	}
	if !slices.Equal(c.RuleFiles, []string{"alerts.yml"}) {
		t.Errorf("rule_files %v, want [alerts.yml] (relative to the mounted /etc/prometheus)", c.RuleFiles)
	}
	var targets []string
	for _, sc := range c.ScrapeConfigs {
		if sc.JobName != "otopcua" {
			continue
		}
		for _, s := range sc.StaticConfigs {
			targets = append(targets, s.Targets...)
		}
	}
	if !slices.Equal(targets, rigTargets) {
		t.Errorf("job otopcua scrapes %v, want the rig's %v", targets, rigTargets)
	}
}

type rulesYAML struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func TestAlertRules(t *testing.T) {
	promtool(t, "check", "rules", alertRules)

	var f rulesYAML
	readYAML(t, alertRules, &f)
	if len(f.Groups) != 1 || f.Groups[0].Name != "otopcua" {
		t.Fatalf("want one group otopcua, got %d groups", len(f.Groups))
	}
	var names []string
	for _, r := range f.Groups[0].Rules {
		names = append(names, r.Alert)
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
		}
		if r.Annotations["summary"] == "" || len(r.Annotations["description"]) < 80 {
			t.Errorf("%s: needs a summary and a description that says what it means and what to do", r.Alert)
		}
	}
	if !slices.Equal(names, alertNames) {
		t.Errorf("alerts %v, want %v (packaging/README.md documents each)", names, alertNames)
	}
}

type ruleTestsYAML struct {
	Tests []struct {
		Name        string `yaml:"name"`
		InputSeries []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func TestAlertRuleUnitTests(t *testing.T) {
	promtool(t, "test", "rules", alertTests)

	// Every alert has a case where it fires and one where it must not.
	var f ruleTestsYAML
	readYAML(t, alertTests, &f)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, name := range alertNames {
		if !fires[name] {
			t.Errorf("%s: alerts_test.yml has no case in which it fires", name)
		}
		if !quiet[name] {
			t.Errorf("%s: alerts_test.yml has no near miss in which it must not fire", name)
		}
	}
}

// dashboardFiles returns the committed dashboards, the files Grafana loads.
func dashboardFiles(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, dashboardsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 2 {
		t.Fatalf("%d dashboards in %s, want the fleet and node dashboards", len(paths), dashboardsDir)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = data
	}
	return out
}

// dashboardVars fills the Node dashboard's instance variable.
var dashboardVars = map[string]string{"instance": "main-1:8080"}

// recordingRules writes every query as a recording rule, one group per
// panel target so that promtool's message names it.
func recordingRules(t *testing.T, qs []grafana.PanelQuery) []byte {
	t.Helper()
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	type group struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	}
	var groups []group
	for i, q := range qs {
		expr := grafana.ExpandForTest(q.Expr, dashboardVars)
		if strings.Contains(expr, "$") {
			t.Errorf("%s / %s / %s: a variable is left after expansion: %s", q.Dashboard, q.Panel, q.RefID, expr)
		}
		groups = append(groups, group{
			Name:  fmt.Sprintf("%s / %s / %s", q.Dashboard, q.Panel, q.RefID),
			Rules: []rule{{Record: fmt.Sprintf("dashboard_query:%d", i), Expr: expr}},
		})
	}
	data, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A typo in a dashboard query fails here, not in front of an operator.
func TestDashboardQueriesParse(t *testing.T) {
	for name, data := range dashboardFiles(t) {
		qs, err := grafana.PanelQueries(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rules := filepath.Join(t.TempDir(), strings.TrimSuffix(name, ".json")+"-queries.yml")
		if err := os.WriteFile(rules, recordingRules(t, qs), 0o644); err != nil {
			t.Fatal(err)
		}
		abs, err := filepath.Abs(rules)
		if err != nil {
			t.Fatal(err)
		}
		out := promtool(t, "check", "rules", abs)
		if want := fmt.Sprintf("SUCCESS: %d rules found", len(qs)); !strings.Contains(out, want) {
			t.Errorf("%s: promtool said %q, want %q", name, out, want)
		}
	}
}

// The check above can fail: promtool refuses a query with a typo.
func TestPromtoolRefusesABrokenQuery(t *testing.T) {
	qs := []grafana.PanelQuery{{Dashboard: "d", Panel: "p", RefID: "A",
		Expr: `sum by (le (rate(otopcua_driver_poll_duration_seconds_bucket[$__rate_interval]))`}}
	rules := filepath.Join(t.TempDir(), "broken.yml")
	if err := os.WriteFile(rules, recordingRules(t, qs), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(rules)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runPromtool(t, "check", "rules", abs)
	if err == nil {
		t.Fatalf("promtool accepted a broken query:\n%s", out)
	}
	if !strings.Contains(out, "d / p / A") {
		t.Errorf("promtool's message does not name the panel:\n%s", out)
	}
}
