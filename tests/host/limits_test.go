package host_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

// createUnactivated opens a channel from ip and sends n CreateSession
// requests without activating any; it returns the count per status.
func createUnactivated(t *testing.T, endpoint, ip string, n int) map[ua.StatusCode]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{LocalIP: ip})
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	got := map[ua.StatusCode]int{}
	for range n {
		_, err := ch.Call(ctx, &ua.CreateSessionRequest{
			ClientDescription: &ua.ApplicationDescription{
				ApplicationURI: "urn:otopcua:test:careless", ApplicationName: ua.NewLocalizedText("careless"),
				ApplicationType: ua.ApplicationTypeClient,
			},
			SessionName: "careless", ClientNonce: make([]byte, 32), RequestedSessionTimeout: 0,
		}, nil, 5*time.Second)
		var code ua.StatusCode
		switch {
		case err == nil:
			code = ua.StatusOK
		case errors.As(err, &code):
		default:
			t.Fatalf("CreateSession: %v", err)
		}
		got[code]++
	}
	return got
}

// TestOpcUaLimitsReachTheNode: the OpcUa:Limits keys of appsettings.json
// are what a running node enforces and publishes. One careless client
// creating sessions without activating them gets its address's budget,
// another client gets in, the careless sessions are closed after
// UnactivatedSessionTimeout, and /metrics counts it all.
func TestOpcUaLimitsReachTheNode(t *testing.T) {
	n, _ := startNode(t, func(cfg map[string]any) {
		cfg["OpcUa"].(map[string]any)["Limits"] = map[string]any{
			"MaxUnactivatedSessionsPerAddress": 2,
			"UnactivatedSessionTimeout":        "00:00:01",
			"MaxMonitoredItemsPerCall":         50,
			"MaxSubscriptionsPerSession":       7,
		}
	})
	if got := createUnactivated(t, n.Endpoint(), "127.0.0.2", 10); got[ua.StatusOK] != 2 || got[ua.StatusBadTooManySessions] != 8 {
		t.Fatalf("10 unactivated sessions from one address: %v, want 2 Good and 8 BadTooManySessions", got)
	}
	c := connect(t, n.Endpoint()) // another client, from 127.0.0.1
	res := read(t, c, id.Server_ServerCapabilities_OperationLimits_MaxMonitoredItemsPerCall,
		id.Server_ServerCapabilities_MaxSubscriptionsPerSession, id.Server_ServerCapabilities_MaxSessions)
	for i, want := range []uint32{50, 7, 100} {
		if got, ok := res[i].Value.Value().(uint32); !ok || got != want {
			t.Errorf("capability %d = %#v, want %d", i, res[i].Value.Value(), want)
		}
	}
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		body, err := n.Get("/metrics")
		if err != nil {
			return err
		}
		for series, want := range map[string]float64{
			`otopcua_opcua_sessions{state="unactivated"}`:                                  0,
			`otopcua_opcua_limit_refusals_total{limit="unactivated_sessions_per_address"}`: 8,
			`otopcua_opcua_limit_refusals_total{limit="unactivated_session_timeout"}`:      2,
		} {
			v, err := sampleValue(body, series)
			if err != nil {
				return err
			}
			if v != want {
				return fmt.Errorf("%s = %v, want %v", series, v, want)
			}
		}
		return nil
	})
	read(t, c, id.Server_ServiceLevel) // the other client was never disturbed
}
