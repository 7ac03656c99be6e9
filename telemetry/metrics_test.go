package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/otopcua/otopcua/gate"
)

// scrape returns the /metrics body.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sample returns the value of the series `series` (name and labels exactly as
// rendered, e.g. `x_total{a="b"}`), and whether it is present.
func sample(body, series string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, series+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil
	}
	return 0, false
}

func expect(t *testing.T, body, series string, want float64) {
	t.Helper()
	got, ok := sample(body, series)
	if !ok {
		t.Errorf("series %s missing from /metrics", series)
		return
	}
	if got != want {
		t.Errorf("%s = %v, want %v", series, got, want)
	}
}

func testMetrics(t *testing.T) *Metrics {
	t.Helper()
	m, err := NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m
}

func TestKnownSeriesExistAtStartUp(t *testing.T) {
	body := scrape(t, testMetrics(t).Handler())
	for _, l := range []string{"0", "100", "200", "240", "250"} {
		expect(t, body, `otopcua_redundancy_service_level_change_total{level="`+l+`"}`, 0)
	}
	for _, s := range []string{"write", "ack", "alarm-emit", "historian-drain"} {
		for _, r := range []string{"secondary", "detached", "role-unknown", "not-member"} {
			expect(t, body, `otopcua_redundancy_primary_gate_denied_total{reason="`+r+`",site="`+s+`"}`, 0)
		}
	}
	expect(t, body, `otopcua_opcua_apply_failed_total{kind="rebuild"}`, 0)
	expect(t, body, `otopcua_opcua_apply_failed_total{kind="nodes"}`, 0)
	expect(t, body, `otopcua_auth_throttled_total{surface="admin"}`, 0)
	expect(t, body, `otopcua_auth_throttled_total{surface="opcua"}`, 0)
	for _, want := range []string{
		"# TYPE otopcua_redundancy_service_level_change_total counter",
		"# TYPE otopcua_redundancy_primary_gate_denied_total counter",
		"# TYPE otopcua_opcua_apply_failed_total counter",
		"# TYPE otopcua_auth_throttled_total counter",
		"go_goroutines ",
		"process_start_time_seconds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "otel_scope_name") || strings.Contains(body, "target_info") {
		t.Errorf("/metrics carries scope labels or target_info")
	}
}

func TestCountersCount(t *testing.T) {
	m := testMetrics(t)
	m.ServiceLevelChanged(250)
	m.ServiceLevelChanged(250)
	m.ServiceLevelChanged(240)
	m.ServiceLevelChanged(7) // not a known level: a new series
	m.PrimaryGateDenied(GateSiteWrite, GateReasonSecondary)
	m.PrimaryGateDenied(GateSiteAck, GateReasonRoleUnknown)
	m.PrimaryGateDenied(GateSiteAck, GateReasonRoleUnknown)
	for i := 0; i < 3; i++ {
		m.ApplyFailed(ApplyKindNodes)
	}
	m.AuthThrottled(AuthSurfaceOpcUa)
	m.AuthThrottled(AuthSurfaceOpcUa)
	body := scrape(t, m.Handler())
	expect(t, body, `otopcua_redundancy_service_level_change_total{level="250"}`, 2)
	expect(t, body, `otopcua_redundancy_service_level_change_total{level="240"}`, 1)
	expect(t, body, `otopcua_redundancy_service_level_change_total{level="7"}`, 1)
	expect(t, body, `otopcua_redundancy_service_level_change_total{level="0"}`, 0)
	expect(t, body, `otopcua_redundancy_primary_gate_denied_total{reason="secondary",site="write"}`, 1)
	expect(t, body, `otopcua_redundancy_primary_gate_denied_total{reason="role-unknown",site="ack"}`, 2)
	expect(t, body, `otopcua_redundancy_primary_gate_denied_total{reason="secondary",site="ack"}`, 0)
	expect(t, body, `otopcua_opcua_apply_failed_total{kind="nodes"}`, 3)
	expect(t, body, `otopcua_opcua_apply_failed_total{kind="rebuild"}`, 0)
	expect(t, body, `otopcua_auth_throttled_total{surface="opcua"}`, 2)
	expect(t, body, `otopcua_auth_throttled_total{surface="admin"}`, 0)
}

func TestMeterInstrumentsShareTheEndpoint(t *testing.T) {
	m := testMetrics(t)
	g, err := m.Meter().Int64Counter("otopcua.cluster.test_events")
	if err != nil {
		t.Fatal(err)
	}
	g.Add(context.Background(), 4)
	expect(t, scrape(t, m.Handler()), `otopcua_cluster_test_events_total`, 4)
}

func TestTwoMetricsDoNotShareState(t *testing.T) {
	a, b := testMetrics(t), testMetrics(t)
	a.ApplyFailed(ApplyKindRebuild)
	expect(t, scrape(t, b.Handler()), `otopcua_opcua_apply_failed_total{kind="rebuild"}`, 0)
	expect(t, scrape(t, a.Handler()), `otopcua_opcua_apply_failed_total{kind="rebuild"}`, 1)
}

func TestNopMetrics(t *testing.T) {
	m := NopMetrics()
	m.ServiceLevelChanged(250)
	m.PrimaryGateDenied(GateSiteWrite, GateReasonDetached)
	m.ApplyFailed(ApplyKindNodes)
	m.AuthThrottled(AuthSurfaceAdmin)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("nop handler status %d, want 404", rec.Code)
	}
	if err := m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestGateNamesAreTheGates: the site and reason names declared here are
// the ones the gate counts with.
func TestGateNamesAreTheGates(t *testing.T) {
	var sites []string
	for _, s := range gate.Sites() {
		sites = append(sites, s.String())
	}
	if got, want := strings.Join(sites, " "), strings.Join(knownGateSites, " "); got != want {
		t.Fatalf("gate sites %q, declared %q", got, want)
	}
	for r, want := range map[gate.Reason]string{gate.DeniedSecondary: GateReasonSecondary, gate.DeniedDetached: GateReasonDetached,
		gate.DeniedRoleUnknown: GateReasonRoleUnknown, gate.DeniedNotMember: GateReasonNotMember, gate.DeniedWoken: GateReasonWoken} {
		if r.Label() != want {
			t.Errorf("%v labelled %q, declared %q", r, r.Label(), want)
		}
	}
}
