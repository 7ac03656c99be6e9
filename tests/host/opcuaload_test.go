package host_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/procs"
)

// sampleValue returns the value of the series named exactly `series` in a
// Prometheus text body.
func sampleValue(body, series string) (float64, error) {
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, fmt.Errorf("no series %s", series)
}

// TestOPCUALoadOnMetricsAndDiagnostics: while a client session is open the
// node's /metrics counts it, and Server.ServerDiagnostics does too.
func TestOPCUALoadOnMetricsAndDiagnostics(t *testing.T) {
	n, _ := startNode(t, nil)
	c := connect(t, n.Endpoint())

	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		body, err := n.Get("/metrics")
		if err != nil {
			return err
		}
		v, err := sampleValue(body, `otopcua_opcua_sessions{state="activated"}`)
		if err != nil {
			return fmt.Errorf("%w:\n%s", err, grep(body, "otopcua_opcua_"))
		}
		if v < 1 {
			return fmt.Errorf(`otopcua_opcua_sessions{state="activated"} = %v with a session open`, v)
		}
		for _, s := range []string{"otopcua_opcua_channels", `otopcua_opcua_limit_refusals_total{limit="sessions"}`,
			`otopcua_opcua_limit_refusals_total{limit="subscriptions"}`} {
			if _, err := sampleValue(body, s); err != nil {
				return err
			}
		}
		return nil
	})

	res := read(t, c, id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount, id.Server_ServerDiagnostics_EnabledFlag)
	for i, dv := range res {
		if dv.Status != ua.StatusOK {
			t.Fatalf("result %d: status %v", i, dv.Status)
		}
	}
	if got, ok := res[0].Value.Value().(uint32); !ok || got < 1 {
		t.Fatalf("CurrentSessionCount = %#v with a session open, want a UInt32 ≥ 1", res[0].Value.Value())
	}
	if got := res[1].Value.Value(); got != true {
		t.Fatalf("ServerDiagnostics.EnabledFlag = %#v, want true", got)
	}
}
