// Package history_test runs the process history on a real `otopcua host`
// process: a real Modbus TCP device whose counter goes up by one every
// 100 ms, a deployment that historizes it, and HistoryRead of the values
// (raw and processed) over OPC UA, across a SIGKILL and a restart at the
// same address.
package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

const clusterID = "site-h"

func deployment(dev string) string {
	return fmt.Sprintf(`{"clusterId": %q, "devices": [{"name": "press1", "driver": "modbus-tcp", "address": %q, "pollInterval": "20ms",
  "historize": true,
  "tags": [
    {"name": "FastCounter", "table": "input", "address": %d, "type": "uint16"},
    {"name": "Setpoint", "table": "holding", "address": 0, "type": "int16", "historize": false}
  ]}]}`, clusterID, dev, fielddevice.PressFastCounter)
}

type session struct {
	t  *testing.T
	ch *uaclient.Channel
	s  *uaclient.Session
}

func connect(t *testing.T, n *procs.Node) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, n.Endpoint(), uaclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	s, err := uaclient.NewSession(ctx, ch, t.Name(), time.Minute, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, ch: ch, s: s}
}

func (c *session) call(req ua.Request) ua.Response {
	c.t.Helper()
	resp, err := c.ch.Call(context.Background(), req, c.s.Auth(), 10*time.Second)
	if err != nil {
		c.t.Fatalf("%T: %v", req, err)
	}
	return resp
}

func (c *session) namespace() uint16 {
	c.t.Helper()
	r := c.call(&ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_NamespaceArray), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}}).(*ua.ReadResponse)
	arr, _ := r.Results[0].Value.Value().([]string)
	for i, u := range arr {
		if u == "urn:otopcua:cluster:"+clusterID {
			return uint16(i)
		}
	}
	c.t.Fatalf("no tag namespace in %v", arr)
	return 0
}

// history reads node's raw values in [from, to), following continuation
// points; it returns the values and the result's status.
func (c *session) history(node *ua.NodeID, from, to time.Time) ([]*ua.DataValue, ua.StatusCode) {
	c.t.Helper()
	var out []*ua.DataValue
	var cp []byte
	for range 1000 {
		resp := c.call(&ua.HistoryReadRequest{TimestampsToReturn: ua.TimestampsToReturnSource,
			HistoryReadDetails: ua.NewExtensionObject(&ua.ReadRawModifiedDetails{StartTime: from, EndTime: to, NumValuesPerNode: 50}),
			NodesToRead:        []*ua.HistoryReadValueID{{NodeID: node, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}}}).(*ua.HistoryReadResponse)
		r := resp.Results[0]
		if r.StatusCode != ua.StatusOK && r.StatusCode != ua.StatusGoodNoData {
			return out, r.StatusCode
		}
		if hd, ok := r.HistoryData.Value.(*ua.HistoryData); ok {
			out = append(out, hd.DataValues...)
		}
		if len(r.ContinuationPoint) == 0 {
			return out, r.StatusCode
		}
		cp = r.ContinuationPoint
	}
	c.t.Fatal("no end of continuation points")
	return nil, 0
}

// counters checks that dvs are counter values, Good, in time order, each
// value once and one more than the one before (the node reads every
// value: it polls five times a period); it returns them.
func counters(t *testing.T, dvs []*ua.DataValue) []uint16 {
	t.Helper()
	out := make([]uint16, len(dvs))
	for i, dv := range dvs {
		v, ok := dv.Value.Value().(uint16)
		if !ok || dv.Status != ua.StatusOK {
			t.Fatalf("value %d: %v (%T) %v", i, dv.Value.Value(), dv.Value.Value(), dv.Status)
		}
		out[i] = v
		if i > 0 && (v <= out[i-1] || !dv.SourceTimestamp.After(dvs[i-1].SourceTimestamp)) {
			t.Fatalf("value %d: %d at %v after %d at %v", i, v, dv.SourceTimestamp, out[i-1], dvs[i-1].SourceTimestamp)
		}
	}
	return out
}

