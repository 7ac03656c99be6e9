package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

// clusterID is the ClusterId of the benchmark's node and deployment.
const clusterID = "bench"

// writeTag is the handle of the tag the write part writes: the first tag
// of the first device, writable, left alone by the changer.
const writeTag = 0

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
	r := &rig{t: t, dir: t.TempDir(), devs: fieldrig.StartDevices(t, n)}
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

// deploy stores doc with `otopcua deploy` and waits until the host applied
// version 1 from the Config DB.
func (r *rig) deploy(doc []byte) {
	r.t.Helper()
	procs.Deploy(r.t, r.cfg, string(doc))
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
