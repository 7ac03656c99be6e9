package addrspace

import (
	"fmt"
	"slices"
	"sync"
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

	// Watchers. Watch and cancel edit list in O(1) under wmu (append, and
	// swap-remove through the watcher's index) and mark the snapshot stale;
	// the next store rebuilds the snapshot once, so creating or deleting n
	// watchers costs O(n) in total however many there are, and a store
	// between edits pays one copy of the list, which it walks anyway.
	snap  atomic.Pointer[[]*watcher] // immutable; nil when there are none
	stale atomic.Bool                // snap lags list

	wmu  sync.Mutex // serialises edits of list and snapshot rebuilds
	list []*watcher // wmu must be held.
}

type watcher struct {
	fn  func(*ua.DataValue)
	idx int // position in Variable.list, -1 once removed; Variable.wmu must be held.
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
	if ws := v.watchersSnapshot(); ws != nil {
		for _, w := range *ws {
			w.fn(dv)
		}
	}
}

// watchersSnapshot returns the current watchers, rebuilding the snapshot
// first when an edit made it stale.
func (v *Variable) watchersSnapshot() *[]*watcher {
	if !v.stale.Load() {
		return v.snap.Load()
	}
	v.wmu.Lock()
	defer v.wmu.Unlock()
	if v.stale.Load() {
		if len(v.list) == 0 {
			v.snap.Store(nil)
		} else {
			next := slices.Clone(v.list)
			v.snap.Store(&next)
		}
		v.stale.Store(false)
	}
	return v.snap.Load()
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

// watch adds fn to the watchers and returns its cancel function. Both are
// O(1): a store after the edit sees the new list.
func (v *Variable) watch(fn func(*ua.DataValue)) func() {
	w := &watcher{fn: fn}
	v.wmu.Lock()
	w.idx = len(v.list)
	v.list = append(v.list, w)
	v.stale.Store(true)
	v.wmu.Unlock()

	var once sync.Once
	return func() { once.Do(func() { v.unwatch(w) }) }
}

func (v *Variable) unwatch(w *watcher) {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	i := w.idx
	if i < 0 || i >= len(v.list) || v.list[i] != w {
		return
	}
	last := len(v.list) - 1
	v.list[i] = v.list[last]
	v.list[i].idx = i
	v.list[last] = nil
	v.list = v.list[:last]
	w.idx = -1
	if len(v.list) == 0 {
		v.list = nil // let a once-huge backing array go
	} else if cap(v.list) > 64 && len(v.list) < cap(v.list)/4 {
		v.list = slices.Clone(v.list)
	}
	v.stale.Store(true)
}

// Watchers returns how many watchers the variable has.
func (v *Variable) Watchers() int {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	return len(v.list)
}

func nullVariant() *ua.Variant { return ua.MustVariant(nil) }
