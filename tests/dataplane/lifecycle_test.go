package dataplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/procs"
)

// TestNewDeploymentIsAppliedWithoutARestart: a second version reaches both
// nodes while they run, and a subscription to a tag that stays keeps its
// notifications flowing across the apply.
func TestNewDeploymentIsAppliedWithoutARestart(t *testing.T) {
	p := startPair(t, nil)
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	waitVersion(t, p.b, 1, "central")
	cb := connect(t, p.b)
	ns := cb.namespace()
	next := cb.watch(ua.NewStringNodeID(ns, "press1/Setpoint"))
	p.dev.SetHolding(0, 1)
	waitNotified(t, next, int16(1))

	v2 := strings.Replace(deviceDoc(p.devURL), `{"name": "Run", "table": "coil", "address": 1, "type": "bool", "writable": true}`,
		`{"name": "Run", "table": "coil", "address": 1, "type": "bool", "writable": true},
       {"name": "Pressure", "table": "input", "address": 3, "type": "uint16", "scale": 0.5}`, 1)
	if out := p.deploy(v2); !strings.Contains(out, "version 2") {
		t.Fatalf("deploy: %s", out)
	}
	waitVersion(t, p.a, 2, "central")
	waitVersion(t, p.b, 2, "central")
	p.dev.SetInput(3, 300)
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := cb.read(ua.NewStringNodeID(ns, "press1/Pressure"))[0]; got.Value == nil || got.Value.Value() != 150.0 {
			return fmt.Errorf("new tag Pressure: %v %v", got.Status, got.Value)
		}
		return nil
	})
	// The subscription made before the apply still delivers.
	p.dev.SetHolding(0, 2)
	waitNotified(t, next, int16(2))
}

// waitNotified polls next until a notification carries want.
func waitNotified(t *testing.T, next func() []*ua.DataValue, want any) {
	t.Helper()
	var seen []any
	procs.CheckFor(t, 10*time.Second, 0, func() error {
		for _, dv := range next() {
			if dv.Value != nil {
				seen = append(seen, dv.Value.Value())
				if dv.Value.Value() == want {
					return nil
				}
			}
		}
		return fmt.Errorf("notified %v, waiting for %v", seen, want)
	})
}

// TestDeviceDownMarksTagsBadAndBack: the device stopped → its tags read
// BadCommunicationError (last value kept) within two poll intervals of
// noticing; restarted at the same address → Good again.
func TestDeviceDownMarksTagsBadAndBack(t *testing.T) {
	p := startPair(t, nil)
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	ca := connect(t, p.a)
	ns := ca.namespace()
	setpoint := ua.NewStringNodeID(ns, "press1/Setpoint")
	p.dev.SetHolding(0, 17)
	procs.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if got := ca.read(setpoint)[0]; got.Status != ua.StatusOK || got.Value.Value() != int16(17) {
			return fmt.Errorf("%v %v", got.Status, got.Value.Value())
		}
		return nil
	})
	p.dev.Close()
	stopped := time.Now()
	procs.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if got := ca.read(setpoint)[0]; got.Status != ua.StatusBadCommunicationError || got.Value.Value() != int16(17) {
			return fmt.Errorf("%v %v", got.Status, got.Value.Value())
		}
		return nil
	})
	t.Logf("device stopped → Setpoint BadCommunicationError after %v (poll interval 100 ms)", time.Since(stopped).Round(time.Millisecond))
	dev, err := fielddevice.Start(p.devURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	dev.SetHolding(0, 18)
	procs.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		if got := ca.read(setpoint)[0]; got.Status != ua.StatusOK || got.Value.Value() != int16(18) {
			return fmt.Errorf("after the device came back: %v %v", got.Status, got.Value.Value())
		}
		return nil
	})
}

