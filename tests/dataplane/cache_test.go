package dataplane_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// TestNodeBootsFromTheLocalDbCacheDuringAConfigDbOutage: a node whose
// Config DB (a real PostgreSQL) is down when it restarts serves the last
// deployment it applied, from its LocalDb, says so (source cache,
// otopcua_deployment_from_cache 1), and returns to the central copy once
// the database answers again.
func TestNodeBootsFromTheLocalDbCacheDuringAConfigDbOutage(t *testing.T) {
	db := pg.Start(t)
	p := startPair(t, func(cfg map[string]any) {
		cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": db.DSN()}
	})
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.b, 1, "central")
	p.dev.SetHolding(0, 31)

	db.Stop()
	p.b.Signal(syscall.SIGKILL)
	p.b.Restart()
	p.b.WaitReady(60 * time.Second)
	waitVersion(t, p.b, 1, "cache")
	cb := connect(t, p.b)
	ns := cb.namespace()
	procs.CheckFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		got := cb.read(ua.NewStringNodeID(ns, "press1/Setpoint"))[0]
		if got.Status != ua.StatusOK || got.Value.Value() != int16(31) {
			return fmt.Errorf("Setpoint from the cached deployment: %v %v", got.Status, got.Value.Value())
		}
		return nil
	})
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		body, err := p.b.Get("/metrics")
		if err != nil {
			return err
		}
		return wantSeries(body, "otopcua_deployment_from_cache", 1)
	})
	if log := p.b.Log(); !contains(log, "running from the LocalDb cache") {
		t.Fatal("no running-from-cache warning in the log")
	}

	db.Start()
	waitVersion(t, p.b, 1, "central")
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		body, err := p.b.Get("/metrics")
		if err != nil {
			return err
		}
		return wantSeries(body, "otopcua_deployment_from_cache", 0)
	})
}