// TestHistoryOfARealDevice: a historized tag's values can be read back
// raw and processed; a tag the deployment does not historize cannot; the
// history survives a SIGKILL of the node and recording goes on after the
// restart.
func TestHistoryOfARealDevice(t *testing.T) {
	_, devAddr := startDevice(t, true)

	cfg := singleNode(t)
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	n := procs.Start(t, "h", cfg)
	n.WaitReady(30 * time.Second)
	procs.Deploy(t, cfg, deployment(devAddr))

	c := connect(t, n)
	ns := c.namespace()
	counter, setpoint := ua.NewStringNodeID(ns, "press1/FastCounter"), ua.NewStringNodeID(ns, "press1/Setpoint")
	t0 := time.Now().Add(-time.Minute)
	var before []*ua.DataValue
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		var st ua.StatusCode
		before, st = c.history(counter, t0, time.Now())
		if st != ua.StatusOK || len(before) < 30 {
			return fmt.Errorf("%d values, %v", len(before), st)
		}
		return nil
	})
	vs := counters(t, before)
	missed := int(vs[len(vs)-1]-vs[0]) + 1 - len(vs)
	t.Logf("%d counter values recorded, %d to %d, %d missed", len(vs), vs[0], vs[len(vs)-1], missed)
	if missed > len(vs)/10 {
		t.Fatalf("%d of %d counter values missing from the history", missed, len(vs))
	}
	procs.CheckFor(t, 10*time.Second, 200*time.Millisecond, func() error {
		body, err := n.Get("/metrics")
		if err != nil {
			return err
		}
		for _, want := range []string{"otopcua_history_tags 1", "otopcua_history_samples_dropped_total 0", "otopcua_history_samples_recorded_total ", "otopcua_history_samples_removed_by_size_total 0"} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("no %q in /metrics", want)
			}
		}
		if strings.Contains(body, "otopcua_history_samples_recorded_total 0\n") || !strings.Contains(body, "otopcua_history_store_bytes ") {
			return fmt.Errorf("history metrics: %s", grep(body, "otopcua_history"))
		}
		return nil
	})
	if _, st := c.history(setpoint, t0, time.Now()); st != ua.StatusBadHistoryOperationUnsupported {
		t.Fatalf("a tag not historized: %v", st)
	}

	// Processed: the count of values per second is about ten.
	end := before[len(before)-1].SourceTimestamp.Truncate(time.Second)
	start := end.Add(-2 * time.Second)
	resp := c.call(&ua.HistoryReadRequest{TimestampsToReturn: ua.TimestampsToReturnSource,
		HistoryReadDetails: ua.NewExtensionObject(&ua.ReadProcessedDetails{StartTime: start, EndTime: end, ProcessingInterval: 1000,
			AggregateType:          []*ua.NodeID{ua.NewNumericNodeID(0, id.AggregateFunction_Count), ua.NewNumericNodeID(0, id.AggregateFunction_Maximum)},
			AggregateConfiguration: &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true}}),
		NodesToRead: []*ua.HistoryReadValueID{{NodeID: counter, DataEncoding: &ua.QualifiedName{}}, {NodeID: counter, DataEncoding: &ua.QualifiedName{}}}}).(*ua.HistoryReadResponse)
	for i, r := range resp.Results {
		hd, _ := r.HistoryData.Value.(*ua.HistoryData)
		if r.StatusCode != ua.StatusOK || hd == nil || len(hd.DataValues) != 2 {
			t.Fatalf("aggregate %d: %v %+v", i, r.StatusCode, hd)
		}
	}
	for _, dv := range resp.Results[0].HistoryData.Value.(*ua.HistoryData).DataValues {
		if n, _ := dv.Value.Value().(int32); n < 7 || n > 11 || dv.Status&0xc0000000 != 0 {
			t.Fatalf("count per second %v %v", dv.Value.Value(), dv.Status)
		}
	}

	nodeOPCUA(t, n, counter, before)
	cli(t, n, counter, before)

	// SIGKILL: what was recorded survives; recording goes on after the
	// restart.
	n.Signal(syscall.SIGKILL)
	n.Restart()
	n.WaitReady(60 * time.Second)
	c = connect(t, n)
	var after []*ua.DataValue
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		var st ua.StatusCode
		after, st = c.history(counter, t0, time.Now())
		if st != ua.StatusOK || len(after) < len(before)+20 {
			return fmt.Errorf("%d values after the restart (%d before), %v", len(after), len(before), st)
		}
		return nil
	})
	for i, dv := range before {
		if after[i].Value.Value() != dv.Value.Value() || !after[i].SourceTimestamp.Equal(dv.SourceTimestamp) {
			t.Fatalf("value %d before the kill %v at %v, after the restart %v at %v", i, dv.Value.Value(), dv.SourceTimestamp, after[i].Value.Value(), after[i].SourceTimestamp)
		}
	}
	counters(t, after)
}

