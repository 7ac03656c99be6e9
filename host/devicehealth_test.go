package host

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/redundancy"
)

// TestCountReached: only connected devices count as reached; degraded,
// connecting and disconnected ones do not.
func TestCountReached(t *testing.T) {
	tests := []struct {
		states         []string
		reached, total int
	}{
		{nil, 0, 0},
		{[]string{"connected"}, 1, 1},
		{[]string{"connected", "degraded", "disconnected", "connecting", "connected"}, 2, 5},
		{[]string{"degraded"}, 0, 1},
	}
	for _, tt := range tests {
		var ds []dataplane.DeviceStatus
		for _, s := range tt.states {
			ds = append(ds, dataplane.DeviceStatus{Name: "d", State: s})
		}
		if r, n := countReached(ds); r != tt.reached || n != tt.total {
			t.Errorf("%v: %d of %d, want %d of %d", tt.states, r, n, tt.reached, tt.total)
		}
	}
}

// TestDeviceHealthPublishOptions: off rates nothing and hands nothing
// over; level rates; failover rates and hands over with the configured
// timings (a hold of 0 stays 0).
func TestDeviceHealthPublishOptions(t *testing.T) {
	d := &deviceHealth{clusterID: "pair", log: slog.New(slog.DiscardHandler)}
	for _, tt := range []struct {
		mode          string
		level, decide bool
	}{{config.DeviceHealthOff, false, false}, {config.DeviceHealthLevel, true, false}, {config.DeviceHealthFailover, true, true}} {
		var o redundancy.PublishActorOptions
		d.publishOptions(config.RedundancyConfig{DeviceHealth: tt.mode, DeviceFailoverAfter: 3 * time.Second}, &o)
		if o.Devices == nil || o.DeviceLevel != tt.level || (o.DeviceFailover != nil) != tt.decide || (o.HandOver != nil) != tt.decide {
			t.Fatalf("%s: devices %v level %v decide %v handOver %v", tt.mode, o.Devices != nil, o.DeviceLevel, o.DeviceFailover != nil, o.HandOver != nil)
		}
		if tt.decide && (o.DeviceFailover.After != 3*time.Second || o.DeviceFailover.Hold != 0) {
			t.Fatalf("timings %+v", o.DeviceFailover)
		}
		if r, n := o.Devices(); r != 0 || n != 0 {
			t.Fatalf("no data plane yet: %d of %d", r, n)
		}
	}
}

// TestDeviceHandOverAuditsItsReason: a device hand-over takes the manual
// failover path: the Primary (this node) is planned, the audit row names
// the device-health actor and reason before the request is sent to it.
func TestDeviceHandOverAuditsItsReason(t *testing.T) {
	db := openTestConfigDb(t)
	st := stateOf(nodeA, mem(nodeA, membership.Up, 1, "pair", "driver"), mem(nodeB, membership.Up, 2, "pair", "driver"))
	b, s := newTestBackend(t, st, db, db)
	d := &deviceHealth{clusterID: "pair", log: slog.New(slog.DiscardHandler)}
	d.handOver("no backend yet") // refused: nothing written, nothing sent
	if n := auditCount(t, db); n != 0 || len(s.sent) != 0 {
		t.Fatalf("before the backend: %d rows, %d sends", n, len(s.sent))
	}
	d.backend.Store(b)
	d.handOver("device health: this Primary reaches 0 of 1 devices, a peer reaches 1")
	deadline := time.Now().Add(10 * time.Second)
	for d.running.Load() || auditCount(t, db) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no hand-over within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for d.running.Load() {
		if time.Now().After(deadline) {
			t.Fatal("hand-over still running after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rows, err := b.Audit(context.Background(), 10)
	if err != nil || len(rows) != 1 {
		t.Fatalf("audit %v, %v", rows, err)
	}
	r := rows[0]
	if r.Action != ActionManualFailover || r.Actor != DeviceHandOverActor || r.Target != "10.0.0.1:4053" ||
		!strings.Contains(r.Detail, "reason=device health: this Primary reaches 0 of 1 devices") || !strings.Contains(r.Detail, "epoch=5") {
		t.Fatalf("audit row %+v", r)
	}
	if len(s.sent) != 1 || s.to[0] != nodeA || s.sent[0].GetActor() != DeviceHandOverActor || s.auditRows[0] != 1 {
		t.Fatalf("sends %d to %v, audit rows at the send %v", len(s.sent), s.to, s.auditRows)
	}
}
