package grafana

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// NodeUID is the uid of the Node dashboard (its URL: /d/otopcua-node).
const NodeUID = "otopcua-node"

// InstanceQuery lists the nodes the Node dashboard offers: every instance
// that exports otopcua_build_info.
const InstanceQuery = "label_values(otopcua_build_info, instance)"

// Node is the dashboard of one node, chosen with the instance variable.
func Node() (dashboard.Dashboard, error) {
	b := newDashboard("otopcua node", NodeUID,
		"One otopcua node: redundancy, cluster, OPC UA load, devices and drivers, process.").
		WithVariable(dashboard.NewQueryVariableBuilder("instance").Label("Node").
			Query(dashboard.StringOrMap{String: cog.ToPtr(InstanceQuery)}).
			Definition(InstanceQuery).
			Datasource(datasource()).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc))
	addRow(b, "Node", nodeIdentity())
	addRow(b, "Redundancy", nodeRedundancy())
	addRow(b, "Cluster", nodeCluster())
	addRow(b, "OPC UA", nodeOPCUA())
	addRow(b, "Devices", nodeDevices())
	addCollapsedRow(b, "Process", nodeProcess())
	return build(b)
}

func nodeIdentity() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		tablePanel("Build and identity", "The node's otopcua version, ClusterId, NodeId (Cluster:PublicHostname:Port) and ApplicationUri.",
			rows(`otopcua_build_info{instance="$instance"} * on (instance) group_left (cluster_id, node_id, application_uri) otopcua_node_info{instance="$instance"}`)).
			Span(fullWidth).Height(statH).
			WithTransformation(organize([]string{"Time", "Value", "job", "__name__"}, map[string]string{})),
		singleStat("ServiceLevel", "The node's OPC UA Server.ServiceLevel now.",
			latest(`otopcua_redundancy_service_level{instance="$instance"}`, "{{cluster_id}}")).
			Mappings(serviceLevelWords).Thresholds(serviceLevelSteps()).ColorMode(common.BigValueColorModeBackground),
		singleStat("Role", "The node's redundancy role in its ClusterId: primary, secondary, detached or unknown (no redundancy snapshot names it yet).",
			latest(`otopcua_redundancy_role{instance="$instance"} == 1`, "{{role}}")).
			TextMode(common.BigValueTextModeName),
		singleStat("Epoch", "The redundancy epoch of the node's ClusterId: it increases at every change of Primary.",
			latest(`otopcua_redundancy_epoch{instance="$instance"}`, "{{cluster_id}}")).
			Decimals(0),
		singleStat("Config DB", "The node's last Config DB probe.",
			latest(`otopcua_configdb_reachable{instance="$instance"}`, "Config DB")).
			Mappings(reachableWords).ColorMode(common.BigValueColorModeBackground),
		singleStat("Cluster member Up", "Whether the node is an Up member of the cluster.",
			latest(`otopcua_cluster_self_up{instance="$instance"}`, "Up")).
			Mappings(yesNoWords),
		singleStat("Cluster leader", "Whether the node is the cluster leader (it downs unreachable members).",
			latest(`otopcua_cluster_is_leader{instance="$instance"}`, "leader")).
			Mappings(yesNoWords),
	}
}

func nodeRedundancy() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		steps("ServiceLevel over time", "250 healthy Primary, 240 healthy Secondary, 200 stale, 100 Config DB unreachable, 0 not a member, 255 not computed yet.",
			overTime(`otopcua_redundancy_service_level{instance="$instance"}`, "{{cluster_id}}")).
			Min(0).Max(255),
		stateTimeline("Role over time", "The node's redundancy role.",
			overTime(`otopcua_redundancy_role{instance="$instance"}`, "{{role}}")).
			Mappings(yesNoWords),
		timeSeries("Membership change to ServiceLevel latency",
			"Time from a membership change to the ServiceLevel change it caused (p50 and p99).",
			overTime(`histogram_quantile(0.5, sum by (le) (rate(otopcua_redundancy_membership_to_service_level_seconds_bucket{instance="$instance"}[$__rate_interval])))`, "p50"),
			overTime(`histogram_quantile(0.99, sum by (le) (rate(otopcua_redundancy_membership_to_service_level_seconds_bucket{instance="$instance"}[$__rate_interval])))`, "p99")).
			Unit("s"),
		bars("ServiceLevel changes by level", "Changes of the node's ServiceLevel, by the level it changed to.",
			overTime(`sum by (level) (increase(otopcua_redundancy_service_level_change_total{instance="$instance"}[$__rate_interval]))`, "{{level}}")).
			Decimals(0),
		timeSeries("Primary gate denials", "Actions the Primary gate refused on this node, by site and reason.",
			overTime(`sum by (site, reason) (rate(otopcua_redundancy_primary_gate_denied_total{instance="$instance"}[$__rate_interval]))`, "{{site}} {{reason}}")).
			Unit("cps"),
		stateTimeline("Config DB reachable over time", "The node's Config DB probe (SELECT 1 every 5 s).",
			overTime(`otopcua_configdb_reachable{instance="$instance"}`, "Config DB")).
			Mappings(reachableWords),
	}
}

