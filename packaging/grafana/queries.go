package grafana

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// PanelQuery is one target of one panel of a dashboard.
type PanelQuery struct {
	Dashboard string // the dashboard's title
	Panel     string // the panel's title (a panel nested in a row keeps its own)
	RefID     string
	Expr      string // the PromQL expression, Grafana variables unexpanded
	// DatasourceUID and DatasourceType name the target's datasource, or the
	// panel's when the target names none.
	DatasourceUID  string
	DatasourceType string
}

// The parts of Grafana's dashboard JSON model PanelQueries reads.
type (
	dashboardJSON struct {
		Title  string      `json:"title"`
		Panels []panelJSON `json:"panels"`
	}
	panelJSON struct {
		Title      string          `json:"title"`
		Type       string          `json:"type"`
		Datasource json.RawMessage `json:"datasource"`
		Targets    []targetJSON    `json:"targets"`
		Panels     []panelJSON     `json:"panels"` // a row's panels
	}
	targetJSON struct {
		RefID      string          `json:"refId"`
		Expr       *string         `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	}
)

// PanelQueries lists every target of every panel of a dashboard's JSON, in
// the order of the panels, the panels nested in rows included. A target
// without an expr is not a Prometheus query: PanelQueries fails on it, so a
// test that checks the queries cannot miss one.
func PanelQueries(dashboardJSONBytes []byte) ([]PanelQuery, error) {
	var d dashboardJSON
	if err := json.Unmarshal(dashboardJSONBytes, &d); err != nil {
		return nil, fmt.Errorf("decode dashboard: %w", err)
	}
	var out []PanelQuery
	var walk func(panels []panelJSON) error
	walk = func(panels []panelJSON) error {
		for _, p := range panels {
			panelUID, panelType, err := decodeDatasource(p.Datasource)
			if err != nil {
				return fmt.Errorf("dashboard %q panel %q: %w", d.Title, p.Title, err)
			}
			for _, t := range p.Targets {
				if t.Expr == nil {
					return fmt.Errorf("dashboard %q panel %q target %q has no expr: not a Prometheus query", d.Title, p.Title, t.RefID)
				}
				uid, typ, err := decodeDatasource(t.Datasource)
				if err != nil {
					return fmt.Errorf("dashboard %q panel %q target %q: %w", d.Title, p.Title, t.RefID, err)
				}
				if uid == "" && typ == "" {
					uid, typ = panelUID, panelType
				}
				out = append(out, PanelQuery{
					Dashboard: d.Title, Panel: p.Title, RefID: t.RefID, Expr: *t.Expr,
					DatasourceUID: uid, DatasourceType: typ,
				})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeDatasource reads a datasource reference: an object {type, uid}, or
// the older plain string (a datasource name or uid, reported as the uid).
func decodeDatasource(raw json.RawMessage) (uid, typ string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return name, "", nil
	}
	var ref struct {
		UID  string `json:"uid"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		return "", "", fmt.Errorf("datasource %s: %w", raw, err)
	}
	return ref.UID, ref.Type, nil
}

// Values ExpandForTest gives Grafana's interval variables unless vars names
// them. They are what Grafana computes for the dashboards' default last
// hour with the datasource's 5 s scrape interval: $__interval is at least
// the scrape interval, $__rate_interval = max($__interval + scrape
// interval, 4 × scrape interval).
var testIntervals = map[string]string{
	"__interval":      "5s",
	"__rate_interval": "20s",
	"__range":         "1h",
}

// variableRef matches ${name}, ${name:format} and $name.
var variableRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// ExpandForTest replaces Grafana's variables in a panel's expression so
// that Prometheus can evaluate it: $__rate_interval, $__interval and
// $__range (vars may override them; see testIntervals for the defaults)
// and every dashboard variable named in vars, written $name, ${name} or
// ${name:format} (the format is ignored: the value is inserted as given).
// A variable it does not know is left as it is, so the expression fails to
// parse rather than quietly meaning something else.
func ExpandForTest(expr string, vars map[string]string) string {
	return variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		name := m[1] + m[2]
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := testIntervals[name]; ok {
			return v
		}
		return ref
	})
}
