package dataplane

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/internal/mutation"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/addrspace"
)

// fakeRoles is the gate's source: a node that is a member once it counts
// a driver member, with snapshot epoch 42.
type fakeRoles struct {
	role    gate.Role
	drivers int
}

func (r *fakeRoles) Input() gate.Input {
	return gate.Input{Role: r.role, Drivers: r.drivers, Member: r.drivers > 0, Epoch: 42}
}

// fakeDevice records writes; err is returned, block holds a write until
// closed.
type fakeDevice struct {
	mu     sync.Mutex
	writes []any
	err    error
	block  chan struct{}
}

func (d *fakeDevice) Write(ctx context.Context, tag string, v any) error {
	if d.block != nil {
		select {
		case <-d.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writes = append(d.writes, v)
	return d.err
}

func (d *fakeDevice) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.writes)
}

type recorder struct {
	mu      sync.Mutex
	audits  []AuditRecord
	denials []string
}

func (r *recorder) AuditWrite(a AuditRecord) {
	r.mu.Lock()
	r.audits = append(r.audits, a)
	r.mu.Unlock()
}
func (r *recorder) PrimaryGateDenied(site, reason string) {
	r.mu.Lock()
	r.denials = append(r.denials, site+"/"+reason)
	r.mu.Unlock()
}
func (r *recorder) last() (AuditRecord, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.audits) == 0 {
		return AuditRecord{}, r.denials
	}
	return r.audits[len(r.audits)-1], r.denials
}

// writeRig is one writable int16 tag with a watcher recording what a
// subscriber with exception-based sampling would see.
type writeRig struct {
	as   *addrspace.AddressSpace
	v    *addrspace.Variable
	dev  *fakeDevice
	rec  *recorder
	mu   sync.Mutex
	seen []string
}

func newWriteRig(t *testing.T, mode WriteMode, roles *fakeRoles, maxPending int) *writeRig {
	t.Helper()
	return newWriteRigWith(t, mode, roles, maxPending, func(*WritesOptions) {})
}

// newWriteRigWith is newWriteRig with edit applied to the router's options.
func newWriteRigWith(t *testing.T, mode WriteMode, roles *fakeRoles, maxPending int, edit func(*WritesOptions)) *writeRig {
	t.Helper()
	as, s := newSpace(t)
	s.Apply(doc(deployment.Tag{Name: "Setpoint", Table: deployment.TableHolding, Address: ptr(0), Type: deployment.TypeInt16, Writable: true}))
	r := &writeRig{as: as, v: s.Variable("press1", "Setpoint"), dev: &fakeDevice{}, rec: &recorder{}}
	if err := s.SetReading("press1", "Setpoint", int16(10), ua.StatusOK, time.Time{}); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	o := WritesOptions{Mode: mode, Gate: gate.NewGuard(roles, r.rec, logger), Timeout: 200 * time.Millisecond,
		MaxPending: maxPending, Auditor: r.rec, Logger: logger}
	edit(&o)
	w := NewWrites(o)
	r.v.SetWriteHook(w.Hook(Target{Device: "press1", Tag: "Setpoint", V: r.v, W: r.dev, Slots: w.NewDeviceSlots()}))
	cancel, st := as.Watch(r.v.NodeID(), func(dv *ua.DataValue) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen = append(r.seen, fmt.Sprintf("%v/%v", dv.Value.Value(), dv.Status))
	})
	if st != ua.StatusOK {
		t.Fatal(st)
	}
	t.Cleanup(cancel)
	return r
}

func (r *writeRig) write(v int16) ua.StatusCode {
	return r.as.Write(&ua.WriteValue{NodeID: r.v.NodeID(), AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}})
}