// grep is the lines of body that contain sub.
func grep(body, sub string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// nodeOPCUA reads the counter's history with node-opcua, an independent
// client: the raw values of the range of want (Go's read) are want's, and
// the Average and Count per second are Good where the range is covered.
func nodeOPCUA(t *testing.T, n *procs.Node, node *ua.NodeID, want []*ua.DataValue) {
	t.Helper()
	from, to := want[0].SourceTimestamp, want[len(want)-1].SourceTimestamp.Add(time.Millisecond)
	lines := nodescript.Run(t, "history.mjs", n.Endpoint(), node.String(), from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	var raw []float64
	aggs := map[string][]float64{}
	calls := 0
	for _, l := range lines {
		var o struct {
			Event, Status, Aggregate, Message string
			Value                             *float64
			Calls                             int
		}
		if len(l) == 0 || l[0] != '{' {
			continue // node-opcua's own warnings
		}
		if err := json.Unmarshal(l, &o); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		switch o.Event {
		case "raw":
			if o.Status != "Good" || o.Value == nil {
				t.Fatalf("node-opcua raw value: %s", l)
			}
			raw = append(raw, *o.Value)
		case "rawDone":
			calls = o.Calls
		case "aggregate":
			if o.Value != nil && strings.HasPrefix(o.Status, "Good") {
				aggs[o.Aggregate] = append(aggs[o.Aggregate], *o.Value)
			}
		case "error":
			t.Fatalf("node-opcua: %s", o.Message)
		}
	}
	if len(raw) != len(want) {
		t.Fatalf("node-opcua read %d raw values in %d calls, Go %d", len(raw), calls, len(want))
	}
	for i, dv := range want {
		if raw[i] != float64(dv.Value.Value().(uint16)) {
			t.Fatalf("raw value %d: node-opcua %v, Go %v", i, raw[i], dv.Value.Value())
		}
	}
	if len(want) > 100 && calls < 2 {
		t.Fatalf("%d values in %d calls: no continuation point followed", len(want), calls)
	}
	if len(aggs["Average"]) == 0 || len(aggs["Count"]) == 0 {
		t.Fatalf("node-opcua aggregates: %v\n%s", aggs, bytes.Join(lines, []byte("\n")))
	}
	t.Logf("node-opcua: %d raw values in %d calls; averages per second %v, counts %v", len(raw), calls, aggs["Average"], aggs["Count"])
}

// cli reads the counter's history with `otopcua client history --json`:
// the values of want's range are want's.
func cli(t *testing.T, n *procs.Node, node *ua.NodeID, want []*ua.DataValue) {
	t.Helper()
	from, to := want[0].SourceTimestamp, want[len(want)-1].SourceTimestamp.Add(time.Microsecond)
	out, err := exec.Command(procs.Binary(t), "client", "history", node.String(), "-u", n.Endpoint(), "--no-discovery", "--json",
		"--from", from.Format(time.RFC3339Nano), "--to", to.Format(time.RFC3339Nano)).CombinedOutput()
	if err != nil {
		t.Fatalf("otopcua client history: %v\n%s", err, out)
	}
	var got []float64
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var o struct {
			Value  float64
			Status string
		}
		if err := json.Unmarshal(l, &o); err != nil || o.Status != "Good" {
			t.Fatalf("otopcua client history: %s (%v)", l, err)
		}
		got = append(got, o.Value)
	}
	if len(got) != len(want) {
		t.Fatalf("otopcua client history printed %d values, Go read %d:\n%s", len(got), len(want), out)
	}
	for i, dv := range want {
		if got[i] != float64(dv.Value.Value().(uint16)) {
			t.Fatalf("value %d: the CLI %v, Go %v", i, got[i], dv.Value.Value())
		}
	}
}
