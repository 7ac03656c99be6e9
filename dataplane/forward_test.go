package dataplane

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/forward"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// forwardRig is one node: a tag on its own address space and device, its
// Writes in Forward mode and its forward.Handler.
type forwardRig struct {
	*writeRig
	w *Writes
	h *forward.Handler
}

func newForwardRig(t *testing.T, name string, roles *fakeRoles, tr *forward.MemTransport, primary func() (string, uint64, bool)) *forwardRig {
	t.Helper()
	as, s := newSpace(t)
	s.Apply(doc(deployment.Tag{Name: "Setpoint", Table: deployment.TableHolding, Address: ptr(0), Type: deployment.TypeInt16, Writable: true}))
	r := &forwardRig{writeRig: &writeRig{as: as, v: s.Variable("press1", "Setpoint"), dev: &fakeDevice{}, rec: &recorder{}}}
	logger := slog.New(slog.DiscardHandler)
	g := gate.NewGuard(roles, r.rec, logger)
	sender := forward.NewSender(forward.SenderOptions{Node: name, Primary: primary, Transport: tr, Timeout: 300 * time.Millisecond, Backoff: time.Millisecond})
	r.w = NewWrites(WritesOptions{Mode: Forward, Gate: g, Timeout: 200 * time.Millisecond, Auditor: r.rec, Logger: logger,
		Forwarder: sender, Node: name, Nonce: 7})
	r.w.Install(Target{Device: "press1", Tag: "Setpoint", V: r.v, W: r.dev, Slots: r.w.NewDeviceSlots()})
	r.h = forward.NewHandler(forward.HandlerOptions{Node: name, Gate: g, Exec: r.w,
		Authorize: func(role string, _ forward.Right) bool { return role == "Operator" }})
	tr.Add(name, r.h)
	return r
}

func (r *forwardRig) writeAs(role string, handle uint32, v int16) ua.StatusCode {
	who := uaserver.Writer{Session: uaserver.SessionInfo{NodeID: ua.NewNumericNodeID(1, 5), UserID: "u", Role: role}, Handle: handle}
	return r.as.WriteAs(who, &ua.WriteValue{NodeID: r.v.NodeID(), AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}})
}

func TestForwardModeWriteOnTheSecondaryLandsOnThePrimarysDevice(t *testing.T) {
	tr := forward.NewMemTransport()
	primary := func() (string, uint64, bool) { return "a", 42, true }
	a := newForwardRig(t, "a", &fakeRoles{gate.RolePrimary, 2}, tr, primary)
	b := newForwardRig(t, "b", &fakeRoles{gate.RoleSecondary, 2}, tr, primary)

	if st := b.writeAs("Operator", 1, 77); st != ua.StatusOK {
		t.Fatalf("forwarded write: %v, want Good", st)
	}
	if a.dev.count() != 1 || b.dev.count() != 0 {
		t.Fatalf("device writes a=%d b=%d, want the Primary's once and none from the Secondary", a.dev.count(), b.dev.count())
	}
	if got := a.dev.writes[0]; got != int16(77) {
		t.Fatalf("the Primary's device got %v, want 77", got)
	}
	if got := b.v.Value().Value.Value(); got != int16(77) {
		t.Fatalf("the Secondary's Variable shows %v after Good, want 77", got)
	}
	// The audit on both nodes names the forwarding.
	pa, _ := a.rec.last()
	pb, _ := b.rec.last()
	if !pa.OK || !strings.Contains(pa.Message, "forwarded from b") || pa.Epoch != 42 {
		t.Fatalf("Primary's audit %+v, want serviced, naming b, epoch 42", pa)
	}
	if !pb.OK || !strings.Contains(pb.Message, "forwarded to the Primary a") {
		t.Fatalf("Secondary's audit %+v, want serviced, naming the Primary a", pb)
	}
	// The same request again (same session and handle): the first result,
	// no second device write.
	if st := b.writeAs("Operator", 1, 77); st != ua.StatusOK || a.dev.count() != 1 {
		t.Fatalf("retry of the same request: %v, device writes %d, want Good and 1", st, a.dev.count())
	}
	// A direct write on the Primary still writes as confirmed does.
	if st := a.writeAs("Operator", 9, 5); st != ua.StatusOK || a.dev.count() != 2 {
		t.Fatalf("direct write on the Primary: %v, device writes %d", st, a.dev.count())
	}
}

func TestForwardModeRefusals(t *testing.T) {
	tr := forward.NewMemTransport()
	none := func() (string, uint64, bool) { return "", 0, false }
	b := newForwardRig(t, "b", &fakeRoles{gate.RoleSecondary, 2}, tr, none)
	if st := b.writeAs("Operator", 1, 3); st != StatusNotPrimary || b.dev.count() != 0 {
		t.Fatalf("no Primary known: %v, device writes %d, want %v and 0 (the confirmed mode's status)", st, b.dev.count(), StatusNotPrimary)
	}
	rec, _ := b.rec.last()
	if rec.OK || !strings.Contains(rec.Message, "(none reachable)") {
		t.Fatalf("audit %+v, want a failed forwarding naming no Primary", rec)
	}
	// The Primary checks the role again with its own authorization.
	a := newForwardRig(t, "a", &fakeRoles{gate.RolePrimary, 2}, tr, none)
	c := newForwardRig(t, "c", &fakeRoles{gate.RoleSecondary, 2}, tr, func() (string, uint64, bool) { return "a", 42, true })
	if st := c.writeAs("Viewer", 1, 3); st != ua.StatusBadUserAccessDenied || a.dev.count() != 0 {
		t.Fatalf("a role the Primary does not authorise: %v, device writes %d, want BadUserAccessDenied and 0", st, a.dev.count())
	}
	// A detached node never sends.
	d := newForwardRig(t, "d", &fakeRoles{gate.RoleDetached, 2}, tr, func() (string, uint64, bool) { return "a", 42, true })
	if st := d.writeAs("Operator", 1, 3); st != StatusNotPrimary || a.dev.count() != 0 {
		t.Fatalf("detached: %v, device writes %d, want %v and nothing sent", st, a.dev.count(), StatusNotPrimary)
	}
	// A write without a session (not a client's) is never forwarded.
	if st := c.write(4); st != StatusNotPrimary || a.dev.count() != 0 {
		t.Fatalf("sessionless write: %v, want %v", st, StatusNotPrimary)
	}
}
