package packaging_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/otopcua/otopcua/packaging/grafana"
)

// exportedMetrics are the Prometheus names otopcua's /metrics exposes
// (DESIGN.md §Metrics), plus the Go and process collectors' and
// Prometheus's own up. A rename in the code must be made here too, and
// then the alert or panel that uses the old name fails below.
var exportedMetrics = []string{
	"otopcua_build_info",
	"otopcua_node_info",
	"otopcua_configdb_reachable",
	"otopcua_cluster_self_up",
	"otopcua_cluster_members",
	"otopcua_cluster_members_by_cluster_id",
	"otopcua_cluster_unreachable",
	"otopcua_cluster_is_leader",
	"otopcua_cluster_is_oldest",
	"otopcua_cluster_is_oldest_by_cluster_id",
	"otopcua_cluster_messages_dropped_total",
	"otopcua_redundancy_service_level_change_total",
	"otopcua_redundancy_primary_gate_denied_total",
	"otopcua_opcua_apply_failed_total",
	"otopcua_opcua_connections",
	"otopcua_opcua_channels",
	"otopcua_opcua_sessions",
	"otopcua_opcua_subscriptions",
	"otopcua_opcua_monitored_items",
	"otopcua_opcua_limit_refusals_total",
	"otopcua_auth_throttled_total",
	// Nodes with the driver role.
	"otopcua_redundancy_service_level",
	"otopcua_redundancy_is_primary",
	"otopcua_redundancy_epoch",
	"otopcua_redundancy_role",
	// Driver nodes: alarms and their history queue.
	"otopcua_alarms_active",
	"otopcua_alarm_transitions_total",
	"otopcua_historian_queue_depth",
	"otopcua_historian_drained_total",
	"otopcua_historian_poisoned",
	"otopcua_historian_refused_total",
	"otopcua_historian_oldest_age_seconds",
	"otopcua_historian_drain_state",
	// Nodes serving a deployment with devices.
	"otopcua_device_connected",
	"otopcua_device_degraded",
	"otopcua_driver_reads_total",
	"otopcua_driver_writes_total",
	"otopcua_deployment_version",
	"otopcua_deployment_from_cache",
	// Nodes with Redundancy:FloatingAddress.
	"otopcua_floating_address_owned",
	"otopcua_floating_address_seizes_total",
	"otopcua_floating_address_drift_total",
	"otopcua_floating_address_conflict",
	// Nodes with OpcUa:RedundancySupport HotAndMirrored.
	"otopcua_mirror_ready",
	"otopcua_mirror_peer_ready",
	"otopcua_mirror_sessions",
	"otopcua_mirror_lag_bytes",
	"otopcua_mirror_dropped_total",
	"otopcua_mirror_takeovers_total",
	"otopcua_mirror_records_total",
	"otopcua_mirror_bytes_total",
	// Go and process collectors.
	"process_resident_memory_bytes",
	"process_cpu_seconds_total",
	"go_goroutines",
	"process_open_fds",
	// Written by Prometheus for every target.
	"up",
}

// exportedHistograms are exposed as NAME_bucket, NAME_sum and NAME_count.
var exportedHistograms = []string{
	"otopcua_redundancy_membership_to_service_level_seconds",
	"otopcua_driver_poll_duration_seconds",
	"otopcua_mirror_lag_seconds",
}

func exported(name string) bool {
	if slices.Contains(exportedMetrics, name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(exportedHistograms, base) {
			return true
		}
	}
	return false
}

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	matchers   = regexp.MustCompile(`\{[^}]*\}`)
	windows    = regexp.MustCompile(`\[[^\]]*\]`)
	labelLists = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
)

// Words of PromQL that are not metric names when no "(" follows.
var promqlKeywords = []string{
	"and", "or", "unless", "by", "without", "on", "ignoring",
	"group_left", "group_right", "offset", "bool", "inf", "nan",
}

