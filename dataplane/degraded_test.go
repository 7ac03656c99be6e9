package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/internal/poll"
)

// silentDevice is a TCP listener on 127.0.0.1 that accepts every
// connection and reads whatever comes, never writing a byte: a device that
// never completes a reply.
type silentDevice struct {
	l     net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startSilent(t *testing.T) *silentDevice {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentDevice{l: l}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				buf := make([]byte, 512)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(s.Close)
	return s
}

// Close stops listening, closes every connection and waits for them.
func (s *silentDevice) Close() {
	s.l.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// TestHostShowsASilentDeviceDegraded: through GET /api/deployment, a
// device that accepts connections and never answers shows degraded with
// its read errors, failed polls and last error, while a healthy device
// beside it shows connected; the degraded gauge says the same. When a
// real device answers at the silent one's address, it is connected again.
func TestHostShowsASilentDeviceDegraded(t *testing.T) {
	healthy, err := fielddevice.Start(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(healthy.Close)
	silent := startSilent(t)
	silentAddr := silent.l.Addr().String()

	_, space := newSpace(t)
	sys := actors.NewLocal(slog.New(slog.DiscardHandler))
	w := NewWrites(WritesOptions{Mode: Confirmed, Gate: gate.NewGuard(&fakeRoles{role: gate.RolePrimary, drivers: 2}, nil, nil), Logger: slog.New(slog.DiscardHandler)})
	host, err := StartHost(HostOptions{Root: sys.Root(), Space: space, Writes: w, Logger: slog.New(slog.DiscardHandler),
		Degraded: drivers.DegradedRule{Polls: 3, After: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Stop)
	tags := []deployment.Tag{{Name: "Setpoint", Table: deployment.TableHolding, Address: ptr(0), Type: deployment.TypeInt16}}
	device := func(name, addr string) deployment.Device {
		return deployment.Device{Name: name, Driver: deployment.DriverModbusTCP, Address: addr,
			PollInterval: dur(50 * time.Millisecond), Timeout: dur(100 * time.Millisecond), Tags: tags}
	}
	if _, err := host.Apply(&deployment.Document{ClusterId: "site-a", Devices: []deployment.Device{
		device("healthy", healthy.Addr()), device("silent", silentAddr)}}); err != nil {
		t.Fatal(err)
	}

	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	m, err := NewMetrics(meter)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Register(meter, host, &Follower{}); err != nil {
		t.Fatal(err)
	}

	api := DeploymentHandler("site-a", func() FollowStatus { return FollowStatus{} }, host.Devices)
	report := func() map[string]DeviceStatus {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest("GET", "/api/deployment", nil))
		var rep DeploymentReport
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
			t.Fatalf("%v: %s", err, rec.Body)
		}
		out := map[string]DeviceStatus{}
		for _, d := range rep.Devices {
			out[d.Name] = d
		}
		return out
	}

	var seen map[string]DeviceStatus
	poll.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		seen = report()
		s, h := seen["silent"], seen["healthy"]
		if s.State != "degraded" || h.State != "connected" {
			return fmt.Errorf("silent %q, healthy %q", s.State, h.State)
		}
		return nil
	})
	s, h := seen["silent"], seen["healthy"]
	if s.ReadErrors == 0 || s.FailedPolls < 3 || s.FailingSince.IsZero() || !s.LastGoodRead.IsZero() || s.LastError == "" {
		t.Fatalf("silent device %+v", s)
	}
	if h.ReadErrors != 0 || h.FailedPolls != 0 || h.LastGoodRead.IsZero() || h.LastError != "" {
		t.Fatalf("healthy device %+v", h)
	}
	if g := degradedGauge(t, reader); g["silent"] != 1 || g["healthy"] != 0 {
		t.Fatalf("degraded gauge %v", g)
	}

	// A device that answers takes the silent one's place (same address):
	// the next good read ends the run.
	silent.Close()
	answering, err := fielddevice.Start(silentAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(answering.Close)
	poll.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if s := report()["silent"]; s.State != "connected" || s.FailedPolls != 0 || s.LastGoodRead.IsZero() {
			return fmt.Errorf("silent device now %+v", s)
		}
		return nil
	})
	if g := degradedGauge(t, reader); g["silent"] != 0 {
		t.Fatalf("degraded gauge after recovery %v", g)
	}
}

// degradedGauge is otopcua.device.degraded by device, collected now.
func degradedGauge(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != DeviceDegradedMetric {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Gauge[int64]).DataPoints {
				dev, _ := dp.Attributes.Value("device")
				out[dev.AsString()] = dp.Value
			}
		}
	}
	return out
}
