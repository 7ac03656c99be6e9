package grafana

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// generated returns the JSON of every dashboard by file name.
func generated(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		out[f.Name] = f.JSON
	}
	return out
}

func queries(t *testing.T, data []byte) []PanelQuery {
	t.Helper()
	qs, err := PanelQueries(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) == 0 {
		t.Fatal("no queries")
	}
	return qs
}

func TestEveryTargetIsAPrometheusQuery(t *testing.T) {
	for name, data := range generated(t) {
		for _, q := range queries(t, data) {
			if q.DatasourceUID != DatasourceUID || q.DatasourceType != "prometheus" {
				t.Errorf("%s %q %s: datasource uid %q type %q, want uid %q type prometheus",
					name, q.Panel, q.RefID, q.DatasourceUID, q.DatasourceType, DatasourceUID)
			}
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("%s %q %s: empty expr", name, q.Panel, q.RefID)
			}
		}
	}
}

// rangeWindow matches a range selector or a subquery: [5m], [$__range:].
var rangeWindow = regexp.MustCompile(`\[([^\]]*)\]`)

// Fixed windows break when the scrape interval or the time range changes:
// rate() needs at least four samples ($__rate_interval), a total over the
// range needs the range (a subquery over the range steps by $__interval).
func TestWindowsAreGrafanaIntervals(t *testing.T) {
	for name, data := range generated(t) {
		for _, q := range queries(t, data) {
			for _, m := range rangeWindow.FindAllStringSubmatch(q.Expr, -1) {
				if m[1] != "$__rate_interval" && m[1] != "$__range" && m[1] != "$__range:$__interval" {
					t.Errorf("%s %q %s: window [%s] in %s: use $__rate_interval (or $__range for a total over the time range)",
						name, q.Panel, q.RefID, m[1], q.Expr)
				}
			}
			if (strings.Contains(q.Expr, "rate(") || strings.Contains(q.Expr, "increase(")) && !rangeWindow.MatchString(q.Expr) {
				t.Errorf("%s %q %s: rate or increase without a window: %s", name, q.Panel, q.RefID, q.Expr)
			}
		}
	}
}

func TestNodeQueriesSelectTheInstance(t *testing.T) {
	files := generated(t)
	for _, q := range queries(t, files["otopcua-node.json"]) {
		selectors := strings.Count(q.Expr, `{instance="$instance"}`)
		metrics := strings.Count(q.Expr, "{")
		if selectors == 0 || selectors != metrics {
			t.Errorf("node %q %s: every selector must be {instance=\"$instance\"}: %s", q.Panel, q.RefID, q.Expr)
		}
	}
	for _, q := range queries(t, files["otopcua-fleet.json"]) {
		if strings.Contains(q.Expr, "$instance") {
			t.Errorf("fleet %q %s: the fleet dashboard has no instance variable: %s", q.Panel, q.RefID, q.Expr)
		}
	}
}