// TestWritesFollowThePrimaryAcrossAKill: SIGKILL of the Primary; once the
// survivor is Primary its writes land, and no write was serviced by two
// nodes (the device counts every write it receives).
func TestWritesFollowThePrimaryAcrossAKill(t *testing.T) {
	p := startPair(t, func(cfg map[string]any) { cfg["OpcUa"].(map[string]any)["WriteMode"] = "confirmed" })
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	waitVersion(t, p.b, 1, "central")
	ca, cb := connect(t, p.a), connect(t, p.b)
	waitLevels(t, ca, cb)
	ns := ca.namespace()
	setpoint := ua.NewStringNodeID(ns, "press1/Setpoint")
	// Both nodes are asked; only the Primary services.
	if st := ca.write(setpoint, int16(100)); st != ua.StatusOK {
		t.Fatalf("Primary: %v", st)
	}
	if st := cb.write(setpoint, int16(200)); st != ua.StatusBadInvalidState {
		t.Fatalf("Secondary in confirmed mode: %v, want BadInvalidState", st)
	}
	if p.dev.Writes() != 1 || p.dev.Holding(0) != 100 {
		t.Fatalf("device: %d writes, register %d", p.dev.Writes(), p.dev.Holding(0))
	}
	p.a.Signal(syscall.SIGKILL)
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if l := cb.read(ua.NewNumericNodeID(0, id.Server_ServiceLevel))[0].Value.Value(); l != byte(250) {
			return fmt.Errorf("survivor at %v", l)
		}
		return nil
	})
	if st := cb.write(setpoint, int16(300)); st != ua.StatusOK {
		t.Fatalf("survivor's write: %v", st)
	}
	if p.dev.Writes() != 2 || p.dev.Holding(0) != 300 {
		t.Fatalf("device: %d writes (want 2: one per serviced write), register %d", p.dev.Writes(), p.dev.Holding(0))
	}
}

// TestDataPlaneMetrics: a node's /metrics counts its device reads, shows
// the connection and the applied version, and times its polls.
func TestDataPlaneMetrics(t *testing.T) {
	p := startPair(t, nil)
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		body, err := p.a.Get("/metrics")
		if err != nil {
			return err
		}
		for _, series := range []string{
			`otopcua_driver_reads_total{device="press1",result="ok"}`,
			`otopcua_driver_poll_duration_seconds_count{device="press1"}`,
			`otopcua_driver_poll_duration_seconds_count{device="sim"}`,
		} {
			if !strings.Contains(body, series) {
				return fmt.Errorf("no %s", series)
			}
		}
		for series, want := range map[string]float64{
			`otopcua_device_connected{device="press1"}`:                   1,
			`otopcua_deployment_version`:                                  1,
			`otopcua_deployment_from_cache`:                               0,
			`otopcua_driver_reads_total{device="press1",result="failed"}`: 0,
		} {
			if err := wantSeries(body, series, want); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestBootWindowDeniesWritesUntilASnapshotNamesThePrimary: two driver
// members and no redundancy snapshot yet (no admin node runs the
// redundancy-state singleton) — the role is unknown and a driver peer
// exists, so writes are denied with "not primary (role unknown)" and
// counted; once an admin node joins and its first snapshot names the
// Primary, the Primary's writes land.
func TestBootWindowDeniesWritesUntilASnapshotNamesThePrimary(t *testing.T) {
	p := startPair(t, func(cfg map[string]any) {
		cfg["Cluster"].(map[string]any)["Roles"] = []string{"driver"}
		cfg["OpcUa"].(map[string]any)["WriteMode"] = "confirmed"
	})
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	ca := connect(t, p.a)
	ns := ca.namespace()
	setpoint := ua.NewStringNodeID(ns, "press1/Setpoint")
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		body, err := p.a.Get("/api/cluster/members")
		if err != nil {
			return err
		}
		var v struct {
			Members []struct {
				Status string `json:"status"`
			} `json:"members"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			return err
		}
		up := 0
		for _, m := range v.Members {
			if m.Status == "Up" {
				up++
			}
		}
		if up < 2 {
			return fmt.Errorf("waiting for two Up members: %s", body)
		}
		return nil
	})
	if st := ca.write(setpoint, int16(5)); st != ua.StatusBadInvalidState {
		t.Fatalf("write in the boot window: %v, want BadInvalidState", st)
	}
	if p.dev.Writes() != 0 {
		t.Fatal("a write in the boot window reached the device")
	}
	if !contains(p.a.Log(), "not primary (role unknown)") {
		t.Fatal(`no "not primary (role unknown)" in the node's log`)
	}
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		body, err := p.a.Get("/metrics")
		if err != nil {
			return err
		}
		return wantSeries(body, `otopcua_redundancy_primary_gate_denied_total{reason="role-unknown",site="write"}`, 1)
	})

	// An admin node joins: its singleton's first snapshot names a Primary.
	ports := procs.NewPorts(t)
	cfg := procs.BaseConfig("c", ports)
	cfg["Cluster"].(map[string]any)["SeedNodes"] = p.cfgs["a"]["Cluster"].(map[string]any)["SeedNodes"]
	cfg["Cluster"].(map[string]any)["Roles"] = []string{"admin"}
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["ConfigDb"] = p.cfgs["a"]["ConfigDb"]
	c := procs.Start(t, "c", cfg)
	c.WaitReady(30 * time.Second)
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		if st := ca.write(setpoint, int16(6)); st != ua.StatusOK {
			return fmt.Errorf("Primary's write after the first snapshot: %v", st)
		}
		return nil
	})
	if p.dev.Holding(0) != 6 || p.dev.Writes() != 1 {
		t.Fatalf("device: register %d, %d writes", p.dev.Holding(0), p.dev.Writes())
	}
}

