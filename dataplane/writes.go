package dataplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/opcua/addrspace"
)

// WriteMode selects how a client write to a tag is answered
// (OpcUa:WriteMode).
type WriteMode int

const (
	// Optimistic answers Good at once; a write the gate denies or the
	// device refuses is reverted afterwards: the Variable shows the prior
	// value with a Bad status for a moment, then the prior value, and an
	// AuditWriteUpdateEvent says why.
	Optimistic WriteMode = iota
	// Confirmed answers when the device did (at most WriteTimeout), with
	// the device's result or the gate's denial; nothing is reverted.
	Confirmed
)

// StatusNotPrimary is the status of a write the Primary gate denied: the
// transient Bad status of an optimistic revert and the result of a
// confirmed write. BadInvalidState: the node is in a state (standby) that
// does not allow the operation.
var StatusNotPrimary = ua.StatusBadInvalidState

// DeviceWriter writes one tag of one device (a driver). Write may block
// up to ctx's deadline and is called from several goroutines at once.
// An error that wraps a ua.StatusCode reports that status to the client.
type DeviceWriter interface {
	Write(ctx context.Context, tag string, value any) error
}

// Roles is what the gate needs: this node's role and the number of Up
// driver members of its ClusterId, and the epoch of the snapshot that set
// the role (redundancy.RoleView). Its methods never block.
type Roles interface {
	State() (gate.Role, int)
	Epoch() uint64
}

// AuditRecord is one AuditWriteUpdateEvent (Part 5 §6.4.27).
type AuditRecord struct {
	Node     *ua.NodeID
	Old, New *ua.Variant
	// OK: the write was serviced; Status is then Good, else why not.
	OK     bool
	Status ua.StatusCode
	// Message is "write serviced (epoch N)", the gate's reason ("not
	// primary", "not primary (role unknown)", "not primary (no lease or
	// promotion hold)") or the device's error.
	Message string
	// Epoch is the ownership epoch of the snapshot that made this node
	// Primary when the write was serviced (0 when it was not): a write is
	// fenced by the promotion that allowed it.
	Epoch uint64
	At    time.Time
}

// Auditor raises AuditWriteUpdateEvents on the Server object. It must not
// block.
type Auditor interface {
	AuditWrite(AuditRecord)
}

// DenialCounter counts gate denials
// (otopcua_redundancy_primary_gate_denied_total{site,reason}).
type DenialCounter interface {
	PrimaryGateDenied(site, reason string)
}

// WritesOptions configure Writes. Roles is required.
type WritesOptions struct {
	Mode  WriteMode
	Roles Roles
	// Timeout bounds one device write. Default 2 s.
	Timeout time.Duration
	// MaxPending bounds the optimistic writes of one device waiting for
	// the device; a write beyond it is reverted at once. Default 64.
	MaxPending int
	Auditor    Auditor       // nil: no audit events
	Denials    DenialCounter // nil: not counted
	Logger     *slog.Logger
	// Clock stamps stored and reverted values. Default: the real clock.
	Clock clockwork.Clock
	// StatusOf maps a device write's error to the client's status
	// (drivers.StatusOf). Default: a wrapped ua.StatusCode, BadTimeout for
	// a deadline, else BadCommunicationError.
	StatusOf func(error) ua.StatusCode
}

// Writes routes client writes of tags to their devices behind the Primary
// gate. A denied write never reaches the device and never queues.
type Writes struct {
	o WritesOptions
}

// NewWrites returns a router. It starts nothing: optimistic device writes
// run on goroutines of their own, bounded per device.
func NewWrites(o WritesOptions) *Writes {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 64
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.StatusOf == nil {
		o.StatusOf = defaultStatusOf
	}
	return &Writes{o: o}
}

// Target is one writable tag: its Variable, the device that owns it and
// the tag's name on that device.
type Target struct {
	Device string
	Tag    string
	V      *addrspace.Variable
	W      DeviceWriter
	// pending bounds the optimistic writes in flight to the device; shared
	// by the targets of one device (NewDeviceSlots).
	Slots chan struct{}
}

// NewDeviceSlots returns the pending-write bound for one device's targets.
func (w *Writes) NewDeviceSlots() chan struct{} { return make(chan struct{}, w.o.MaxPending) }

// Hook is the WriteHook of target's Variable.
func (w *Writes) Hook(t Target) addrspace.WriteHook {
	return func(_ *ua.NodeID, dv *ua.DataValue) ua.StatusCode {
		if w.o.Mode == Confirmed {
			return w.confirmed(t, dv)
		}
		return w.optimistic(t, dv)
	}
}

// decide asks the gate; a denial is counted and audited.
func (w *Writes) decide(t Target, prior, next *ua.Variant) bool {
	ok, reason := gate.ShouldServiceAsPrimary(w.o.Roles.State())
	if ok {
		return true
	}
	if w.o.Denials != nil {
		w.o.Denials.PrimaryGateDenied("write", reason.Label())
	}
	w.o.Logger.Info("dataplane: write denied", "device", t.Device, "tag", t.Tag, "reason", reason.String())
	w.audit(t, prior, next, false, StatusNotPrimary, reason.String())
	return false
}

