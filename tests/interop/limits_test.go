package interop_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// TestNodeOPCUASeesTheLimits: an independent client reads the limits a
// node publishes and is held to them — one monitored item more than
// OperationLimits.MaxMonitoredItemsPerCall in one call is refused with
// BadTooManyOperations, exactly that many are created.
func TestNodeOPCUASeesTheLimits(t *testing.T) {
	dir := filepath.Join(procs.RepoRoot(), "tests", "interop")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-opcua-client")); err != nil {
		t.Fatalf("node-opcua-client is not installed (scripts/test.sh runs `npm ci` in tests/interop): %v", err)
	}
	ports := procs.NewPorts(t)
	cfg := procs.BaseConfig("node-a", ports)
	cfg["OpcUa"].(map[string]any)["Limits"] = map[string]any{"MaxMonitoredItemsPerCall": 40, "MaxSubscriptionsPerSession": 9}
	n := procs.Start(t, "node-a", cfg)
	n.WaitReady(30 * time.Second)

	cmd := exec.Command("node", "limits.mjs", n.Endpoint())
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("limits.mjs did not finish in 60 s; stderr:\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("limits.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
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
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil {
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
		t.Fatalf("createMonitoredItems lines: %+v\n%s", creates, out)
	}
	if c := creates[0]; c.Count != 41 || c.Status != "BadTooManyOperations" {
		t.Errorf("41 items in one call: %+v, want BadTooManyOperations", c)
	}
	if c := creates[1]; c.Count != 40 || c.Status != "Good" || c.Good != 40 {
		t.Errorf("40 items in one call: %+v, want Good ×40", c)
	}
}