// TestInvalidDeploymentIsRefusedByTheNodes: a document that bypassed
// `otopcua deploy`'s checks (written straight into the Config DB) is not
// applied: both nodes keep the previous version and say why.
func TestInvalidDeploymentIsRefusedByTheNodes(t *testing.T) {
	p := startPair(t, nil)
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	waitVersion(t, p.b, 1, "central")
	ctx := context.Background()
	db, err := configdb.Open(ctx, "sqlite", p.cfgs["a"]["ConfigDb"].(map[string]any)["ConnectionString"].(string))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bad := strings.Replace(deviceDoc(p.devURL), `"type": "float32"`, `"type": "float33"`, 1)
	if _, _, err := db.PutDeployment(ctx, clusterID, []byte(bad)); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*procs.Node{p.a, p.b} {
		procs.CheckFor(t, 15*time.Second, 100*time.Millisecond, func() error {
			body, err := n.Get("/api/deployment")
			if err != nil {
				return err
			}
			var rep struct {
				Version int64  `json:"version"`
				Refused int64  `json:"refusedVersion"`
				Reason  string `json:"refusedReason"`
			}
			if err := json.Unmarshal([]byte(body), &rep); err != nil {
				return err
			}
			if rep.Version != 1 || rep.Refused != 2 || !strings.Contains(rep.Reason, "float33") {
				return fmt.Errorf("%s: %s", n.Name, body)
			}
			return nil
		})
	}
	// The previous version keeps serving.
	ca := connect(t, p.a)
	p.dev.SetHolding(0, 4)
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := ca.read(ua.NewStringNodeID(ca.namespace(), "press1/Setpoint"))[0]; got.Value.Value() != int16(4) {
			return fmt.Errorf("%v", got.Value.Value())
		}
		return nil
	})
}

// TestDeploymentsNoticeMakesTheApplyImmediate: node b polls the Config DB
// only every minute; node a every 200 ms. Once a applies a new version its
// deployments notice makes b look at once.
func TestDeploymentsNoticeMakesTheApplyImmediate(t *testing.T) {
	p := startPair(t, func(cfg map[string]any) {
		if cfg["OpcUa"].(map[string]any)["ApplicationUri"] == "urn:b:otopcua" {
			cfg["Deployment"] = map[string]any{"PollInterval": "1m"}
		}
	})
	ca, cb := connect(t, p.a), connect(t, p.b)
	waitLevels(t, ca, cb) // a healthy cluster: the notice has somewhere to go
	p.deploy(deviceDoc(p.devURL))
	start := time.Now()
	waitVersion(t, p.a, 1, "central")
	waitVersion(t, p.b, 1, "central")
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("b applied after %v: the notice did not reach it (its poll interval is 1 min)", took)
	}
}
