package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

// clusterID is the ClusterId of the pair and its deployment.
const clusterID = "mbench"

// ServiceLevels of a healthy pair.
const (
	primaryLevel = 250
	followLevel  = 240
)

// Layout spreads the tags over the devices: tag k is register k % PerDevice
// of device k / PerDevice.
type Layout struct{ Devices, PerDevice int }

// Tags is the number of tags.
func (l Layout) Tags() int { return l.Devices * l.PerDevice }

// Of returns the device and register of tag k.
func (l Layout) Of(k int) (dev int, reg uint16) { return k / l.PerDevice, uint16(k % l.PerDevice) }

// Name is the browse path of tag k below the tag namespace ("dev03/r0042").
func (l Layout) Name(k int) string {
	d, r := l.Of(k)
	return fmt.Sprintf("dev%02d/r%04d", d, r)
}

// Document is the deployment: device d is the Modbus TCP device at
// addrs[d], polled every poll, with PerDevice int16 holding-register tags
// at addresses 0 … PerDevice−1.
func Document(l Layout, addrs []string, poll time.Duration) ([]byte, error) {
	if len(addrs) != l.Devices {
		return nil, fmt.Errorf("%d device addresses for %d devices", len(addrs), l.Devices)
	}
	type tag struct {
		Name    string `json:"name"`
		Table   string `json:"table"`
		Address int    `json:"address"`
		Type    string `json:"type"`
	}
	type device struct {
		Name         string `json:"name"`
		Driver       string `json:"driver"`
		Address      string `json:"address"`
		UnitID       int    `json:"unitId"`
		PollInterval string `json:"pollInterval"`
		Timeout      string `json:"timeout"`
		Tags         []tag  `json:"tags"`
	}
	devs := make([]device, l.Devices)
	for d := range devs {
		tags := make([]tag, l.PerDevice)
		for r := range tags {
			tags[r] = tag{Name: fmt.Sprintf("r%04d", r), Table: "holding", Address: r, Type: "int16"}
		}
		devs[d] = device{Name: fmt.Sprintf("dev%02d", d), Driver: "modbus-tcp", Address: addrs[d], UnitID: 1,
			PollInterval: poll.String(), Timeout: "1s", Tags: tags}
	}
	return json.MarshalIndent(map[string]any{"clusterId": clusterID, "devices": devs}, "", " ")
}

// limitsFor are the OpcUa:Limits the harness raises for a load of
// sessions × items (every other limit keeps its default): connections and
// sessions (server-wide and per address: every session comes from
// 127.0.0.1 on its own connection), subscriptions and monitored items
// (with room for the replica's copies, which count against the same
// limits on the Secondary).
func limitsFor(sessions, items int) map[string]any {
	return map[string]any{
		"MaxConnections": sessions + 100, "MaxConnectionsPerAddress": sessions + 50,
		"MaxSessions": sessions + 100, "MaxSessionsPerAddress": sessions + 50,
		"MaxSubscriptions":  sessions + 100,
		"MaxMonitoredItems": max(sessions*items*2, 250000),
	}
}

// rig is one pair on a shared SQLite Config DB with its devices.
type rig struct {
	t        testing.TB
	devs     []*fielddevice.Device
	nodes    map[string]*procs.Node // "a", "b"
	primary  *procs.Node
	second   *procs.Node
	cfg      map[string]any // a's configuration (for otopcua deploy)
	bin      string
	deployed time.Duration
}

// startRig starts the devices and the pair (a first: the oldest, so the
// Primary), deploys the tags, and waits until both nodes read every tag
// Good and the pair shows 250/240.
func startRig(t testing.TB, c Config, mode string) *rig {
	t.Helper()
	r := &rig{t: t, nodes: map[string]*procs.Node{}, bin: buildPlain(t)}
	for range c.Devices {
		dev, err := fielddevice.Start(fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(dev.Close)
		r.devs = append(r.devs, dev)
	}
	dir := t.TempDir()
	names := []string{"a", "b"}
	ps := procs.NewPortSet(t, 2)
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ps[0].Cluster), fmt.Sprintf("127.0.0.1:%d", ps[1].Cluster)}
	for i, name := range names {
		cfg := procs.BaseConfig("mb"+name, ps[i])
		cfg["Node"].(map[string]any)["ClusterId"] = clusterID
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(dir, "config.db")}
		cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		o := cfg["OpcUa"].(map[string]any)
		o["PeerApplicationUris"] = []string{"urn:mb" + names[1-i] + ":otopcua"}
		o["RedundancySupport"] = mode
		o["Limits"] = limitsFor(c.Sessions, c.Items)
		if i == 0 {
			r.cfg = cfg
		}
		n := procs.StartWith(t, "mb"+name, cfg, procs.Options{Binary: r.bin})
		n.WaitReady(90 * time.Second)
		r.nodes[name] = n
	}
	start := time.Now()
	l := c.Layout()
	doc, err := Document(l, r.addrs(), c.Poll)
	if err != nil {
		t.Fatal(err)
	}
	r.deploy(doc)
	for _, n := range r.nodes {
		n.WaitDeployed(1)
	}
	r.waitPair()
	var wg sync.WaitGroup
	for _, n := range []*procs.Node{r.primary, r.second} {
		wg.Add(1)
		go func() { defer wg.Done(); waitGood(t, n, l) }()
	}
	wg.Wait()
	r.deployed = time.Since(start)
	return r
}

