// Package dataplane_test runs the data plane on real processes: a real
// Modbus TCP field device, two `otopcua host` nodes of one ClusterId
// sharing a Config DB, a deployment stored with `otopcua deploy`, and OPC
// UA clients on both nodes.
package dataplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

const clusterID = "site-a"

// pair is the rig: the device, the nodes a (first seed: Primary) and b,
// and the shared SQLite Config DB.
type pair struct {
	t      testing.TB
	dir    string
	dev    *fielddevice.Device
	devURL string
	a, b   *procs.Node
	cfgs   map[string]map[string]any
}

func startPair(t *testing.T, edit func(cfg map[string]any)) *pair {
	t.Helper()
	return startPairWith(t, rigOptions{edit: func(_ string, cfg map[string]any) {
		if edit != nil {
			edit(cfg)
		}
	}})
}

// rigOptions are the less common ways to start the pair.
type rigOptions struct {
	// device configures the field device (OnWrite, to tell who wrote).
	device fielddevice.Options
	// edit changes node name's configuration ("a", then "b") before it
	// starts; SeedNodes lists a, then b.
	edit func(name string, cfg map[string]any)
}

func startPairWith(t testing.TB, o rigOptions) *pair {
	t.Helper()
	p := &pair{t: t, dir: t.TempDir(), cfgs: map[string]map[string]any{}}
	devAddr := fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t))
	dev, err := fielddevice.StartWith(devAddr, o.device)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	p.dev, p.devURL = dev, devAddr
	ports := map[string]procs.Ports{"a": procs.NewPorts(t), "b": procs.NewPorts(t)}
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports["a"].Cluster), fmt.Sprintf("127.0.0.1:%d", ports["b"].Cluster)}
	for _, name := range []string{"a", "b"} {
		cfg := procs.BaseConfig(name, ports[name])
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		cfg["Node"].(map[string]any)["ClusterId"] = clusterID
		other := map[string]string{"a": "b", "b": "a"}[name]
		cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + other + ":otopcua"}
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(p.dir, "config.db")}
		cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		if o.edit != nil {
			o.edit(name, cfg)
		}
		p.cfgs[name] = cfg
	}
	p.a = procs.Start(t, "a", p.cfgs["a"])
	p.a.WaitReady(30 * time.Second)
	p.b = procs.Start(t, "b", p.cfgs["b"])
	p.b.WaitReady(30 * time.Second)
	return p
}

// deploy stores doc with `otopcua deploy` and returns its output.
func (p *pair) deploy(doc string) string {
	p.t.Helper()
	file := filepath.Join(p.dir, fmt.Sprintf("deployment-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		p.t.Fatal(err)
	}
	cfg, err := json.Marshal(p.cfgs["a"])
	if err != nil {
		p.t.Fatal(err)
	}
	cfgFile := filepath.Join(p.dir, "deploy.appsettings.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		p.t.Fatal(err)
	}
	out, err := exec.Command(procs.Binary(p.t), "deploy", file, "--config", cfgFile).CombinedOutput()
	if err != nil {
		p.t.Fatalf("otopcua deploy: %v\n%s", err, out)
	}
	return string(out)
}

// waitVersion waits until n's /api/deployment reports version v from
// source.
func waitVersion(t testing.TB, n *procs.Node, v int64, source string) {
	t.Helper()
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		body, err := n.Get("/api/deployment")
		if err != nil {
			return err
		}
		var rep struct {
			Version int64  `json:"version"`
			Source  string `json:"source"`
		}
		if err := json.Unmarshal([]byte(body), &rep); err != nil {
			return fmt.Errorf("%v: %s", err, body)
		}
		if rep.Version != v || rep.Source != source {
			return fmt.Errorf("%s: version %d from %q, want %d from %q", n.Name, rep.Version, rep.Source, v, source)
		}
		return nil
	})
}

// client is a lean OPC UA session on one node.
type client struct {
	t  testing.TB
	ch *uaclient.Channel
	s  *uaclient.Session
}

func connect(t testing.TB, n *procs.Node) *client {
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
	return &client{t: t, ch: ch, s: s}
}

func (c *client) call(req ua.Request) (ua.Response, error) {
	return c.ch.Call(context.Background(), req, c.s.Auth(), 10*time.Second)
}

