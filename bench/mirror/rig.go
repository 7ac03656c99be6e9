package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/bench/internal/hostrig"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

// clusterID is the ClusterId of the pair and its deployment.
const clusterID = "mbench"

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
	r := &rig{nodes: map[string]*procs.Node{}, bin: procs.PlainBinary(t), devs: fieldrig.StartDevices(t, c.Devices)}
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
	doc, err := fieldrig.Document(clusterID, l, fieldrig.Addrs(r.devs), c.Poll, -1)
	if err != nil {
		t.Fatal(err)
	}
	procs.DeployWith(t, r.bin, r.cfg, string(doc))
	for _, n := range r.nodes {
		n.WaitDeployed(1)
	}
	p, s := hostrig.WaitPair(t, r.nodes)
	r.primary, r.second = r.nodes[p], r.nodes[s]
	var wg sync.WaitGroup
	for _, n := range []*procs.Node{r.primary, r.second} {
		wg.Add(1)
		go func() { defer wg.Done(); waitGood(t, n, l) }()
	}
	wg.Wait()
	r.deployed = time.Since(start)
	return r
}

// waitGood waits until every tag reads Good on node n.
func waitGood(t testing.TB, n *procs.Node, l fieldrig.Layout) {
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
	ns, err := fieldrig.Namespace(s, clusterID)
	if err != nil {
		t.Fatal(err)
	}
	nodes := fieldrig.NodeIDs(ns, l)
	procs.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		if err := fieldrig.AllGood(s, nodes); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		return nil
	})
}
