package alarms

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/telemetry"
)

func TestMetricsOnTheEndpoint(t *testing.T) {
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	b, clock := &bus{}, clockwork.NewFakeClock()
	n := startNode(t, "n", b, clock, newRoles(gate.RolePrimary, 1), func(o *Options) {
		o.Metrics = Metrics{Meter: m.Meter()}
	})
	n.vals.set("press1/Temperature", 20.0, ua.StatusOK)
	if err := n.e.Apply(pressDoc(t, "High", hot, "Low", "press1.Temperature < 0")); err != nil {
		t.Fatal(err)
	}
	settle(t, n)
	n.vals.set("press1/Temperature", 90.0, ua.StatusOK)
	settle(t, n)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, line := range []string{
		`otopcua_alarms_active{cluster_id="site-a"} 1`,
		`otopcua_alarm_transitions_total{cluster_id="site-a",kind="active"} 1`,
		`otopcua_alarm_transitions_total{cluster_id="site-a",kind="acked"} 0`,
		`# HELP otopcua_alarms_active Enabled alarms of this ClusterId that are active on this node.`,
		`# HELP otopcua_alarm_transitions_total Alarm transitions received on the alerts topic`,
	} {
		if !strings.Contains(text, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if t.Failed() {
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "alarm") {
				t.Log(l)
			}
		}
	}
}