func (r *writeRig) seenNow() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func TestOptimisticWriteDeniedOffThePrimaryIsReverted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		roles   fakeRoles
		message string
		label   string
	}{
		{"secondary", fakeRoles{gate.RoleSecondary, 2}, "not primary", "write/secondary"},
		{"boot window", fakeRoles{gate.RoleUnknown, 2}, "not primary (role unknown)", "write/role-unknown"},
		{"detached", fakeRoles{gate.RoleDetached, 2}, "not primary", "write/detached"},
		{"not a member yet", fakeRoles{gate.RoleUnknown, 0}, "not primary (not a cluster member yet)", "write/not-member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newWriteRig(t, Optimistic, &tc.roles, 0)
			if st := r.write(99); st != ua.StatusOK {
				t.Fatalf("optimistic write answered %v, want Good", st)
			}
			want := []string{"99/The operation succeeded. StatusGood (0x0)", "10/" + StatusNotPrimary.Error(), "10/The operation succeeded. StatusGood (0x0)"}
			if got := r.seenNow(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("subscriber saw %v, want %v", got, want)
			}
			if r.dev.count() != 0 {
				t.Fatal("a denied write reached the device")
			}
			a, denials := r.rec.last()
			if a.OK || a.Message != tc.message || a.Old.Value() != int16(10) || a.New.Value() != int16(99) {
				t.Fatalf("audit %+v", a)
			}
			if len(denials) != 1 || denials[0] != tc.label {
				t.Fatalf("denials %v, want [%s]", denials, tc.label)
			}
		})
	}
}