func (w *Writes) optimistic(t Target, dv *ua.DataValue) ua.StatusCode {
	prior := t.V.Value()
	w.store(t.V, dv.Value)
	if !w.decide(t, prior.Value, dv.Value) {
		w.revert(t.V, prior, StatusNotPrimary)
		return addrspace.WriteHandled
	}
	select {
	case t.Slots <- struct{}{}:
	default:
		w.o.Logger.Warn("dataplane: too many writes waiting for the device; write reverted", "device", t.Device, "tag", t.Tag)
		w.revert(t.V, prior, ua.StatusBadTooManyOperations)
		w.audit(t, prior.Value, dv.Value, false, ua.StatusBadTooManyOperations, "too many writes waiting for the device")
		return addrspace.WriteHandled
	}
	epoch := w.o.Roles.Epoch()
	go func() {
		defer func() { <-t.Slots }()
		if st, msg := w.toDevice(t, dv.Value, epoch); st != ua.StatusOK {
			w.revert(t.V, prior, st)
			w.audit(t, prior.Value, dv.Value, false, st, msg)
			return
		}
		w.audit(t, prior.Value, dv.Value, true, ua.StatusOK, "write serviced")
	}()
	return addrspace.WriteHandled
}

func (w *Writes) confirmed(t Target, dv *ua.DataValue) ua.StatusCode {
	prior := t.V.Value()
	if !w.decide(t, prior.Value, dv.Value) {
		return StatusNotPrimary
	}
	st, msg := w.toDevice(t, dv.Value, w.o.Roles.Epoch())
	if st != ua.StatusOK {
		w.audit(t, prior.Value, dv.Value, false, st, msg)
		return st
	}
	w.store(t.V, dv.Value)
	w.audit(t, prior.Value, dv.Value, true, ua.StatusOK, "write serviced")
	return addrspace.WriteHandled
}

// toDevice writes value to the device within Timeout and returns the
// status for the client.
func (w *Writes) toDevice(t Target, value *ua.Variant, epoch uint64) (ua.StatusCode, string) {
	ctx, cancel := context.WithTimeout(context.Background(), w.o.Timeout)
	defer cancel()
	err := t.W.Write(ctx, t.Tag, value.Value())
	if err == nil {
		w.o.Logger.Info("dataplane: write serviced", "device", t.Device, "tag", t.Tag, "value", fmt.Sprint(value.Value()), "epoch", epoch)
		return ua.StatusOK, ""
	}
	st := w.o.StatusOf(err)
	w.o.Logger.Warn("dataplane: device write failed", "device", t.Device, "tag", t.Tag, "status", st.Error(), "err", err)
	return st, err.Error()
}

// defaultStatusOf is the StatusOf without a driver package's mapping.
func defaultStatusOf(err error) ua.StatusCode {
	var st ua.StatusCode
	switch {
	case errors.As(err, &st) && st != ua.StatusOK:
		return st
	case errors.Is(err, context.DeadlineExceeded):
		return ua.StatusBadTimeout
	}
	return ua.StatusBadCommunicationError
}

func (w *Writes) store(v *addrspace.Variable, value *ua.Variant) {
	now := w.o.Clock.Now()
	v.SetDataValue(&ua.DataValue{
		EncodingMask: ua.DataValueValue | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
		Value:        value, SourceTimestamp: now, ServerTimestamp: now,
	})
}

// revert shows prior's value with status bad, then prior itself: a
// subscriber with a queue of two or more sees the blip.
func (w *Writes) revert(v *addrspace.Variable, prior *ua.DataValue, bad ua.StatusCode) {
	now := w.o.Clock.Now()
	blip := &ua.DataValue{EncodingMask: ua.DataValueStatusCode | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
		Status: bad, SourceTimestamp: now, ServerTimestamp: now}
	if prior.Value != nil {
		blip.Value = prior.Value
		blip.EncodingMask |= ua.DataValueValue
	}
	v.SetDataValue(blip)
	back := *prior
	back.ServerTimestamp = now
	back.EncodingMask |= ua.DataValueServerTimestamp
	v.SetDataValue(&back)
}

func (w *Writes) audit(t Target, old, next *ua.Variant, ok bool, st ua.StatusCode, msg string) {
	if w.o.Auditor == nil {
		return
	}
	var epoch uint64
	if ok {
		epoch = w.o.Roles.Epoch()
		msg = fmt.Sprintf("%s (epoch %d)", msg, epoch)
	}
	w.o.Auditor.AuditWrite(AuditRecord{Node: t.V.NodeID(), Old: old, New: next, OK: ok, Status: st, Message: msg, Epoch: epoch, At: w.o.Clock.Now()})
}
