package grafana

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// FleetUID is the uid of the Fleet dashboard (its URL: /d/otopcua-fleet).
const FleetUID = "otopcua-fleet"

// Fleet is the dashboard of every node and ClusterId Prometheus scrapes.
func Fleet() (dashboard.Dashboard, error) {
	b := newDashboard("otopcua fleet", FleetUID,
		"Every otopcua node and ClusterId: ServiceLevels, Primaries, failovers, gate denials, Config DB, members, devices.")
	addRow(b, "Summary", fleetSummary())
	addRow(b, "Redundancy", fleetRedundancy())
	addRow(b, "Cluster and Config DB", fleetHealth())
	addRow(b, "Devices", fleetDevices())
	addRow(b, "Alarms", fleetAlarms())
	return build(b)
}

func fleetSummary() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		singleStat("Nodes up", "otopcua nodes Prometheus scrapes successfully, of all it tries.",
			latest(`sum(up{job="otopcua"})`, "up"),
			latest(`count(up{job="otopcua"})`, "targets")).
			Span(6).TextMode(common.BigValueTextModeValueAndName),
		singleStat("ClusterIds with one Primary", "ClusterIds in which exactly one node is Primary, of all ClusterIds.",
			latest(`count(count by (cluster_id) (otopcua_redundancy_is_primary == 1) == 1) or vector(0)`, "one Primary"),
			latest(`count(count by (cluster_id) (otopcua_redundancy_is_primary))`, "ClusterIds")).
			Span(6).TextMode(common.BigValueTextModeValueAndName),
		singleStat("Devices connected", "Connections from nodes to devices: every node of a pair reads every device of its ClusterId.",
			latest(`sum(otopcua_device_connected)`, "connected"),
			latest(`count(otopcua_device_connected)`, "configured")).
			Span(6).TextMode(common.BigValueTextModeValueAndName),
		singleStat("Config DB reachable", "Nodes whose last Config DB probe succeeded, of all nodes.",
			latest(`sum(otopcua_configdb_reachable)`, "reachable"),
			latest(`count(otopcua_configdb_reachable)`, "nodes")).
			Span(6).TextMode(common.BigValueTextModeValueAndName),
	}
}

func fleetRedundancy() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		steps("ServiceLevel per node",
			"Each node's OPC UA Server.ServiceLevel: 250 healthy Primary, 240 healthy Secondary, 200 stale, 100 Config DB unreachable, 0 not a member, 255 not computed yet.",
			overTime(`otopcua_redundancy_service_level`, "{{instance}}")).
			Min(0).Max(255).Span(16),
		tablePanel("Primary per ClusterId",
			"The node that is Primary in each ClusterId now, and the redundancy epoch (it increases at every change of Primary). Two rows for one ClusterId: dual-active.",
			rows(`max by (cluster_id, instance) (otopcua_redundancy_epoch * (otopcua_redundancy_is_primary == 1))`)).
			Span(thirdWidth).
			WithTransformation(organize([]string{"Time"},
				map[string]string{"cluster_id": "ClusterId", "instance": "Primary", "Value": "Epoch"})),
		singleStat("Failovers in the time range",
			"Changes of Primary per ClusterId over the dashboard's time range: how often the ClusterId's redundancy epoch (the newest any of its nodes reports; a fencing token, not a counter) changed; 0 (role not known yet, at boot) is not an epoch.",
			latest(`changes((max by (cluster_id) (otopcua_redundancy_epoch > 0))[$__range:$__interval])`, "{{cluster_id}}")).
			Span(6).Height(panelH).Decimals(0).TextMode(common.BigValueTextModeValueAndName),
		steps("Redundancy epoch per ClusterId",
			"Each step up is a change of Primary in that ClusterId.",
			overTime(`max by (cluster_id) (otopcua_redundancy_epoch)`, "{{cluster_id}}")).
			Span(9).Decimals(0),
		timeSeries("Primary gate denials by reason",
			"Writes, alarm acks, alert emits and historian drains refused by the Primary gate. secondary: expected on Secondaries; role-unknown for more than the boot window: a node no redundancy snapshot names; not-member: a node that runs but has not joined its cluster.",
			overTime(`sum by (reason) (rate(otopcua_redundancy_primary_gate_denied_total[$__rate_interval]))`, "{{reason}}")).
			Span(9).Unit("cps"),
	}
}

