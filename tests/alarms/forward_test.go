package alarms_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// TestAcknowledgeForwardedFromTheSecondary: in OpcUa:WriteMode forward, a
// node-opcua client connected only to the Secondary b acknowledges the
// active alarm: Good, the condition shows it acknowledged on both nodes
// (/alerts and b's ConditionRefresh), and alarm_history holds the
// acknowledgement once — executed by the Primary a, which logs the
// forwarded request, while b's own gate refused it locally.
func TestAcknowledgeForwardedFromTheSecondary(t *testing.T) {
	r := startRigEdit(t, false, func(cfg map[string]any) {
		cfg["OpcUa"].(map[string]any)["WriteMode"] = "forward"
	})
	r.dev.SetHolding(0, high)
	for _, n := range []*procs.Node{r.a, r.b} {
		procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
			s, err := alertsOf(n)
			if err != nil {
				return err
			}
			if len(s) != 1 || !s[0].Active || s[0].Acked {
				return fmt.Errorf("%s /alerts %+v, want the alarm active and unacknowledged", n.Name, s)
			}
			return nil
		})
	}

	lines := runAlarmScript(t, r.b, "30")
	if ack, _ := lineOf(lines, "ack", 0); ack.Status != "Good" {
		t.Fatalf("Acknowledge through the Secondary in forward mode answered %q, want Good", ack.Status)
	}
	if after := refreshed(t, mustLine(t, lines, "refresh", 1)); after["AckedState.Id"] != true {
		t.Fatalf("b's ConditionRefresh after the forwarded ack: %v, want acknowledged", after)
	}
	for _, n := range []*procs.Node{r.a, r.b} {
		procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
			s, err := alertsOf(n)
			if err != nil {
				return err
			}
			if len(s) != 1 || !s[0].Acked {
				return fmt.Errorf("%s /alerts %+v: the ack has not reached it", n.Name, s)
			}
			return nil
		})
	}
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		h, err := r.history()
		if err != nil {
			return err
		}
		if len(h) != 2 || h[0].Kind != "active" || h[1].Kind != "acked" {
			return fmt.Errorf("alarm_history %+v, want active then acked, once each", h)
		}
		return nil
	})
	if !strings.Contains(r.a.Log(), `"msg":"alarms: condition method forwarded from a peer","method":"Acknowledge"`) {
		t.Fatalf("the Primary a did not execute a forwarded Acknowledge\n%s", r.a.Log())
	}
}
