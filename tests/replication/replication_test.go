// Package replication_test runs LocalDb pair replication on real
// processes: two `otopcua host` nodes with PostgreSQL as the Config DB,
// one of them reaching it through a TCP proxy the test can cut.
package replication_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

const (
	clusterID = "site-a"
	goodKey   = "a-shared-replication-key"
)

func document(tags ...string) string {
	var ts []string
	for _, t := range tags {
		ts = append(ts, fmt.Sprintf(`{"name": %q, "type": "float64", "signal": "ramp", "period": "10s", "min": 0, "max": 100}`, t))
	}
	return fmt.Sprintf(`{"clusterId": %q, "devices": [{"name": "sim", "driver": "simulated", "tags": [%s]}]}`, clusterID, strings.Join(ts, ", "))
}

type pair struct {
	t     *testing.T
	dir   string
	db    *pg.Server
	proxy *netem.Proxy // b's path to the Config DB
	a, b  *procs.Node
	cfgs  map[string]map[string]any
	aSync int
	bSync int
}

// startPair starts a and b; a has the replication key goodKey, b has keyB.
func startPair(t *testing.T, keyB string) *pair {
	t.Helper()
	p := &pair{t: t, dir: t.TempDir(), cfgs: map[string]map[string]any{}}
	p.db = pg.Start(t)
	p.proxy = netem.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t)), p.db.Addr())
	ports := map[string]procs.Ports{"a": procs.NewPorts(t), "b": procs.NewPorts(t)}
	p.aSync, p.bSync = procs.UniquePort(t), procs.UniquePort(t)
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports["a"].Cluster), fmt.Sprintf("127.0.0.1:%d", ports["b"].Cluster)}
	for _, name := range []string{"a", "b"} {
		cfg := procs.BaseConfig(name, ports[name])
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		cfg["Node"].(map[string]any)["ClusterId"] = clusterID
		dsn, sync, peer, key := p.db.DSN(), p.aSync, p.bSync, goodKey
		if name == "b" {
			dsn, sync, peer, key = strings.Replace(p.db.DSN(), p.db.Addr(), p.proxy.Addr(), 1), p.bSync, p.aSync, keyB
		}
		cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": dsn}
		cfg["LocalDb"] = map[string]any{
			"Path": filepath.Join(p.dir, name+"-local.db"), "SyncListenPort": sync,
			"Peers": []string{fmt.Sprintf("127.0.0.1:%d", peer)}, "Replication": map[string]any{"ApiKey": key},
		}
		cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		p.cfgs[name] = cfg
	}
	p.a = procs.Start(t, "a", p.cfgs["a"])
	p.a.WaitReady(60 * time.Second)
	p.b = procs.Start(t, "b", p.cfgs["b"])
	p.b.WaitReady(60 * time.Second)
	return p
}

func (p *pair) store(doc string) {
	p.t.Helper()
	procs.Deploy(p.t, p.cfgs["a"], doc)
}

type deploymentReport struct {
	Version int64  `json:"version"`
	Source  string `json:"source"`
	Origin  string `json:"origin"`
}

// deploymentOf is GET /api/deployment of n.
func deploymentOf(n *procs.Node) (deploymentReport, error) {
	var rep deploymentReport
	body, err := n.Get("/api/deployment")
	if err != nil {
		return rep, err
	}
	return rep, json.Unmarshal([]byte(body), &rep)
}

func waitDeployment(t *testing.T, n *procs.Node, version int64, source string) deploymentReport {
	t.Helper()
	var rep deploymentReport
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		var err error
		if rep, err = deploymentOf(n); err != nil {
			return err
		}
		if rep.Version != version || rep.Source != source {
			return fmt.Errorf("%s: version %d from %q, want %d from %q", n.Name, rep.Version, rep.Source, version, source)
		}
		return nil
	})
	return rep
}

// syncStatus is the part of GET /api/localdb the tests read.
type syncStatus struct {
	Peers []struct {
		Addr         string
		Refused      int64
		RowsReceived map[string]int64
		RowsApplied  map[string]int64
	}
	Served []struct {
		Node     string
		RowsSent map[string]int64
	}
	Refused map[string]int64
}

func localdbStatus(n *procs.Node) (syncStatus, error) {
	var s syncStatus
	body, err := n.Get("/api/localdb")
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal([]byte(body), &s)
}

func applied(s syncStatus, table string) int64 {
	if len(s.Peers) == 0 {
		return 0
	}
	return s.Peers[0].RowsApplied[table]
}

// readTag reads ns=2;s=sim/<tag> on n; it returns the status code.
func readTag(t *testing.T, n *procs.Node, tag string) ua.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := gopcua.NewClient(n.Endpoint(), gopcua.SecurityMode(ua.MessageSecurityModeNone), gopcua.AutoReconnect(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewStringNodeID(2, "sim/"+tag), AttributeID: ua.AttributeIDValue}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Results[0].Status
}

