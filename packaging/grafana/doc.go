// Package grafana builds otopcua's Grafana dashboards in Go and writes them
// as the JSON files Grafana provisions (packaging/grafana/dashboards).
//
// It owns two dashboards: Fleet (every node and ClusterId of a deployment at
// a glance: ServiceLevels, who is Primary, failovers, gate denials, Config DB
// reachability, members, devices, nodes up) and Node (one node, chosen with
// the instance variable: redundancy, cluster, OPC UA load, drivers, process).
//
// Invariants, checked by the package's tests:
//  1. every target of every panel is a Prometheus query on the datasource
//     with uid "prometheus" (provisioning/datasources/prometheus.yml);
//  2. rate() and increase() windows are $__rate_interval (or $__range for a
//     total over the dashboard's time range), never a fixed duration;
//  3. every query of the Node dashboard selects instance="$instance";
//  4. the committed JSON is exactly what Files returns.
//
// The caller's duties:
//  1. after changing a builder, run `go generate ./packaging/grafana` (or
//     `go run ./packaging/grafana/gen`) and commit the rewritten JSON;
//  2. name only metrics that otopcua exports (tests/packaging keeps the list
//     and fails on any other name);
//  3. to run a dashboard query outside Grafana, take it from PanelQueries
//     and fill in Grafana's variables with ExpandForTest.
package grafana

//go:generate go run ./gen
