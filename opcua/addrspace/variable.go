package addrspace

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"
)

// Getter supplies the Value of a variable at the moment it is read (for
// example Server_ServerStatus_CurrentTime). It is called on the reader's
// goroutine with no lock of the address space held, possibly concurrently, and
// must not block. The returned DataValue must not be modified afterwards.
type Getter func() *ua.DataValue

// Variable is the handle to the Value of one Variable node: the hot path for
// producers. All methods are safe for concurrent use and take no lock of the
// address space (Set and Value are a few atomic operations).
//
// The DataValue a Variable holds is immutable once stored: Set builds a new
// one, readers and watchers share it and must not modify it.
type Variable struct {
	as *AddressSpace
	n  *node // n.id and n.class are immutable; other fields need as.mu

	value  atomic.Pointer[ua.DataValue]
	getter atomic.Pointer[Getter]
	hook   atomic.Pointer[WriteHook]
	byHook atomic.Pointer[WriterHook]

	// watchers are called with every stored DataValue.
	watchers watchList[*ua.DataValue]
}

func newVariable(as *AddressSpace, n *node, dv *ua.DataValue) *Variable {
	v := &Variable{as: as, n: n}
	if dv != nil {
		v.value.Store(dv)
	}
	n.v = v
	return v
}

// NodeID returns the NodeId of the variable.
func (v *Variable) NodeID() *ua.NodeID { return v.n.id }

// Set stores value with status and source timestamp sourceTime (the server
// time of the call when zero) and calls every watcher with the new
// DataValue before it returns. value is any type ua.NewVariant accepts, or a
// *ua.Variant. Set does not check value against the variable's DataType: the
// producer owns its variables.
func (v *Variable) Set(value any, status ua.StatusCode, sourceTime time.Time) error {
	vr, ok := value.(*ua.Variant)
	if !ok {
		var err error
		if vr, err = ua.NewVariant(value); err != nil {
			return fmt.Errorf("addrspace: set %s: %w", v.n.id, err)
		}
	}
	now := v.as.clock.Now()
	if sourceTime.IsZero() {
		sourceTime = now
	}
	v.store(&ua.DataValue{
		EncodingMask:    dataValueMask(status),
		Value:           vr,
		Status:          status,
		SourceTimestamp: sourceTime,
		ServerTimestamp: now,
	})
	return nil
}

func dataValueMask(status ua.StatusCode) byte {
	m := byte(ua.DataValueValue | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp)
	if status != ua.StatusOK {
		m |= ua.DataValueStatusCode
	}
	return m
}

// SetDataValue stores dv as it is (the caller owns its timestamps and mask)
// and calls every watcher with it. dv must not be modified afterwards. A nil
// dv or a nil dv.Value is replaced by a null Variant so that readers never
// see a nil Variant.
func (v *Variable) SetDataValue(dv *ua.DataValue) {
	if dv == nil {
		dv = &ua.DataValue{}
	}
	if dv.Value == nil {
		cp := *dv
		cp.Value = nullVariant()
		cp.EncodingMask |= ua.DataValueValue
		dv = &cp
	}
	v.store(dv)
}

func (v *Variable) store(dv *ua.DataValue) {
	v.value.Store(dv)
	v.watchers.notify(dv)
}

// Value returns the current DataValue: the getter's result when one is
// installed, else the last stored value (a Good null value when nothing was
// ever stored).
func (v *Variable) Value() *ua.DataValue {
	if g := v.getter.Load(); g != nil {
		if dv := (*g)(); dv != nil {
			return dv
		}
	}
	return v.Stored()
}

// Stored returns the last stored DataValue, whatever the getter says (a
// Good null value when nothing was ever stored).
func (v *Variable) Stored() *ua.DataValue {
	if dv := v.value.Load(); dv != nil {
		return dv
	}
	return &ua.DataValue{EncodingMask: ua.DataValueValue, Value: nullVariant()}
}

// SetGetter makes reads of the Value call g instead of returning the stored
// value; nil removes it. Set still stores values and notifies watchers, so an
// owner that wants subscribers to see a getter-backed value change calls Set
// as well (the Server's CurrentTime is refreshed that way).
func (v *Variable) SetGetter(g Getter) {
	if g == nil {
		v.getter.Store(nil)
		return
	}
	v.getter.Store(&g)
}

// SetWriteHook installs h as this variable's write hook, run after the
// address space's global hook on every client write (see WriteHook); nil
// removes it.
func (v *Variable) SetWriteHook(h WriteHook) {
	if h == nil {
		v.hook.Store(nil)
		return
	}
	v.hook.Store(&h)
}

// SetWriterHook installs h as this variable's writer hook, run after its
// write hook on every client write (see WriterHook); nil removes it.
func (v *Variable) SetWriterHook(h WriterHook) {
	if h == nil {
		v.byHook.Store(nil)
		return
	}
	v.byHook.Store(&h)
}

// watch adds fn to the watchers and returns its cancel function. Both are
// O(1): a store after the edit sees the new list.
func (v *Variable) watch(fn func(*ua.DataValue)) func() { return v.watchers.add(fn) }

// Watchers returns how many watchers the variable has.
func (v *Variable) Watchers() int { return v.watchers.len() }

func nullVariant() *ua.Variant { return ua.MustVariant(nil) }
