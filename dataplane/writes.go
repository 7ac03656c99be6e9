package dataplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/internal/mutation"
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
	// Forward is Confirmed on the Primary; on a non-Primary a client's
	// write is sent to the Primary (WritesOptions.Forwarder), executed
	// there once and its result returned (package forward).
	Forward
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

// AuditRecord is one AuditWriteUpdateEvent (Part 5 §6.4.27).
type AuditRecord struct {
	Node     *ua.NodeID
	Old, New *ua.Variant
	// OK: the write was serviced; Status is then Good, else why not.
	OK     bool
	Status ua.StatusCode
	// Message is "write serviced (epoch N)", the gate's reason
	// (gate.Reason's String: "not primary", "not primary (role unknown)",
	// "not primary (not a cluster member yet)", "not primary (no lease or
	// promotion hold)", "not primary (woken from a pause, not yet heard
	// every peer)") or the device's error.
	Message string
	// Epoch is the redundancy epoch of the snapshot that made this node
	// Primary when the write was serviced (0 when it was not). It is
	// logged and audited so that a write can be traced to the promotion
	// that allowed it; the field device receives no epoch and compares
	// nothing (a Modbus device cannot). What keeps a replaced Primary from
	// writing is the gate before the write: its role, its licence under
	// lease-majority, and the woken-process fence under every strategy.
	// A write forwarded to the Primary (Forward mode) carries the sender's
	// epoch, and the Primary refuses one newer than its own
	// (forward.EpochOK): there the epoch is compared.
	Epoch uint64
	At    time.Time
}

// Auditor raises AuditWriteUpdateEvents on the Server object. It must not
// block.
type Auditor interface {
	AuditWrite(AuditRecord)
}

// WritesOptions configure Writes. Gate is required.
type WritesOptions struct {
	Mode WriteMode
	// Gate is the node's Primary gate: every write asks it
	// (gate.SiteWrite), which counts and logs the denials.
	Gate *gate.Guard
	// Timeout bounds one device write. Default 2 s.
	Timeout time.Duration
	// MaxPending bounds the optimistic writes of one device waiting for
	// the device; a write beyond it is reverted at once. Default 64.
	MaxPending int
	Auditor    Auditor // nil: no audit events
	Logger     *slog.Logger
	// Clock stamps stored and reverted values. Default: the real clock.
	Clock clockwork.Clock
	// StatusOf maps a device write's error to the client's status
	// (drivers.StatusOf). Default: a wrapped ua.StatusCode, BadTimeout for
	// a deadline, else BadCommunicationError.
	StatusOf func(error) ua.StatusCode
	// Forwarder sends a non-Primary's writes to the Primary in Forward
	// mode; nil: they are denied as in Confirmed.
	Forwarder Forwarder
	// Node names this node in a forwarded request's key (its
	// ApplicationUri); Nonce is the process's (forward.NewNonce).
	Node  string
	Nonce uint64

	// SecondaryWrites and AckWithoutWrite are test-only mutations
	// (package internal/mutation): a node the gate calls Secondary writes
	// to the device itself; every mutation.AckWithoutWriteEvery-th
	// serviced write is acknowledged without reaching the device.
	SecondaryWrites bool
	AckWithoutWrite bool
}

// Writes routes client writes of tags to their devices behind the Primary
// gate. A denied write never reaches the device and never queues.
type Writes struct {
	o       WritesOptions
	targets forwardTargets
	skips   atomic.Uint64 // device writes seen by the ack-without-write mutation
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
		if w.o.Mode != Optimistic {
			return w.confirmed(t, dv)
		}
		return w.optimistic(t, dv)
	}
}

// decide asks the gate; a denial is audited (the Guard counts it and
// logs the verdict's changes).
func (w *Writes) decide(t Target, prior, next *ua.Variant) gate.Decision {
	d := w.check()
	if !d.Allow {
		w.o.Logger.Debug("dataplane: write denied", "device", t.Device, "tag", t.Tag, "reason", d.Reason.String())
		w.audit(t, prior, next, false, StatusNotPrimary, d.Reason.String(), 0)
	}
	return d
}