func nodeCluster() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		steps("Members by status", "Members of the cluster mesh by status, as this node sees them.",
			overTime(`otopcua_cluster_members{instance="$instance"}`, "{{status}}")).
			Span(thirdWidth).Decimals(0),
		steps("Unreachable members", "Members this node finds unreachable.",
			overTime(`otopcua_cluster_unreachable{instance="$instance"}`, "unreachable")).
			Span(thirdWidth).Decimals(0),
		timeSeries("Dropped cluster messages", "Cluster messages this node dropped, by reason.",
			overTime(`sum by (reason) (rate(otopcua_cluster_messages_dropped_total{instance="$instance"}[$__rate_interval]))`, "{{reason}}")).
			Span(thirdWidth).Unit("cps"),
	}
}

func nodeOPCUA() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		steps("Sessions", "OPC UA sessions held, activated and not yet activated.",
			overTime(`otopcua_opcua_sessions{instance="$instance"}`, "{{state}}")).
			Span(thirdWidth).Decimals(0),
		steps("Connections and secure channels", "TCP connections held (handshakes included) and open secure channels.",
			overTime(`otopcua_opcua_connections{instance="$instance"}`, "connections"),
			overTime(`otopcua_opcua_channels{instance="$instance"}`, "channels")).
			Span(thirdWidth).Decimals(0),
		steps("Subscriptions", "Subscriptions held, orphaned ones waiting for a transfer included.",
			overTime(`otopcua_opcua_subscriptions{instance="$instance"}`, "subscriptions")).
			Span(thirdWidth).Decimals(0),
		steps("Monitored items", "Monitored items held.",
			overTime(`otopcua_opcua_monitored_items{instance="$instance"}`, "monitored items")).
			Span(thirdWidth).Decimals(0),
		timeSeries("Limit refusals", "Requests refused by a client limit (docs/operations.md), by limit.",
			overTime(`sum by (limit) (rate(otopcua_opcua_limit_refusals_total{instance="$instance"}[$__rate_interval]))`, "{{limit}}")).
			Span(thirdWidth).Unit("cps"),
		bars("Address-space apply failures", "Address-space changes the node failed to apply, by kind.",
			overTime(`sum by (kind) (increase(otopcua_opcua_apply_failed_total{instance="$instance"}[$__rate_interval]))`, "{{kind}}")).
			Span(thirdWidth).Decimals(0),
	}
}

func nodeDevices() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		stateTimeline("Devices connected", "The node's connection to each device of its deployment.",
			overTime(`otopcua_device_connected{instance="$instance"}`, "{{device}}")).
			Mappings(connectedWords),
		singleStat("Deployment version", "The deployment version the node applied.",
			latest(`otopcua_deployment_version{instance="$instance"}`, "version")).
			Span(6).Height(panelH).Decimals(0),
		singleStat("Deployment from cache", "yes: the node runs the copy cached in its LocalDb because the Config DB did not answer.",
			latest(`otopcua_deployment_from_cache{instance="$instance"}`, "from cache")).
			Span(6).Height(panelH).Mappings(words(word{"0", "no", "green"}, word{"1", "yes", "orange"})),
		timeSeries("Driver reads by result", "Device reads per second, by device and result.",
			overTime(`sum by (device, result) (rate(otopcua_driver_reads_total{instance="$instance"}[$__rate_interval]))`, "{{device}} {{result}}")).
			Span(thirdWidth).Unit("cps"),
		timeSeries("Driver writes by result", "Device writes per second, by device and result.",
			overTime(`sum by (device, result) (rate(otopcua_driver_writes_total{instance="$instance"}[$__rate_interval]))`, "{{device}} {{result}}")).
			Span(thirdWidth).Unit("cps"),
		timeSeries("Poll duration p99", "99th percentile of the time one poll of a device takes.",
			overTime(`histogram_quantile(0.99, sum by (device, le) (rate(otopcua_driver_poll_duration_seconds_bucket{instance="$instance"}[$__rate_interval])))`, "{{device}}")).
			Span(thirdWidth).Unit("s"),
	}
}

func nodeProcess() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		timeSeries("Resident memory", "Resident set size of the otopcua process.",
			overTime(`process_resident_memory_bytes{instance="$instance"}`, "RSS")).
			Span(6).Unit("bytes"),
		timeSeries("CPU", "CPU time used per second (1 = one core).",
			overTime(`rate(process_cpu_seconds_total{instance="$instance"}[$__rate_interval])`, "CPU")).
			Span(6).Unit("percentunit"),
		timeSeries("Goroutines", "Goroutines of the otopcua process.",
			overTime(`go_goroutines{instance="$instance"}`, "goroutines")).
			Span(6).Decimals(0),
		timeSeries("Open file descriptors", "File descriptors the process holds (connections included).",
			overTime(`process_open_fds{instance="$instance"}`, "fds")).
			Span(6).Decimals(0),
	}
}
