package interop_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// TestNodeOPCUASeesTheLimits: an independent client reads the limits a
// node publishes and is held to them — one monitored item more than
// OperationLimits.MaxMonitoredItemsPerCall in one call is refused with
// BadTooManyOperations, exactly that many are created.
func TestNodeOPCUASeesTheLimits(t *testing.T) {
	ports := procs.NewPorts(t)
	cfg := procs.BaseConfig("node-a", ports)
	cfg["OpcUa"].(map[string]any)["Limits"] = map[string]any{"MaxMonitoredItemsPerCall": 40, "MaxSubscriptionsPerSession": 9}
	n := procs.Start(t, "node-a", cfg)
	n.WaitReady(30 * time.Second)

	out := nodescript.Run(t, "limits.mjs", n.Endpoint())
	type line struct {
		Event  string  `json:"event"`
		Name   string  `json:"name"`
		Status string  `json:"status"`
		Value  float64 `json:"value"`
		Count  int     `json:"count"`
		Good   int     `json:"good"`
	}
	reads := map[string]float64{}
	var creates []line
	for _, b := range out {
		var l line
		if json.Unmarshal(b, &l) != nil {
			continue
		}
		switch l.Event {
		case "read":
			if l.Status != "Good" {
				t.Fatalf("read %s: %s", l.Name, l.Status)
			}
			reads[l.Name] = l.Value
		case "createMonitoredItems":
			creates = append(creates, l)
		}
	}
	for name, want := range map[string]float64{"maxMonitoredItemsPerCall": 40, "maxSubscriptionsPerSession": 9, "maxSessions": 100} {
		if reads[name] != want {
			t.Errorf("%s = %v, want %v", name, reads[name], want)
		}
	}
	if reads["currentSessions"] < 1 {
		t.Errorf("currentSessions = %v with node-opcua's session open", reads["currentSessions"])
	}
	if len(creates) != 2 {
		t.Fatalf("createMonitoredItems lines: %+v\n%s", creates, bytes.Join(out, []byte("\n")))
	}
	if c := creates[0]; c.Count != 41 || c.Status != "BadTooManyOperations" {
		t.Errorf("41 items in one call: %+v, want BadTooManyOperations", c)
	}
	if c := creates[1]; c.Count != 40 || c.Status != "Good" || c.Good != 40 {
		t.Errorf("40 items in one call: %+v, want Good ×40", c)
	}
}