func TestOptimisticWriteOnThePrimaryReachesTheDevice(t *testing.T) {
	r := newWriteRig(t, Optimistic, &fakeRoles{gate.RolePrimary, 2}, 0)
	if st := r.write(77); st != ua.StatusOK {
		t.Fatal(st)
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the device write", func() bool { a, _ := r.rec.last(); return a.OK }))
	if a, _ := r.rec.last(); a.Epoch != 42 || a.Message != "write serviced (epoch 42)" {
		t.Fatalf("serviced write audited as %q epoch %d, want the epoch of the promotion (42)", a.Message, a.Epoch)
	}
	if r.dev.count() != 1 || r.v.Value().Value.Value() != int16(77) {
		t.Fatalf("device writes %d, value %v", r.dev.count(), r.v.Value().Value.Value())
	}
	// A lone node with no snapshot yet services too (single-node posture).
	lone := newWriteRig(t, Optimistic, &fakeRoles{gate.RoleUnknown, 1}, 0)
	lone.write(5)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the lone node's device write", func() bool { return lone.dev.count() == 1 }))
}

func TestOptimisticWriteFailedByTheDeviceIsReverted(t *testing.T) {
	r := newWriteRig(t, Optimistic, &fakeRoles{gate.RolePrimary, 2}, 0)
	r.dev.err = fmt.Errorf("modbus exception 2: %w", ua.StatusBadOutOfRange)
	r.write(55)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the revert", func() bool { return len(r.seenNow()) == 3 }))
	if got := r.seenNow(); got[1] != "10/"+ua.StatusBadOutOfRange.Error() {
		t.Fatalf("subscriber saw %v", got)
	}
	if a, _ := r.rec.last(); a.OK || a.Status != ua.StatusBadOutOfRange {
		t.Fatalf("audit %+v", a)
	}
}

func TestOptimisticWritesBeyondThePendingBoundAreReverted(t *testing.T) {
	r := newWriteRig(t, Optimistic, &fakeRoles{gate.RolePrimary, 2}, 1)
	r.dev.block = make(chan struct{})
	r.write(1) // holds the one slot
	r.write(2)
	if a, _ := r.rec.last(); a.Status != ua.StatusBadTooManyOperations {
		t.Fatalf("second write: audit %+v, want BadTooManyOperations", a)
	}
	close(r.dev.block)
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the first write", func() bool { return r.dev.count() == 1 }))
}

func TestConfirmedWrites(t *testing.T) {
	t.Run("denied", func(t *testing.T) {
		r := newWriteRig(t, Confirmed, &fakeRoles{gate.RoleSecondary, 2}, 0)
		if st := r.write(9); st != StatusNotPrimary {
			t.Fatalf("answered %v, want %v", st, StatusNotPrimary)
		}
		if len(r.seenNow()) != 0 || r.dev.count() != 0 || r.v.Value().Value.Value() != int16(10) {
			t.Fatalf("a denied confirmed write changed something: %v", r.seenNow())
		}
	})
	t.Run("denied before this node is a member", func(t *testing.T) {
		r := newWriteRig(t, Confirmed, &fakeRoles{gate.RoleUnknown, 0}, 0)
		if st := r.write(9); st != StatusNotPrimary {
			t.Fatalf("answered %v, want %v", st, StatusNotPrimary)
		}
		a, denials := r.rec.last()
		if r.dev.count() != 0 || a.OK || a.Message != "not primary (not a cluster member yet)" || len(denials) != 1 || denials[0] != "write/not-member" {
			t.Fatalf("device writes %d, audit %+v, denials %v", r.dev.count(), a, denials)
		}
	})
	t.Run("serviced", func(t *testing.T) {
		r := newWriteRig(t, Confirmed, &fakeRoles{gate.RolePrimary, 2}, 0)
		if st := r.write(9); st != ua.StatusOK {
			t.Fatal(st)
		}
		if r.dev.count() != 1 || r.v.Value().Value.Value() != int16(9) {
			t.Fatal("not written")
		}
	})
	t.Run("device error", func(t *testing.T) {
		r := newWriteRig(t, Confirmed, &fakeRoles{gate.RolePrimary, 2}, 0)
		r.dev.err = fmt.Errorf("refused: %w", ua.StatusBadDeviceFailure)
		if st := r.write(9); st != ua.StatusBadDeviceFailure {
			t.Fatalf("answered %v", st)
		}
		if r.v.Value().Value.Value() != int16(10) {
			t.Fatal("value changed")
		}
	})
	t.Run("device too slow", func(t *testing.T) {
		r := newWriteRig(t, Confirmed, &fakeRoles{gate.RolePrimary, 2}, 0)
		r.dev.block = make(chan struct{})
		defer close(r.dev.block)
		if st := r.write(9); st != ua.StatusBadTimeout {
			t.Fatalf("answered %v, want BadTimeout", st)
		}
	})
}

// TestMutations: the test-only mutations of package internal/mutation do
// what the chaos run's checker must catch.
func TestMutations(t *testing.T) {
	t.Run("secondary-writes", func(t *testing.T) {
		r := newWriteRigWith(t, Confirmed, &fakeRoles{gate.RoleSecondary, 2}, 0, func(o *WritesOptions) { o.SecondaryWrites = true })
		if st := r.write(9); st != ua.StatusOK || r.dev.count() != 1 {
			t.Fatalf("answered %v with %d device writes, want the Secondary to write", st, r.dev.count())
		}
	})
	t.Run("secondary-writes leaves a node that is not a member alone", func(t *testing.T) {
		r := newWriteRigWith(t, Confirmed, &fakeRoles{gate.RoleUnknown, 0}, 0, func(o *WritesOptions) { o.SecondaryWrites = true })
		if st := r.write(9); st != StatusNotPrimary || r.dev.count() != 0 {
			t.Fatalf("answered %v with %d device writes", st, r.dev.count())
		}
	})
	t.Run("ack-without-write", func(t *testing.T) {
		r := newWriteRigWith(t, Confirmed, &fakeRoles{gate.RolePrimary, 2}, 0, func(o *WritesOptions) { o.AckWithoutWrite = true })
		for i := range 2 * mutation.AckWithoutWriteEvery {
			if st := r.write(int16(i)); st != ua.StatusOK {
				t.Fatalf("write %d answered %v", i, st)
			}
		}
		if got, want := r.dev.count(), 2*(mutation.AckWithoutWriteEvery-1); got != want {
			t.Fatalf("%d device writes for %d acknowledged, want %d", got, 2*mutation.AckWithoutWriteEvery, want)
		}
	})
}