func (c *client) read(nodes ...*ua.NodeID) []*ua.DataValue {
	c.t.Helper()
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, n := range nodes {
		req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
	}
	resp, err := c.call(req)
	if err != nil {
		c.t.Fatalf("Read: %v", err)
	}
	return resp.(*ua.ReadResponse).Results
}

// namespace is the index of the ClusterId's tag namespace on the node.
func (c *client) namespace() uint16 {
	c.t.Helper()
	arr, _ := c.read(ua.NewNumericNodeID(0, id.Server_NamespaceArray))[0].Value.Value().([]string)
	for i, u := range arr {
		if u == "urn:otopcua:cluster:"+clusterID {
			return uint16(i)
		}
	}
	c.t.Fatalf("no tag namespace in %v", arr)
	return 0
}

func (c *client) write(n *ua.NodeID, v any) ua.StatusCode {
	c.t.Helper()
	resp, err := c.call(&ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: n, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}}}})
	if err != nil {
		c.t.Fatalf("Write: %v", err)
	}
	return resp.(*ua.WriteResponse).Results[0]
}

// watch subscribes to node (exception-based sampling, queue of 10) and
// returns a function that polls for the next notifications.
func (c *client) watch(n *ua.NodeID) func() []*ua.DataValue {
	c.t.Helper()
	cs, err := c.call(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: 50, RequestedLifetimeCount: 1200, RequestedMaxKeepAliveCount: 20, PublishingEnabled: true})
	if err != nil {
		c.t.Fatal(err)
	}
	sub := cs.(*ua.CreateSubscriptionResponse).SubscriptionID
	_, err = c.call(&ua.CreateMonitoredItemsRequest{SubscriptionID: sub, TimestampsToReturn: ua.TimestampsToReturnBoth,
		ItemsToCreate: []*ua.MonitoredItemCreateRequest{{
			ItemToMonitor:       &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode:      ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: 1, SamplingInterval: 0, QueueSize: 10, DiscardOldest: true, Filter: ua.NewExtensionObject(nil)},
		}}})
	if err != nil {
		c.t.Fatal(err)
	}
	var acks []*ua.SubscriptionAcknowledgement
	return func() []*ua.DataValue {
		resp, err := c.call(&ua.PublishRequest{SubscriptionAcknowledgements: acks})
		if err != nil {
			c.t.Fatalf("Publish: %v", err)
		}
		pr := resp.(*ua.PublishResponse)
		acks = nil
		var out []*ua.DataValue
		if pr.NotificationMessage == nil {
			return nil
		}
		if len(pr.NotificationMessage.NotificationData) > 0 {
			acks = []*ua.SubscriptionAcknowledgement{{SubscriptionID: pr.SubscriptionID, SequenceNumber: pr.NotificationMessage.SequenceNumber}}
		}
		for _, eo := range pr.NotificationMessage.NotificationData {
			if dcn, ok := eo.Value.(*ua.DataChangeNotification); ok {
				for _, it := range dcn.MonitoredItems {
					out = append(out, it.Value)
				}
			}
		}
		return out
	}
}

func deviceDoc(devAddr string) string {
	return fmt.Sprintf(`{
  "clusterId": %q,
  "devices": [
    {"name": "press1", "driver": "modbus-tcp", "address": %q, "unitId": 1, "pollInterval": "00:00:00.100", "timeout": "500ms",
     "tags": [
       {"name": "Setpoint", "table": "holding", "address": 0, "type": "int16", "writable": true},
       {"name": "Speed", "table": "holding", "address": 10, "type": "float32", "wordOrder": "big"},
       {"name": "Run", "table": "coil", "address": 1, "type": "bool", "writable": true}
     ]},
    {"name": "sim", "driver": "simulated", "tags": [{"name": "Ramp", "type": "float64", "signal": "ramp", "period": "10s", "min": 0, "max": 100}]}
  ]
}`, clusterID, devAddr)
}