// TestBootFromTheArtifactOnlyThePeerApplied: b loses its Config DB; a
// applies a new deployment, which replicates into b's LocalDb; b restarts
// still without its Config DB and serves the new tags from the replicated
// artifact (source cache, origin a).
func TestBootFromTheArtifactOnlyThePeerApplied(t *testing.T) {
	p := startPair(t, goodKey)
	p.store(document("Ramp"))
	waitDeployment(t, p.a, 1, "central")
	waitDeployment(t, p.b, 1, "central")

	// b's path to the Config DB is cut; a deployment is made; a applies it.
	if err := p.proxy.SetMode(netem.Reset); err != nil {
		t.Fatal(err)
	}
	before, err := localdbStatus(p.b)
	if err != nil {
		t.Fatal(err)
	}
	p.store(document("Ramp", "Extra"))
	waitDeployment(t, p.a, 2, "central")
	// It replicates into b's LocalDb (b keeps serving version 1: a
	// replicated artifact is only a boot fallback).
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		s, err := localdbStatus(p.b)
		if err != nil {
			return err
		}
		if applied(s, "deployment_pointer") <= applied(before, "deployment_pointer") {
			return fmt.Errorf("a's pointer of version 2 has not reached b: %+v", s.Peers)
		}
		return nil
	})
	if rep, err := deploymentOf(p.b); err != nil || rep.Version != 1 || rep.Source != "central" {
		t.Fatalf("b applied a replicated artifact while running: %+v (%v)", rep, err)
	}
	if st := readTag(t, p.b, "Extra"); st != ua.StatusBadNodeIDUnknown {
		t.Fatalf("b serves sim/Extra before its restart: %v", st)
	}

	// b restarts, still without its Config DB: version 2 from the cache,
	// saved by a.
	p.b.Signal(syscall.SIGTERM)
	p.b.Restart()
	p.b.WaitReady(60 * time.Second)
	rep := waitDeployment(t, p.b, 2, "cache")
	if want := fmt.Sprintf("127.0.0.1:%d", p.cfgs["a"]["Cluster"].(map[string]any)["Port"]); rep.Origin != want {
		t.Fatalf("b's cached deployment origin %q, want a (%s)", rep.Origin, want)
	}
	if st := readTag(t, p.b, "Extra"); st != ua.StatusOK && st != ua.StatusBadWaitingForInitialData {
		t.Fatalf("b does not serve the new tag sim/Extra from the replicated artifact: %v", st)
	}
	if st := readTag(t, p.b, "Extra"); st == ua.StatusBadNodeIDUnknown {
		t.Fatal("sim/Extra unknown on b")
	}
}

// TestWrongReplicationKeyIsRefusedUntilFixed: b has the wrong key; both
// sides refuse and count, nothing crosses; b restarted with the right key
// resumes without a restart of a.
func TestWrongReplicationKeyIsRefusedUntilFixed(t *testing.T) {
	p := startPair(t, "not-the-shared-key-at-all")
	p.store(document("Ramp"))
	waitDeployment(t, p.a, 1, "central")
	waitDeployment(t, p.b, 1, "central")
	for _, n := range []*procs.Node{p.a, p.b} {
		procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
			s, err := localdbStatus(n)
			if err != nil {
				return err
			}
			total := int64(0)
			for _, v := range s.Refused {
				total += v
			}
			if total == 0 {
				return fmt.Errorf("%s has refused nothing yet: %+v", n.Name, s)
			}
			return nil
		})
	}
	for _, n := range []*procs.Node{p.a, p.b} {
		s, err := localdbStatus(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, peer := range s.Peers {
			for table, rows := range peer.RowsReceived {
				if rows > 0 {
					t.Fatalf("%s received %d rows of %s with a wrong key", n.Name, rows, table)
				}
			}
		}
		body, _ := n.Get("/metrics")
		if !strings.Contains(body, "otopcua_localdb_sync_refused_total{") {
			t.Fatalf("%s /metrics lacks otopcua_localdb_sync_refused_total", n.Name)
		}
	}
	if !strings.Contains(p.a.Log(), "refused") || !strings.Contains(p.b.Log(), "refused") {
		t.Fatal("the refusal is not logged on both sides")
	}
	pidA := p.a.PID()

	// b gets the right key and restarts; a keeps running.
	p.b.Signal(syscall.SIGTERM)
	p.b.WaitExit(30 * time.Second)
	p.cfgs["b"]["LocalDb"].(map[string]any)["Replication"] = map[string]any{"ApiKey": goodKey}
	p.b = procs.Start(t, "b2", p.cfgs["b"])
	p.b.WaitReady(60 * time.Second)
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		s, err := localdbStatus(p.b)
		if err != nil {
			return err
		}
		if len(s.Peers) == 0 || s.Peers[0].RowsReceived["deployment_pointer"] == 0 {
			return fmt.Errorf("b receives nothing from a yet: %+v", s.Peers)
		}
		return nil
	})
	if p.a.PID() != pidA || !p.a.Alive() {
		t.Fatal("a was restarted")
	}
}

// TestCorruptLocalDbIsMovedAsideAndRefilledFromThePeer: b's LocalDb file is
// overwritten with garbage while b is stopped; b starts anyway, moves the
// file aside, and its pair peer refills the new one.
func TestCorruptLocalDbIsMovedAsideAndRefilledFromThePeer(t *testing.T) {
	p := startPair(t, goodKey)
	p.store(document("Ramp"))
	waitDeployment(t, p.a, 1, "central")
	waitDeployment(t, p.b, 1, "central")
	p.b.Signal(syscall.SIGTERM)
	p.b.WaitExit(30 * time.Second)
	path := p.cfgs["b"]["LocalDb"].(map[string]any)["Path"].(string)
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 512)), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(path + "-wal")
	_ = os.Remove(path + "-shm")
	if err := p.proxy.SetMode(netem.Reset); err != nil { // and no Config DB either
		t.Fatal(err)
	}
	p.b.Restart()
	p.b.WaitReady(60 * time.Second)
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) == 0 {
		t.Fatal("the corrupt file was not moved aside")
	}
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		s, err := localdbStatus(p.b)
		if err != nil {
			return err
		}
		if applied(s, "deployment_pointer") == 0 {
			return fmt.Errorf("a has not refilled b's LocalDb yet: %+v", s.Peers)
		}
		return nil
	})
	// Restarted once more, still without a Config DB, b boots from what a
	// refilled.
	p.b.Signal(syscall.SIGTERM)
	p.b.Restart()
	p.b.WaitReady(60 * time.Second)
	waitDeployment(t, p.b, 1, "cache")
}
