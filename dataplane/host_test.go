package dataplane

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/addrspace"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func dur(d time.Duration) deployment.Duration { return deployment.Duration(d) }

// hostRig is a driver host over a real Modbus TCP device and a simulated
// one, on a real actor system and address space.
type hostRig struct {
	as    *addrspace.AddressSpace
	space *Space
	host  *Host
	dev   *fielddevice.Device
	roles *fakeRoles
	doc   *deployment.Document
}

func newHostRig(t *testing.T) *hostRig {
	t.Helper()
	addr := freeAddr(t)
	dev, err := fielddevice.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	as, space := newSpace(t)
	sys := actors.NewLocal(slog.New(slog.DiscardHandler))
	roles := &fakeRoles{role: gate.RolePrimary, drivers: 2}
	w := NewWrites(WritesOptions{Mode: Confirmed, Gate: gate.NewGuard(roles, nil, nil), Logger: slog.New(slog.DiscardHandler)})
	host, err := StartHost(HostOptions{Root: sys.Root(), Space: space, Writes: w, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Stop)
	d := &deployment.Document{ClusterId: "site-a", Devices: []deployment.Device{
		{Name: "press1", Driver: deployment.DriverModbusTCP, Address: addr, PollInterval: dur(50 * time.Millisecond), Timeout: dur(200 * time.Millisecond),
			Tags: []deployment.Tag{
				{Name: "Setpoint", Table: deployment.TableHolding, Address: ptr(0), Type: deployment.TypeInt16, Writable: true},
				{Name: "Speed", Table: deployment.TableHolding, Address: ptr(10), Type: deployment.TypeFloat32},
				{Name: "Run", Table: deployment.TableCoil, Address: ptr(1), Type: deployment.TypeBool, Writable: true},
			}},
		{Name: "sim", Driver: deployment.DriverSimulated, PollInterval: dur(50 * time.Millisecond),
			Tags: []deployment.Tag{{Name: "Level", Type: deployment.TypeFloat64, Signal: deployment.SignalConstant, Min: ptr(42.0)}}},
	}}
	if _, err := host.Apply(d); err != nil {
		t.Fatal(err)
	}
	return &hostRig{as: as, space: space, host: host, dev: dev, roles: roles, doc: d}
}

func (r *hostRig) value(device, tag string) *ua.DataValue {
	return r.as.Read(&ua.ReadValueID{NodeID: r.space.TagNodeID(device, tag), AttributeID: ua.AttributeIDValue}, ua.TimestampsToReturnBoth)
}

func (r *hostRig) waitValue(t *testing.T, device, tag string, want any, status ua.StatusCode) {
	t.Helper()
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True(fmt.Sprintf("%s/%s = %v (%v)", device, tag, want, status), func() bool {
		dv := r.value(device, tag)
		return dv.Status == status && (want == nil || dv.Value != nil && dv.Value.Value() == want)
	}))
}

func TestHostServesDevicesAsTags(t *testing.T) {
	r := newHostRig(t)
	bits := math.Float32bits(12.5)
	r.dev.SetHolding(0, 7)
	r.dev.SetHolding(10, uint16(bits>>16), uint16(bits))
	r.dev.SetCoil(1, true)
	r.waitValue(t, "press1", "Setpoint", int16(7), ua.StatusOK)
	r.waitValue(t, "press1", "Speed", float32(12.5), ua.StatusOK)
	r.waitValue(t, "press1", "Run", true, ua.StatusOK)
	r.waitValue(t, "sim", "Level", 42.0, ua.StatusOK)

	// A value changed in the device reaches the tag.
	r.dev.SetHolding(0, 8)
	r.waitValue(t, "press1", "Setpoint", int16(8), ua.StatusOK)

	if got := r.host.Devices(); len(got) != 2 || got[0].Name != "press1" || got[0].State != "connected" {
		t.Fatalf("devices %+v", got)
	}
}

func TestHostWritesReachTheDeviceOnlyOnThePrimary(t *testing.T) {
	r := newHostRig(t)
	r.waitValue(t, "press1", "Setpoint", int16(0), ua.StatusOK)
	write := func(v int16) ua.StatusCode {
		return r.as.Write(&ua.WriteValue{NodeID: r.space.TagNodeID("press1", "Setpoint"), AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}})
	}
	if st := write(123); st != ua.StatusOK {
		t.Fatalf("write on the Primary: %v", st)
	}
	if got := r.dev.Holding(0); got != 123 {
		t.Fatalf("device register %d after a confirmed write, want 123", got)
	}
	r.roles.role = gate.RoleSecondary
	before := r.dev.Writes()
	if st := write(5); st != StatusNotPrimary {
		t.Fatalf("write on a Secondary: %v, want %v", st, StatusNotPrimary)
	}
	if r.dev.Writes() != before || r.dev.Holding(0) != 123 {
		t.Fatal("a write on the Secondary reached the device")
	}
}

func TestHostMarksTagsBadWhenTheDeviceGoes(t *testing.T) {
	r := newHostRig(t)
	r.dev.SetHolding(0, 9)
	r.waitValue(t, "press1", "Setpoint", int16(9), ua.StatusOK)
	r.dev.Close()
	r.waitValue(t, "press1", "Setpoint", int16(9), ua.StatusBadCommunicationError)
	r.waitValue(t, "sim", "Level", 42.0, ua.StatusOK) // other devices go on
}

func TestHostReappliesOnlyWhatChanged(t *testing.T) {
	r := newHostRig(t)
	r.waitValue(t, "sim", "Level", 42.0, ua.StatusOK)
	setpoint := r.space.Variable("press1", "Setpoint")
	next := *r.doc
	next.Devices = append([]deployment.Device(nil), r.doc.Devices...)
	sim := next.Devices[1]
	sim.Tags = append(append([]deployment.Tag(nil), sim.Tags...), deployment.Tag{Name: "Ramp", Type: deployment.TypeFloat64, Signal: deployment.SignalRamp, Period: dur(time.Second), Min: ptr(0.0), Max: ptr(1.0)})
	next.Devices[1] = sim
	rep, err := r.host.Apply(&next)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Added != 1 || rep.Kept != 4 {
		t.Fatalf("report %+v", rep)
	}
	if r.space.Variable("press1", "Setpoint") != setpoint {
		t.Fatal("an unchanged device's tag got a new Variable")
	}
	r.waitValue(t, "sim", "Ramp", nil, ua.StatusOK)
}