func (r *rig) addrs() []string {
	out := make([]string, len(r.devs))
	for i, d := range r.devs {
		out[i] = d.Addr()
	}
	return out
}

// deploy stores doc with `otopcua deploy`, run with a's settings.
func (r *rig) deploy(doc []byte) {
	r.t.Helper()
	dir := r.t.TempDir()
	b, err := json.Marshal(r.cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	settings, file := filepath.Join(dir, "appsettings.json"), filepath.Join(dir, "deployment.json")
	if err := os.WriteFile(settings, b, 0o644); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		r.t.Fatal(err)
	}
	if out, err := exec.Command(r.bin, "deploy", file, "--config", settings).CombinedOutput(); err != nil {
		r.t.Fatalf("otopcua deploy: %v\n%s", err, out)
	}
}

// waitPair waits until the levels read 250 and 240 three times in a row
// and names the Primary and the Secondary.
func (r *rig) waitPair() {
	r.t.Helper()
	held := 0
	procs.CheckFor(r.t, 90*time.Second, 100*time.Millisecond, func() error {
		for _, n := range r.nodes {
			if code, done := n.Exited(); done {
				r.t.Fatalf("%s exited with code %d\n%s", n.Name, code, n.Log())
			}
		}
		la, errA := procs.ReadServiceLevel(r.nodes["a"].Endpoint())
		lb, errB := procs.ReadServiceLevel(r.nodes["b"].Endpoint())
		switch {
		case errA != nil || errB != nil:
			held = 0
			return fmt.Errorf("read: a %v, b %v", errA, errB)
		case la == primaryLevel && lb == followLevel:
			r.primary, r.second = r.nodes["a"], r.nodes["b"]
		case lb == primaryLevel && la == followLevel:
			r.primary, r.second = r.nodes["b"], r.nodes["a"]
		default:
			held = 0
			return fmt.Errorf("levels a=%d b=%d, want 250/240", la, lb)
		}
		if held++; held < 3 {
			return fmt.Errorf("250/240 read %d times in a row", held)
		}
		return nil
	})
}

// readBatch is how many tags one Read or CreateMonitoredItems asks for.
const readBatch = 1000

// waitGood waits until every tag reads Good on node n.
func waitGood(t testing.TB, n *procs.Node, l Layout) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, n.Endpoint(), uaclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	s, err := uaclient.NewSession(ctx, ch, "mbench check", time.Minute, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(context.Background(), 5*time.Second) }()
	ns, err := namespace(s)
	if err != nil {
		t.Fatal(err)
	}
	nodes := nodeIDs(ns, l)
	procs.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		bad, first := 0, ""
		for from := 0; from < len(nodes); from += readBatch {
			req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnNeither}
			for _, id := range nodes[from:min(from+readBatch, len(nodes))] {
				req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: id, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
			}
			resp, err := s.Call(context.Background(), req, 10*time.Second)
			if err != nil {
				return err
			}
			for i, dv := range resp.(*ua.ReadResponse).Results {
				if dv.Status != ua.StatusOK {
					if bad == 0 {
						first = fmt.Sprintf("%s %v", nodes[from+i], dv.Status)
					}
					bad++
				}
			}
		}
		if bad > 0 {
			return fmt.Errorf("%s: %d of %d tags not Good (first: %s)", n.Name, bad, len(nodes), first)
		}
		return nil
	})
}

// namespace is the index of the tag namespace.
func namespace(s *uaclient.Session) (uint16, error) {
	resp, err := s.Call(context.Background(), &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_NamespaceArray),
		AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}}, 10*time.Second)
	if err != nil {
		return 0, err
	}
	arr, _ := resp.(*ua.ReadResponse).Results[0].Value.Value().([]string)
	for i, u := range arr {
		if u == "urn:otopcua:cluster:"+clusterID {
			return uint16(i), nil
		}
	}
	return 0, fmt.Errorf("no tag namespace in %v", arr)
}

// nodeIDs are the NodeIds of every tag, by tag index.
func nodeIDs(ns uint16, l Layout) []*ua.NodeID {
	out := make([]*ua.NodeID, l.Tags())
	for k := range out {
		out[k] = ua.NewStringNodeID(ns, l.Name(k))
	}
	return out
}

var (
	plainOnce sync.Once
	plainPath string
	plainErr  error
)

// buildPlain builds ./cmd/otopcua once, without the race detector: the
// harness measures the product as shipped.
func buildPlain(t testing.TB) string {
	t.Helper()
	plainOnce.Do(func() {
		dir, err := os.MkdirTemp("", "otopcua-mbench-bin-")
		if err != nil {
			plainErr = err
			return
		}
		plainPath = filepath.Join(dir, "otopcua")
		cmd := exec.Command("go", "build", "-o", plainPath, "./cmd/otopcua")
		cmd.Dir = procs.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			plainErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainPath
}
