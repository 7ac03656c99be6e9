package grafana

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// DatasourceUID is the uid of the Prometheus datasource every panel and
// target uses (provisioning/datasources/prometheus.yml).
const DatasourceUID = "prometheus"

// Panel sizes on Grafana's 24-column grid.
const (
	fullWidth  = 24
	halfWidth  = 12
	thirdWidth = 8
	panelH     = 8
	statH      = 4
)

func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr(DatasourceUID)}
}

// overTime is a range query drawn over the dashboard's time range; legend
// names each series ("{{instance}}").
func overTime(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource()).
		Expr(expr).LegendFormat(legend).Range()
}

// latest is an instant query: the value at the end of the time range.
func latest(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource()).
		Expr(expr).LegendFormat(legend).Instant()
}

// rows is an instant query in table format: one row per series, one
// column per label.
func rows(expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource()).
		Expr(expr).Instant().Format(prometheus.PromQueryFormatTable)
}

// tooltip shows every series at the cursor, the SDK leaves the mode empty.
func tooltip() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().
		Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)
}

// refID names the i-th target of a panel: A, B, C, …
func refID(i int) string { return string(rune('A' + i)) }

func timeSeries(title, description string, qs ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(description).
		Datasource(datasource()).Span(halfWidth).Height(panelH).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(true).
			DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom)).
		Tooltip(tooltip())
	for i, q := range qs {
		p.WithTarget(q.RefId(refID(i)))
	}
	return p
}

// steps is a time series of a level that jumps between values (a
// ServiceLevel, a count of members): drawn as steps, not slopes.
func steps(title, description string, qs ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return timeSeries(title, description, qs...).
		LineInterpolation(common.LineInterpolationStepAfter)
}

// bars is a time series of counts per interval (failovers, changes).
func bars(title, description string, qs ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return timeSeries(title, description, qs...).
		DrawStyle(common.GraphDrawStyleBars).FillOpacity(80)
}

func singleStat(title, description string, qs ...*prometheus.DataqueryBuilder) *stat.PanelBuilder {
	p := stat.NewPanelBuilder().Title(title).Description(description).
		Datasource(datasource()).Span(4).Height(statH).
		GraphMode(common.BigValueGraphModeNone).Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))
	for i, q := range qs {
		p.WithTarget(q.RefId(refID(i)))
	}
	return p
}

func stateTimeline(title, description string, qs ...*prometheus.DataqueryBuilder) *statetimeline.PanelBuilder {
	p := statetimeline.NewPanelBuilder().Title(title).Description(description).
		Datasource(datasource()).Span(halfWidth).Height(panelH).
		ShowValue(common.VisibilityModeNever).MergeValues(true).
		Tooltip(tooltip())
	for i, q := range qs {
		p.WithTarget(q.RefId(refID(i)))
	}
	return p
}

func tablePanel(title, description string, qs ...*prometheus.DataqueryBuilder) *table.PanelBuilder {
	p := table.NewPanelBuilder().Title(title).Description(description).
		Datasource(datasource()).Span(halfWidth).Height(panelH).
		// The SDK's default footer has a null reducer; Grafana expects a list.
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{}))
	for i, q := range qs {
		p.WithTarget(q.RefId(refID(i)))
	}
	return p
}

// organize hides and renames the columns of a table.
func organize(hide []string, rename map[string]string) dashboard.DataTransformerConfig {
	excluded := map[string]bool{}
	for _, h := range hide {
		excluded[h] = true
	}
	return dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
		"excludeByName": excluded,
		"renameByName":  rename,
	}}
}

// word is one value of a gauge shown as text in a colour.
type word struct {
	value, text, color string
}

func words(ws ...word) []dashboard.ValueMapping {
	options := map[string]dashboard.ValueMappingResult{}
	for i, w := range ws {
		options[w.value] = dashboard.ValueMappingResult{
			Text: cog.ToPtr(w.text), Color: cog.ToPtr(w.color), Index: cog.ToPtr(int32(i)),
		}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
		Type: dashboard.MappingTypeValueToText, Options: options,
	}}}
}

// Mappings of the 0/1 gauges.
var (
	reachableWords = words(word{"0", "unreachable", "red"}, word{"1", "reachable", "green"})
	connectedWords = words(word{"0", "disconnected", "red"}, word{"1", "connected", "green"})
	upWords        = words(word{"0", "down", "red"}, word{"1", "up", "green"})
	yesNoWords     = words(word{"0", "no", "text"}, word{"1", "yes", "green"})
)

// serviceLevelWords names the ServiceLevel bytes otopcua publishes
// (docs/redundancy.md §ServiceLevel).
var serviceLevelWords = words(
	word{"0", "0 not a member", "red"},
	word{"100", "100 Config DB unreachable", "orange"},
	word{"200", "200 stale", "yellow"},
	word{"240", "240 Secondary", "green"},
	word{"250", "250 Primary", "blue"},
	word{"255", "255 not computed", "purple"},
)

// serviceLevelSteps colours a ServiceLevel by its band.
func serviceLevelSteps() *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{
			{Value: nil, Color: "red"},
			{Value: cog.ToPtr(100.0), Color: "orange"},
			{Value: cog.ToPtr(200.0), Color: "yellow"},
			{Value: cog.ToPtr(240.0), Color: "green"},
			{Value: cog.ToPtr(250.0), Color: "blue"},
			{Value: cog.ToPtr(255.0), Color: "purple"},
		})
}