// model is the part of the dashboard JSON the layout checks read.
type model struct {
	UID        string       `json:"uid"`
	Title      string       `json:"title"`
	Panels     []modelPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      string `json:"query"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type modelPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []modelPanel `json:"panels"`
}

func decodeModel(t *testing.T, data []byte) model {
	t.Helper()
	var m model
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Titles name panels in PanelQueries and in test failures; ids and refIds
// must be unique for Grafana.
func TestPanelsAreUniquelyNamed(t *testing.T) {
	for name, data := range generated(t) {
		m := decodeModel(t, data)
		ids, titles := map[int]bool{}, map[string]bool{}
		var walk func([]modelPanel)
		walk = func(ps []modelPanel) {
			for _, p := range ps {
				if ids[p.ID] || p.ID == 0 {
					t.Errorf("%s: panel %q has id %d, not unique", name, p.Title, p.ID)
				}
				ids[p.ID] = true
				if p.Type != "row" {
					if p.Title == "" || titles[p.Title] {
						t.Errorf("%s: panel title %q empty or not unique", name, p.Title)
					}
					titles[p.Title] = true
					if len(p.Targets) == 0 {
						t.Errorf("%s: panel %q has no query", name, p.Title)
					}
				}
				refs := map[string]bool{}
				for _, tg := range p.Targets {
					if tg.RefID == "" || refs[tg.RefID] {
						t.Errorf("%s: panel %q refId %q empty or not unique", name, p.Title, tg.RefID)
					}
					refs[tg.RefID] = true
				}
				walk(p.Panels)
			}
		}
		walk(m.Panels)
	}
}

// Panels stay inside the 24 columns and do not overlap (Grafana would
// push them around and the layout in the file would not be what is shown).
func TestPanelsDoNotOverlap(t *testing.T) {
	for name, data := range generated(t) {
		m := decodeModel(t, data)
		var all []modelPanel
		var walk func([]modelPanel)
		walk = func(ps []modelPanel) {
			for _, p := range ps {
				all = append(all, p)
				walk(p.Panels)
			}
		}
		walk(m.Panels)
		taken := map[[2]int]string{}
		for _, p := range all {
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("%s: panel %q gridPos %+v outside the grid", name, p.Title, g)
			}
			for x := g.X; x < g.X+g.W; x++ {
				for y := g.Y; y < g.Y+g.H; y++ {
					if other, ok := taken[[2]int{x, y}]; ok {
						t.Errorf("%s: panels %q and %q overlap at x=%d y=%d", name, other, p.Title, x, y)
						return
					}
					taken[[2]int{x, y}] = p.Title
				}
			}
		}
	}
}

func TestNodeDashboardHasInstanceVariable(t *testing.T) {
	files := generated(t)
	m := decodeModel(t, files["otopcua-node.json"])
	if len(m.Templating.List) != 1 {
		t.Fatalf("templating: %+v, want the instance variable only", m.Templating.List)
	}
	v := m.Templating.List[0]
	if v.Name != "instance" || v.Type != "query" || v.Query != InstanceQuery || v.Datasource.UID != DatasourceUID {
		t.Errorf("variable %+v, want query variable instance = %s on datasource %s", v, InstanceQuery, DatasourceUID)
	}
	if m.UID != NodeUID {
		t.Errorf("uid %q, want %q", m.UID, NodeUID)
	}
	if got := decodeModel(t, files["otopcua-fleet.json"]).UID; got != FleetUID {
		t.Errorf("fleet uid %q, want %q", got, FleetUID)
	}
}

// The panels the operator's questions need (packaging/README.md).
func TestDashboardsHaveThePanelsOperatorsNeed(t *testing.T) {
	want := map[string][]string{
		"otopcua-fleet.json": {
			"ServiceLevel per node", "Primary per ClusterId", "Failovers in the time range",
			"Redundancy epoch per ClusterId", "Primary gate denials by reason",
			"Config DB reachable per node", "Cluster members by status", "Devices connected",
			"Nodes connected per device", "Node up",
		},
		"otopcua-node.json": {
			"ServiceLevel", "Role", "Epoch", "Membership change to ServiceLevel latency",
			"Sessions", "Subscriptions", "Monitored items", "Connections and secure channels",
			"Limit refusals", "Driver reads by result", "Poll duration p99", "Config DB",
			"Resident memory", "CPU", "Goroutines",
		},
	}
	files := generated(t)
	for name, titles := range want {
		have := map[string]bool{}
		for _, q := range queries(t, files[name]) {
			have[q.Panel] = true
		}
		for _, title := range titles {
			if !have[title] {
				t.Errorf("%s: no panel %q", name, title)
			}
		}
	}
}

func ExamplePanelQueries() {
	files, _ := Files()
	qs, _ := PanelQueries(files[0].JSON)
	q := qs[0]
	fmt.Println(q.Dashboard, "|", q.Panel, "|", q.RefID, "|", q.Expr)
	// Output: otopcua fleet | Nodes up | A | sum(up{job="otopcua"})
}
