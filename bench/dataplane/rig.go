package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

// clusterID is the ClusterId of the benchmark's node and deployment.
const clusterID = "bench"

// writeTag is the handle of the tag the write part writes: the first tag
// of the first device, writable, left alone by the changer.
const writeTag = 0

// Layout maps client handles (0 … tags−1) to devices and registers:
// handle h is register h % PerDevice of device h / PerDevice.
type Layout struct {
	Devices, PerDevice int
}

// Tags is the number of tags.
func (l Layout) Tags() int { return l.Devices * l.PerDevice }

// Of returns the device index and register of handle h.
func (l Layout) Of(h int) (dev int, reg uint16) { return h / l.PerDevice, uint16(h % l.PerDevice) }

// DeviceName and TagName name device d and register r in the deployment.
func DeviceName(d int) string { return fmt.Sprintf("dev%02d", d) }
func TagName(r int) string    { return fmt.Sprintf("r%04d", r) }

// docDevice and docTag are the parts of a deployment document the
// benchmark writes (docs/deployments.md).
type docDevice struct {
	Name         string   `json:"name"`
	Driver       string   `json:"driver"`
	Address      string   `json:"address"`
	UnitID       int      `json:"unitId"`
	PollInterval string   `json:"pollInterval"`
	Timeout      string   `json:"timeout"`
	Tags         []docTag `json:"tags"`
}

type docTag struct {
	Name     string `json:"name"`
	Table    string `json:"table"`
	Address  int    `json:"address"`
	Type     string `json:"type"`
	Writable bool   `json:"writable,omitempty"`
}

// Document is the deployment of l: device d is the Modbus TCP device at
// addrs[d], polled every poll, with PerDevice int16 holding-register tags
// at addresses 0 … PerDevice−1 (contiguous: 125 registers per request);
// the tag of handle writeTag is writable.
func Document(l Layout, addrs []string, poll time.Duration) ([]byte, error) {
	if len(addrs) != l.Devices {
		return nil, fmt.Errorf("%d device addresses for %d devices", len(addrs), l.Devices)
	}
	devs := make([]docDevice, l.Devices)
	for d := range devs {
		tags := make([]docTag, l.PerDevice)
		for r := range tags {
			tags[r] = docTag{Name: TagName(r), Table: "holding", Address: r, Type: "int16",
				Writable: d*l.PerDevice+r == writeTag}
		}
		devs[d] = docDevice{Name: DeviceName(d), Driver: "modbus-tcp", Address: addrs[d], UnitID: 1,
			PollInterval: poll.String(), Timeout: "1s", Tags: tags}
	}
	return json.MarshalIndent(map[string]any{"clusterId": clusterID, "devices": devs}, "", " ")
}

// rig is one case's setup: the field devices in this process, one
// `otopcua host` process with a SQLite Config DB, and its configuration.
type rig struct {
	t    testing.TB
	dir  string
	devs []*fielddevice.Device
	node *procs.Node
	cfg  map[string]any
}

// startRig starts n devices on loopback ports and the host (confirmed
// writes), and waits until the host is ready.
func startRig(t testing.TB, n int) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir()}
	for range n {
		dev, err := fielddevice.Start(fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(dev.Close)
		r.devs = append(r.devs, dev)
	}
	cfg := procs.BaseConfig("dpbench", procs.NewPorts(t))
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["OpcUa"].(map[string]any)["WriteMode"] = "confirmed"
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(r.dir, "config.db")}
	cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
	cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
	r.cfg = cfg
	r.node = procs.Start(t, "dpbench", cfg)
	r.node.WaitReady(60 * time.Second)
	return r
}

// addrs are the devices' addresses, in order.
func (r *rig) addrs() []string {
	out := make([]string, len(r.devs))
	for i, d := range r.devs {
		out[i] = d.Addr()
	}
	return out
}

// deploy stores doc with `otopcua deploy` and waits until the host applied
// version 1 from the Config DB.
func (r *rig) deploy(doc []byte) {
	r.t.Helper()
	file := filepath.Join(r.dir, "deployment.json")
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		r.t.Fatal(err)
	}
	cfg, err := json.Marshal(r.cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	cfgFile := filepath.Join(r.dir, "deploy.appsettings.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		r.t.Fatal(err)
	}
	if out, err := exec.Command(procs.Binary(r.t), "deploy", file, "--config", cfgFile).CombinedOutput(); err != nil {
		r.t.Fatalf("otopcua deploy: %v\n%s", err, out)
	}
	procs.CheckFor(r.t, 60*time.Second, 100*time.Millisecond, func() error {
		body, err := r.node.Get("/api/deployment")
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
		if rep.Version != 1 || rep.Source != "central" {
			return fmt.Errorf("version %d from %q, want 1 from central", rep.Version, rep.Source)
		}
		return nil
	})
}

// session is one client session on the host.
type session struct {
	ch *uaclient.Channel
	s  *uaclient.Session
}

func (r *rig) connect(name string) *session {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, r.node.Endpoint(), uaclient.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = ch.Close() })
	s, err := uaclient.NewSession(ctx, ch, name, time.Minute, 10*time.Second)
	if err != nil {
		r.t.Fatal(err)
	}
	return &session{ch: ch, s: s}
}

func (s *session) call(req ua.Request) (ua.Response, error) {
	return s.ch.Call(context.Background(), req, s.s.Auth(), 10*time.Second)
}

// namespace is the index of the tag namespace on the host.
func (s *session) namespace() (uint16, error) {
	resp, err := s.call(&ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_NamespaceArray),
		AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}})
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

// nodeIDs are the NodeIds of every tag, by handle.
func nodeIDs(ns uint16, l Layout) []*ua.NodeID {
	out := make([]*ua.NodeID, l.Tags())
	for h := range out {
		d, reg := l.Of(h)
		out[h] = ua.NewStringNodeID(ns, DeviceName(d)+"/"+TagName(int(reg)))
	}
	return out
}

// readBatch is how many tags one Read or CreateMonitoredItems asks for.
const readBatch = 1000

// allGood returns nil when every node reads Good, else how many do not.
func (s *session) allGood(nodes []*ua.NodeID) error {
	bad, first := 0, ""
	for from := 0; from < len(nodes); from += readBatch {
		req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnNeither}
		for _, n := range nodes[from:min(from+readBatch, len(nodes))] {
			req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
		}
		resp, err := s.call(req)
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
		return fmt.Errorf("%d of %d tags not Good (first: %s)", bad, len(nodes), first)
	}
	return nil
}
