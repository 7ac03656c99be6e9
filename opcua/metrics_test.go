package opcua

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/limits"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
	"github.com/otopcua/otopcua/telemetry"
)

// scrapeMetrics GETs url and returns the body.
func scrapeMetrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// series returns the value of the sample named exactly `name` (labels as
// rendered), and whether it is there.
func series(body, name string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// expectSeries checks each series against its value.
func expectSeries(t *testing.T, body string, want map[string]float64) {
	t.Helper()
	for name, v := range want {
		got, ok := series(body, name)
		switch {
		case !ok:
			t.Errorf("/metrics lacks %s", name)
		case got != v:
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
}

func limitSeries(limit string) string {
	return `otopcua_opcua_limit_refusals_total{limit="` + limit + `"}`
}

// TestRegisterMetricsOnPrometheus drives a real server with otopcua's own
// client and reads the real exporter's /metrics.
func TestRegisterMetricsOnPrometheus(t *testing.T) {
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Shutdown(context.Background()) }()
	s := startLoopback(t, Config{Limits: limits.Limits{
		MaxMonitoredItemsPerCall:   5,
		MaxSubscriptionsPerSession: 1,
	}})
	if err := s.RegisterMetrics(m.Meter()); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(m.Handler())
	defer web.Close()

	// Before any client: every series, at 0.
	body := scrapeMetrics(t, web.URL)
	zero := map[string]float64{
		"otopcua_opcua_connections": 0, "otopcua_opcua_channels": 0,
		`otopcua_opcua_sessions{state="activated"}`: 0, `otopcua_opcua_sessions{state="unactivated"}`: 0,
		"otopcua_opcua_subscriptions": 0, "otopcua_opcua_monitored_items": 0,
	}
	for _, l := range append(append([]string{}, uaserver.Limits...), subscription.Limits...) {
		zero[limitSeries(l)] = 0
	}
	if n := len(uaserver.Limits) + len(subscription.Limits); n < 18 {
		t.Fatalf("only %d limit names", n)
	}
	expectSeries(t, body, zero)
	for _, family := range []struct{ name, typ string }{
		{"otopcua_opcua_connections", "gauge"}, {"otopcua_opcua_channels", "gauge"},
		{"otopcua_opcua_sessions", "gauge"}, {"otopcua_opcua_subscriptions", "gauge"},
		{"otopcua_opcua_monitored_items", "gauge"}, {"otopcua_opcua_limit_refusals_total", "counter"},
	} {
		if !strings.Contains(body, "# TYPE "+family.name+" "+family.typ+"\n") {
			t.Errorf("/metrics lacks # TYPE %s %s", family.name, family.typ)
		}
		if !strings.Contains(body, "# HELP "+family.name+" ") {
			t.Errorf("/metrics lacks # HELP %s", family.name)
		}
	}

	// One activated session with a subscription and three items, one
	// unactivated session on a second channel.
	a := openSession(t, s, "metrics")
	sub := createSubscription(t, a, 100*time.Millisecond)
	items := []uint32{id.Server_ServiceLevel, id.Server_ServerStatus_CurrentTime, diagCurrentSessions}
	monitor(t, a, sub.SubscriptionID, ua.MonitoringModeReporting, items...)
	if _, err := dial(t, s).Call(context.Background(), &ua.CreateSessionRequest{
		ClientDescription: &ua.ApplicationDescription{ApplicationURI: "urn:otopcua:test:metrics",
			ApplicationName: ua.NewLocalizedText("metrics test"), ApplicationType: ua.ApplicationTypeClient},
		EndpointURL: s.EndpointURL(), SessionName: "never-activated",
		ClientNonce: make([]byte, 32), RequestedSessionTimeout: 60000,
	}, nil, callTimeout); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	// Refusals the client causes: six items over MaxMonitoredItemsPerCall 5,
	// a second subscription over MaxSubscriptionsPerSession 1.
	tooMany := monitorRequest(sub.SubscriptionID, ua.MonitoringModeReporting, 1, 2, 3, 4, 5, 6)
	if _, err := a.Call(context.Background(), tooMany, callTimeout); !errors.Is(err, ua.StatusBadTooManyOperations) {
		t.Fatalf("CreateMonitoredItems of 6 items: %v, want BadTooManyOperations", err)
	}
	_, err = a.Call(context.Background(), &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100,
		RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true}, callTimeout)
	if !errors.Is(err, ua.StatusBadTooManySubscriptions) {
		t.Fatalf("second CreateSubscription: %v, want BadTooManySubscriptions", err)
	}

	body = scrapeMetrics(t, web.URL)
	want := map[string]float64{
		"otopcua_opcua_connections": 2, "otopcua_opcua_channels": 2,
		`otopcua_opcua_sessions{state="activated"}`: 1, `otopcua_opcua_sessions{state="unactivated"}`: 1,
		"otopcua_opcua_subscriptions": 1, "otopcua_opcua_monitored_items": float64(len(items)),
	}
	for l := range zero {
		if strings.HasPrefix(l, "otopcua_opcua_limit_refusals_total") {
			want[l] = 0
		}
	}
	want[limitSeries(uaserver.LimitOperationsPerCall)] = 1
	want[limitSeries(subscription.LimitSubscriptionsPerSession)] = 1
	expectSeries(t, body, want)

	// Closing the session empties the engine.
	if err := a.Close(context.Background(), callTimeout); err != nil {
		t.Fatal(err)
	}
	expectSeries(t, scrapeMetrics(t, web.URL), map[string]float64{
		`otopcua_opcua_sessions{state="activated"}`: 0, "otopcua_opcua_subscriptions": 0, "otopcua_opcua_monitored_items": 0,
		limitSeries(uaserver.LimitOperationsPerCall): 1,
	})
}

func TestRegisterMetricsOnNopMeter(t *testing.T) {
	s := newTestServer(t, Config{})
	if err := s.RegisterMetrics(telemetry.NopMetrics().Meter()); err != nil {
		t.Fatalf("RegisterMetrics on the no-op meter: %v", err)
	}
}

func TestLimitNamesAreDistinct(t *testing.T) {
	names := LimitNames()
	if len(names) != len(uaserver.Limits)+len(subscription.Limits) {
		t.Fatalf("LimitNames = %v", names)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || n == "" {
			t.Errorf("limit name %q empty or repeated", n)
		}
		seen[n] = true
	}
}