// metricNames lists the metric names an expression selects: identifiers
// outside strings, label matchers, windows and label lists that are not
// a function or aggregation (followed by "("), a keyword, or part of a
// number or duration.
func metricNames(expr string) []string {
	s := quoted.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, "{}")
	s = windows.ReplaceAllString(s, "")
	s = labelLists.ReplaceAllString(s, "")
	var names []string
	for _, loc := range identifier.FindAllStringIndex(s, -1) {
		start, end := loc[0], loc[1]
		if start > 0 && (isDigit(s[start-1]) || s[start-1] == '.') {
			continue // 1e3, 5m
		}
		word := s[start:end]
		if strings.HasPrefix(strings.TrimLeft(s[end:], " \t\n"), "(") || slices.Contains(promqlKeywords, strings.ToLower(word)) {
			continue
		}
		if !slices.Contains(names, word) {
			names = append(names, word)
		}
	}
	return names
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job="otopcua"} == 0`, []string{"up"}},
		{`count by (cluster_id) ((min_over_time(a_b[20s]) == 1) and a_b) > 1`, []string{"a_b"}},
		{`sum by (job, instance) (rate(c_total{reason="role-unknown"}[1m])) > 0`, []string{"c_total"}},
		{`(x == 0) * on (instance) group_left (cluster_id) node_info`, []string{"x", "node_info"}},
		{`histogram_quantile(0.99, sum by (device, le) (rate(h_bucket{instance="main-1:8080"}[20s])))`, []string{"h_bucket"}},
		{`count(count by (cluster_id) (p == 1) == 1) or vector(0)`, []string{"p"}},
		{`m offset 5m + n * 1e3`, []string{"m", "n"}},
		{`sum(a) without (instance) / ignoring (le) b unless c`, []string{"a", "b", "c"}},
		{`label_replace(m, "dst", "$1", "src", "(.*)")`, []string{"m"}},
		{`{__name__="x"}`, nil},
		{`sum(rate(r{a="up or down"}[5m])) by (a)`, []string{"r"}},
		{`e * (f == bool 1)`, []string{"e", "f"}},
		{`x:recorded:rate5m > Inf`, []string{"x:recorded:rate5m"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

func TestAlertMetricsAreExported(t *testing.T) {
	var f rulesYAML
	readYAML(t, alertRules, &f)
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: no metric found in %q", r.Alert, r.Expr)
			}
			for _, name := range names {
				if !exported(name) {
					t.Errorf("%s uses %s, which otopcua does not export", r.Alert, name)
				}
			}
		}
	}
}

// The unit tests feed the same names the rules read.
func TestAlertTestSeriesAreExported(t *testing.T) {
	var f ruleTestsYAML
	readYAML(t, alertTests, &f)
	for _, tc := range f.Tests {
		for _, s := range tc.InputSeries {
			name, _, _ := strings.Cut(s.Series, "{")
			if !exported(name) {
				t.Errorf("test %q feeds %s, which otopcua does not export", tc.Name, name)
			}
		}
	}
}

// labelValuesMetric is the metric of a label_values(metric, label) variable.
var labelValuesMetric = regexp.MustCompile(`^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)`)

func TestDashboardMetricsAreExported(t *testing.T) {
	for name, data := range dashboardFiles(t) {
		qs, err := grafana.PanelQueries(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, q := range qs {
			names := metricNames(grafana.ExpandForTest(q.Expr, dashboardVars))
			if len(names) == 0 {
				t.Errorf("%s %q %s: no metric found in %q", name, q.Panel, q.RefID, q.Expr)
			}
			for _, m := range names {
				if !exported(m) {
					t.Errorf("%s panel %q %s uses %s, which otopcua does not export", name, q.Panel, q.RefID, m)
				}
			}
		}
		var d struct {
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Query string `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		for _, v := range d.Templating.List {
			m := labelValuesMetric.FindStringSubmatch(v.Query)
			if m == nil || !exported(m[1]) {
				t.Errorf("%s variable %s: query %q does not list the values of an exported metric", name, v.Name, v.Query)
			}
		}
	}
}
