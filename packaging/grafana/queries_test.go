package grafana

import (
	"reflect"
	"strings"
	"testing"
)

// A dashboard as Grafana saves one: a top-level panel, a collapsed row
// holding two panels, an expanded (empty) row, a target that inherits the
// panel's datasource and one with the older string datasource.
const savedDashboard = `{
  "title": "Saved",
  "panels": [
    {"type": "timeseries", "title": "Top", "datasource": {"type": "prometheus", "uid": "prom"},
     "targets": [
       {"refId": "A", "expr": "up"},
       {"refId": "B", "expr": "rate(x_total[$__rate_interval])", "datasource": {"type": "prometheus", "uid": "other"}}
     ]},
    {"type": "row", "title": "Collapsed", "collapsed": true, "panels": [
      {"type": "stat", "title": "Inner 1", "targets": [{"refId": "A", "expr": "go_goroutines{instance=\"$instance\"}", "datasource": "Legacy"}]},
      {"type": "text", "title": "Notes"},
      {"type": "stat", "title": "Inner 2", "datasource": {"type": "prometheus", "uid": "prom"}, "targets": [{"refId": "C", "expr": "sum(y)"}]}
    ]},
    {"type": "row", "title": "Open", "collapsed": false, "panels": []},
    {"type": "gauge", "title": "After", "targets": [{"refId": "A", "expr": "z"}]}
  ]
}`

func TestPanelQueriesWalksRows(t *testing.T) {
	got, err := PanelQueries([]byte(savedDashboard))
	if err != nil {
		t.Fatal(err)
	}
	want := []PanelQuery{
		{Dashboard: "Saved", Panel: "Top", RefID: "A", Expr: "up", DatasourceUID: "prom", DatasourceType: "prometheus"},
		{Dashboard: "Saved", Panel: "Top", RefID: "B", Expr: "rate(x_total[$__rate_interval])", DatasourceUID: "other", DatasourceType: "prometheus"},
		{Dashboard: "Saved", Panel: "Inner 1", RefID: "A", Expr: `go_goroutines{instance="$instance"}`, DatasourceUID: "Legacy"},
		{Dashboard: "Saved", Panel: "Inner 2", RefID: "C", Expr: "sum(y)", DatasourceUID: "prom", DatasourceType: "prometheus"},
		{Dashboard: "Saved", Panel: "After", RefID: "A", Expr: "z"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PanelQueries:\n got %+v\nwant %+v", got, want)
	}
}

func TestPanelQueriesRefusesNonPrometheusTargets(t *testing.T) {
	for name, doc := range map[string]string{
		"target without expr": `{"title": "T", "panels": [{"title": "Logs", "targets": [{"refId": "A", "query": "{job=\"x\"}"}]}]}`,
		"nested without expr": `{"title": "T", "panels": [{"type": "row", "title": "R", "panels": [{"title": "P", "targets": [{"refId": "A"}]}]}]}`,
		"not JSON":            `{"title": `,
		"bad datasource":      `{"title": "T", "panels": [{"title": "P", "datasource": 7, "targets": [{"refId": "A", "expr": "up"}]}]}`,
	} {
		if qs, err := PanelQueries([]byte(doc)); err == nil {
			t.Errorf("%s: no error, got %+v", name, qs)
		}
	}
	_, err := PanelQueries([]byte(`{"title": "T", "panels": [{"title": "Logs", "targets": [{"refId": "B"}]}]}`))
	if err == nil || !strings.Contains(err.Error(), `panel "Logs" target "B"`) {
		t.Errorf("error %v does not name the panel and target", err)
	}
}

func TestPanelQueriesOfEmptyDashboard(t *testing.T) {
	qs, err := PanelQueries([]byte(`{"title": "Empty"}`))
	if err != nil || len(qs) != 0 {
		t.Errorf("got %v, %v; want no queries and no error", qs, err)
	}
}

func TestExpandForTest(t *testing.T) {
	node := map[string]string{"instance": "main-1:8080"}
	for _, tc := range []struct {
		expr string
		vars map[string]string
		want string
	}{
		{`rate(x_total{instance="$instance"}[$__rate_interval])`, node, `rate(x_total{instance="main-1:8080"}[20s])`},
		{`increase(e[$__range])`, nil, `increase(e[1h])`},
		{`avg_over_time(g[$__interval])`, nil, `avg_over_time(g[5s])`},
		{`x{instance="${instance}"}`, node, `x{instance="main-1:8080"}`},
		{`x{instance=~"${instance:regex}"}`, node, `x{instance=~"main-1:8080"}`},
		// vars override the interval defaults.
		{`increase(e[$__range])`, map[string]string{"__range": "5m"}, `increase(e[5m])`},
		{`rate(r[$__rate_interval]) / rate(s[$__rate_interval])`, map[string]string{"__rate_interval": "1m"}, `rate(r[1m]) / rate(s[1m])`},
		// $__interval_ms is another variable, not $__interval followed by _ms.
		{`x[$__interval_ms]`, nil, `x[$__interval_ms]`},
		// Unknown variables stay, so the query does not parse.
		{`x{instance="$node"}`, node, `x{instance="$node"}`},
		{`up`, node, `up`},
		// $instance_id is not $instance.
		{`x{a="$instance_id"}`, node, `x{a="$instance_id"}`},
	} {
		if got := ExpandForTest(tc.expr, tc.vars); got != tc.want {
			t.Errorf("ExpandForTest(%q, %v) = %q, want %q", tc.expr, tc.vars, got, tc.want)
		}
	}
}