// waitPrimary waits until node a reads ServiceLevel 250 and b 240.
func waitLevels(t testing.TB, a, b *client) {
	t.Helper()
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		la := a.read(ua.NewNumericNodeID(0, id.Server_ServiceLevel))[0].Value.Value()
		lb := b.read(ua.NewNumericNodeID(0, id.Server_ServiceLevel))[0].Value.Value()
		if la != byte(250) || lb != byte(240) {
			return fmt.Errorf("ServiceLevel a=%v b=%v, want 250 and 240", la, lb)
		}
		return nil
	})
}

// TestPairServesADeviceAndOnlyThePrimaryWrites is the data plane's main
// job on real processes: both nodes serve the device's values under the
// same NodeIds; a write through the Secondary never reaches the device
// (the client sees Good, then the revert); one through the Primary lands.
func TestPairServesADeviceAndOnlyThePrimaryWrites(t *testing.T) {
	p := startPair(t, nil)
	if out := p.deploy(deviceDoc(p.devURL)); !strings.Contains(out, "version 1") {
		t.Fatalf("otopcua deploy printed %q", out)
	}
	waitVersion(t, p.a, 1, "central")
	waitVersion(t, p.b, 1, "central")
	ca, cb := connect(t, p.a), connect(t, p.b)
	waitLevels(t, ca, cb)
	ns := ca.namespace()
	if got := cb.namespace(); got != ns {
		t.Fatalf("tag namespace index %d on a, %d on b", ns, got)
	}
	setpoint := ua.NewStringNodeID(ns, "press1/Setpoint")
	speed := ua.NewStringNodeID(ns, "press1/Speed")

	// Both nodes serve the device's values.
	bits := math.Float32bits(1450.5)
	p.dev.SetHolding(0, 42)
	p.dev.SetHolding(10, uint16(bits>>16), uint16(bits))
	for _, c := range []*client{ca, cb} {
		procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
			got := c.read(setpoint, speed)
			if got[0].Status != ua.StatusOK || got[0].Value.Value() != int16(42) || got[1].Value.Value() != float32(1450.5) {
				return fmt.Errorf("Setpoint %v %v, Speed %v", got[0].Status, got[0].Value.Value(), got[1].Value.Value())
			}
			return nil
		})
	}

	// A change in the device reaches a subscriber on each node.
	nextA, nextB := ca.watch(speed), cb.watch(speed)
	bits = math.Float32bits(99.25)
	p.dev.SetHolding(10, uint16(bits>>16), uint16(bits))
	for name, next := range map[string]func() []*ua.DataValue{"a": nextA, "b": nextB} {
		procs.CheckFor(t, 10*time.Second, 0, func() error {
			for _, dv := range next() {
				if dv.Value != nil && dv.Value.Value() == float32(99.25) {
					return nil
				}
			}
			return fmt.Errorf("node %s: no notification of 99.25 yet", name)
		})
	}

	// A write through the Secondary: Good at once, never at the device,
	// reverted with a Bad blip the subscriber sees.
	watchB := cb.watch(setpoint)
	before := p.dev.Writes()
	if st := cb.write(setpoint, int16(7)); st != ua.StatusOK {
		t.Fatalf("optimistic write on the Secondary answered %v, want Good", st)
	}
	var seen []string
	procs.CheckFor(t, 10*time.Second, 0, func() error {
		for _, dv := range watchB() {
			seen = append(seen, fmt.Sprintf("%v/%v", dv.Value.Value(), dv.Status))
		}
		if len(seen) >= 4 && strings.Contains(strings.Join(seen, " "), "7/") && strings.Contains(strings.Join(seen, " "), "StatusBadInvalidState") {
			return nil
		}
		return fmt.Errorf("Secondary's subscriber saw %v", seen)
	})
	if got := p.dev.Holding(0); got != 42 || p.dev.Writes() != before {
		t.Fatalf("a write through the Secondary reached the device: register %d, writes %d → %d", got, before, p.dev.Writes())
	}

	// The same write through the Primary lands.
	if st := ca.write(setpoint, int16(7)); st != ua.StatusOK {
		t.Fatalf("write on the Primary answered %v", st)
	}
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := p.dev.Holding(0); got != 7 {
			return fmt.Errorf("device register %d, want 7", got)
		}
		return nil
	})
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := cb.read(setpoint)[0].Value.Value(); got != int16(7) {
			return fmt.Errorf("Secondary serves %v after the Primary's write, want 7", got)
		}
		return nil
	})
}