func (w *Writes) optimistic(t Target, dv *ua.DataValue) ua.StatusCode {
	prior := t.V.Value()
	w.store(t.V, dv.Value)
	d := w.decide(t, prior.Value, dv.Value)
	if !d.Allow {
		w.revert(t.V, prior, StatusNotPrimary)
		return addrspace.WriteHandled
	}
	select {
	case t.Slots <- struct{}{}:
	default:
		w.o.Logger.Warn("dataplane: too many writes waiting for the device; write reverted", "device", t.Device, "tag", t.Tag)
		w.revert(t.V, prior, ua.StatusBadTooManyOperations)
		w.audit(t, prior.Value, dv.Value, false, ua.StatusBadTooManyOperations, "too many writes waiting for the device", 0)
		return addrspace.WriteHandled
	}
	go func() {
		defer func() { <-t.Slots }()
		if st, msg := w.toDevice(t, dv.Value, d.Epoch); st != ua.StatusOK {
			w.revert(t.V, prior, st)
			w.audit(t, prior.Value, dv.Value, false, st, msg, 0)
			return
		}
		w.audit(t, prior.Value, dv.Value, true, ua.StatusOK, "write serviced", d.Epoch)
	}()
	return addrspace.WriteHandled
}

func (w *Writes) confirmed(t Target, dv *ua.DataValue) ua.StatusCode {
	prior := t.V.Value()
	d := w.decide(t, prior.Value, dv.Value)
	if !d.Allow {
		return StatusNotPrimary
	}
	return w.confirmedWith(t, dv, prior, d)
}

// confirmedWith writes to the device for a write the gate allowed (d).
func (w *Writes) confirmedWith(t Target, dv *ua.DataValue, prior *ua.DataValue, d gate.Decision) ua.StatusCode {
	st, msg := w.toDevice(t, dv.Value, d.Epoch)
	if st != ua.StatusOK {
		w.audit(t, prior.Value, dv.Value, false, st, msg, 0)
		return st
	}
	w.store(t.V, dv.Value)
	w.audit(t, prior.Value, dv.Value, true, ua.StatusOK, "write serviced", d.Epoch)
	return addrspace.WriteHandled
}

// toDevice writes value to the device within Timeout and returns the
// status for the client.
func (w *Writes) toDevice(t Target, value *ua.Variant, epoch uint64) (ua.StatusCode, string) {
	return w.toDeviceIn(context.Background(), t, value, epoch)
}

// check asks the gate for a write (gate.SiteWrite). Under the
// secondary-writes mutation a Secondary's denial is turned into an allow.
func (w *Writes) check() gate.Decision {
	d := w.o.Gate.Check(gate.SiteWrite)
	if w.o.SecondaryWrites && d.Reason == gate.DeniedSecondary {
		w.o.Logger.Warn("dataplane: mutation secondary-writes: this Secondary writes to the device itself")
		return gate.Decision{Allow: true, Reason: gate.Allowed}
	}
	return d
}

// toDeviceIn is toDevice within parent's deadline as well.
func (w *Writes) toDeviceIn(parent context.Context, t Target, value *ua.Variant, epoch uint64) (ua.StatusCode, string) {
	if w.o.AckWithoutWrite && w.skips.Add(1)%mutation.AckWithoutWriteEvery == 0 {
		w.o.Logger.Warn("dataplane: mutation ack-without-write: write acknowledged without reaching the device", "device", t.Device, "tag", t.Tag, "value", fmt.Sprint(value.Value()))
		return ua.StatusOK, ""
	}
	ctx, cancel := context.WithTimeout(parent, w.o.Timeout)
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

// audit raises the write's AuditWriteUpdateEvent; epoch is the gate's
// (the fencing token of a serviced write, 0 otherwise).
func (w *Writes) audit(t Target, old, next *ua.Variant, ok bool, st ua.StatusCode, msg string, epoch uint64) {
	if w.o.Auditor == nil {
		return
	}
	if ok {
		msg = fmt.Sprintf("%s (epoch %d)", msg, epoch)
	}
	w.o.Auditor.AuditWrite(AuditRecord{Node: t.V.NodeID(), Old: old, New: next, OK: ok, Status: st, Message: msg, Epoch: epoch, At: w.o.Clock.Now()})
}