func fleetHealth() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		stateTimeline("Node up", "Whether Prometheus scrapes each otopcua node.",
			overTime(`up{job="otopcua"}`, "{{instance}}")).
			Mappings(upWords),
		stateTimeline("Config DB reachable per node", "Each node's last Config DB probe (SELECT 1 every 5 s).",
			overTime(`otopcua_configdb_reachable`, "{{instance}}")).
			Mappings(reachableWords),
		steps("Cluster members by status", "Members of the cluster mesh by status: the highest count any node reports.",
			overTime(`max by (status) (otopcua_cluster_members)`, "{{status}}")).
			Decimals(0),
		steps("Unreachable members per node", "Members each node currently finds unreachable.",
			overTime(`otopcua_cluster_unreachable`, "{{instance}}")).
			Decimals(0),
	}
}

func fleetDevices() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		steps("Nodes connected per device", "How many nodes of the device's ClusterId hold a connection to it (2 for a healthy pair).",
			overTime(`sum by (cluster_id, device) (otopcua_device_connected * on (instance) group_left (cluster_id) otopcua_node_info)`,
				"{{cluster_id}} {{device}}")).
			Min(0).Decimals(0),
		stateTimeline("Device connected per node", "Each node's connection to each of its devices.",
			overTime(`otopcua_device_connected`, "{{instance}} {{device}}")).
			Mappings(connectedWords),
	}
}

func fleetAlarms() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		steps("Active alarms per ClusterId", "Alarms active now in each ClusterId (both nodes of a pair evaluate every alarm and agree).",
			overTime(`max by (cluster_id) (otopcua_alarms_active)`, "{{cluster_id}}")).
			Min(0).Decimals(0),
		timeSeries("Alarm transitions per ClusterId", "Transitions published on the alerts topic (active, inactive, acked, confirmed, …), per second.",
			overTime(`max by (cluster_id, kind) (rate(otopcua_alarm_transitions_total[$__rate_interval]))`, "{{cluster_id}} {{kind}}")).
			Unit("cps"),
		timeSeries("Alarm history queue per node", "Transitions waiting in each node's LocalDb for the Config DB. The Primary drains it; a growing queue on the Primary means the Config DB refuses or is down.",
			overTime(`otopcua_historian_queue_depth`, "{{instance}}")).
			Min(0).Decimals(0),
	}
}

// newDashboard starts a dashboard with the settings both share: tag
// otopcua, a link to the other otopcua dashboards, 10 s refresh, the last
// hour.
func newDashboard(title, uid, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).Uid(uid).Description(description).
		Tags([]string{"otopcua"}).
		Refresh("10s").Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Link(dashboard.NewDashboardLinkBuilder("otopcua").
			Type(dashboard.DashboardLinkTypeDashboards).Tags([]string{"otopcua"}).
			Icon("external link").Tooltip("otopcua dashboards").
			AsDropdown(true).KeepTime(true).IncludeVars(false))
}

// addRow adds an expanded row and the panels under it.
func addRow(b *dashboard.DashboardBuilder, title string, panels []cog.Builder[dashboard.Panel]) {
	b.WithRow(dashboard.NewRowBuilder(title))
	for _, p := range panels {
		b.WithPanel(p)
	}
}

// addCollapsedRow adds a collapsed row: its panels are nested in it and
// shown when the row is opened.
func addCollapsedRow(b *dashboard.DashboardBuilder, title string, panels []cog.Builder[dashboard.Panel]) {
	r := dashboard.NewRowBuilder(title).Collapsed(true)
	for _, p := range panels {
		r.WithPanel(p)
	}
	b.WithRow(r)
}

// build builds the dashboard and numbers its panels 1, 2, … in order, rows
// and the panels nested in them included, so that the JSON is stable.
func build(b *dashboard.DashboardBuilder) (dashboard.Dashboard, error) {
	d, err := b.Build()
	if err != nil {
		return dashboard.Dashboard{}, err
	}
	id := uint32(0)
	next := func() uint32 { id++; return id }
	for _, p := range d.Panels {
		switch {
		case p.Panel != nil:
			p.Panel.Id = cog.ToPtr(next())
		case p.RowPanel != nil:
			p.RowPanel.Id = next()
			for i := range p.RowPanel.Panels {
				p.RowPanel.Panels[i].Id = cog.ToPtr(next())
			}
		}
	}
	return d, nil
}
