// Package packaging checks the monitoring files of packaging/ with the tools that
// load them: promtool validates the Prometheus configuration and the alert
// rules, runs the rules' unit tests (packaging/prometheus/alerts_test.yml) and
// parses every query of the Grafana dashboards; and every metric name the
// alerts and dashboards use must be one otopcua exports.
//
// The tests need promtool (Debian package prometheus; scripts/test.sh
// installs it). Without it they fail: a skipped check would let a broken
// rule through.
package packaging
