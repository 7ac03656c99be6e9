// Package interop_test drives the real `otopcua host` with an independent
// OPC UA client, node-opcua (tests/interop/client.mjs), so the redundancy
// surface is checked against a second stack, not only against gopcua.
package interop_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

type event struct {
	Event      string          `json:"event"`
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	Value      json.RawMessage `json:"value"`
	Message    string          `json:"message"`
	References []struct {
		ReferenceTypeID string `json:"referenceTypeId"`
		NodeID          string `json:"nodeId"`
		BrowseName      string `json:"browseName"`
	} `json:"references"`
}

func TestNodeOPCUAClient(t *testing.T) {
	ports := procs.NewPorts(t)
	cfg := procs.BaseConfig("node-a", ports)
	cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:peer-b:otopcua"}
	n := procs.Start(t, "node-a", cfg, "OTOPCUA_TEST_HOOKS=1")
	n.WaitReady(30 * time.Second)

	node := startNodeScript(t, "client.mjs", n.Endpoint(), "60")
	stdin := node.Stdin
	next := func(what string) event {
		t.Helper()
		var e event
		node.next(what, &e)
		return e
	}

	if e := next("connected"); e.Event != "connected" {
		t.Fatalf("first event %+v", e)
	}
	self := "urn:node-a:otopcua"
	wantReads := map[string]any{
		"serviceLevel":      float64(255),
		"serverArray":       []any{self, "urn:peer-b:otopcua"},
		"redundancySupport": float64(2),
		"serverUriArray":    []any{self, "urn:peer-b:otopcua"},
		"state":             float64(0),
	}
	for range wantReads {
		e := next("read")
		var v any
		_ = json.Unmarshal(e.Value, &v)
		if e.Event != "read" || e.Status != "Good" || fmt.Sprint(v) != fmt.Sprint(wantReads[e.Name]) {
			t.Fatalf("node-opcua read %s = %s %v, want Good %v", e.Name, e.Status, v, wantReads[e.Name])
		}
	}
	e := next("browse")
	var names []string
	for _, r := range e.References {
		names = append(names, r.BrowseName)
	}
	for _, want := range []string{"RedundancySupport", "ServerUriArray"} {
		if !slices.Contains(names, want) {
			t.Fatalf("node-opcua browse of i=2296 lacks %s: %v", want, names)
		}
	}
	if e := next("write"); e.Status != "BadNotWritable" {
		t.Fatalf("node-opcua write to ServiceLevel = %s, want BadNotWritable", e.Status)
	}
	if e := next("subscribed"); e.Event != "subscribed" {
		t.Fatalf("want subscribed, got %+v", e)
	}
	expectChange := func(want int) {
		t.Helper()
		e := next(fmt.Sprintf("change to %d", want))
		if e.Event != "change" || string(e.Value) != fmt.Sprint(want) {
			t.Fatalf("want change to %d, got %+v (%s)", want, e, e.Value)
		}
	}
	expectChange(255)
	for _, level := range []int{240, 250} {
		if _, err := n.Post(fmt.Sprintf("/debug/service-level?level=%d", level)); err != nil {
			t.Fatal(err)
		}
		expectChange(level)
	}
	stdin.Close()
	if e := next("closed"); e.Event != "closed" {
		t.Fatalf("want closed, got %+v", e)
	}
	if err := node.Wait(); err != nil {
		t.Fatalf("node client: %v", err)
	}
}
