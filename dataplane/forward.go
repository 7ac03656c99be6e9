package dataplane

import (
	"context"
	"fmt"
	"sync"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/forward"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Forwarder sends a request to the Primary and returns its answer
// (*forward.Sender). Called concurrently; blocks at most its timeout.
type Forwarder interface {
	Forward(ctx context.Context, req forward.Request) forward.Response
}

// forwardTargets are the writable tags by NodeId, for the Primary's side
// of a forwarded write.
type forwardTargets struct {
	mu sync.RWMutex
	m  map[string]Target // by NodeId string; mu must be held.
}

func (f *forwardTargets) put(t Target) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = make(map[string]Target)
	}
	f.m[t.V.NodeID().String()] = t
}

func (f *forwardTargets) get(id string) (Target, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t, ok := f.m[id]
	return t, ok
}

// Install hooks t's Variable: its writes go to the device behind the gate
// in the configured mode, and in Forward mode a client's write on a
// non-Primary goes to the Primary. It also makes t reachable by a write
// forwarded to this node (Execute).
func (w *Writes) Install(t Target) {
	w.targets.put(t)
	t.V.SetWriteHook(nil)
	t.V.SetWriterHook(w.WriterHook(t))
}

// WriterHook is Hook told who writes (the OPC UA Write service's session):
// the hook a Forward mode needs.
func (w *Writes) WriterHook(t Target) addrspace.WriterHook {
	return func(who *uaserver.Writer, _ *ua.NodeID, dv *ua.DataValue) ua.StatusCode {
		switch w.o.Mode {
		case Confirmed:
			return w.confirmed(t, dv)
		case Forward:
			return w.forwarded(t, who, dv)
		}
		return w.optimistic(t, dv)
	}
}

// forwarded is the Forward mode: the Primary writes as confirmed does; a
// non-Primary sends the write to the Primary (forward.Route) and answers
// with its result.
func (w *Writes) forwarded(t Target, who *uaserver.Writer, dv *ua.DataValue) ua.StatusCode {
	d := w.check()
	prior := t.V.Value()
	if d.Allow {
		return w.confirmedWith(t, dv, prior, d)
	}
	act, st := forward.Route(forward.RouteInput{Mode: forward.Forward, Site: gate.SiteWrite, Permitted: true, Gate: d})
	if act != forward.Send || who == nil || w.o.Forwarder == nil {
		if st == ua.StatusOK {
			st = StatusNotPrimary
		}
		w.audit(t, prior.Value, dv.Value, false, st, d.Reason.String(), 0)
		return st
	}
	body, err := dv.Value.Encode()
	if err != nil {
		return ua.StatusBadEncodingError
	}
	r := w.o.Forwarder.Forward(context.Background(), forward.Request{
		Key:  forward.Key{Node: w.o.Node, Nonce: w.o.Nonce, Session: who.Session.NodeID.String(), Handle: who.Handle, Op: uint32(who.Index)},
		Site: gate.SiteWrite, Right: forward.RightWrite, User: who.Session.UserID, Role: who.Session.Role,
		Op: t.V.NodeID().String(), Body: body,
	})
	if r.Status != ua.StatusOK {
		w.audit(t, prior.Value, dv.Value, false, r.Status, fmt.Sprintf("write forwarded to the Primary %s: %s", orNone(r.Primary), r.Status.Error()), 0)
		return r.Status
	}
	w.store(t.V, dv.Value)
	w.audit(t, prior.Value, dv.Value, true, ua.StatusOK, "write forwarded to the Primary "+r.Primary+", serviced there", r.Epoch)
	return addrspace.WriteHandled
}

func orNone(s string) string {
	if s == "" {
		return "(none reachable)"
	}
	return s
}

// Execute runs a write forwarded to this node, the Primary (the
// forward.Handler checked the rights, the gate and the epoch): the
// device write and the store as a confirmed write, audited naming the
// sending node. It implements forward.Executor for gate.SiteWrite.
func (w *Writes) Execute(ctx context.Context, req forward.Request, epoch uint64) (ua.StatusCode, []byte) {
	t, ok := w.targets.get(req.Op)
	if !ok {
		return ua.StatusBadNodeIDUnknown, nil
	}
	var v ua.Variant
	if _, err := v.Decode(req.Body); err != nil {
		return ua.StatusBadDecodingError, nil
	}
	prior := t.V.Value()
	w.o.Logger.Info("dataplane: write forwarded from a peer", "device", t.Device, "tag", t.Tag, "from", req.From, "user", req.User, "key", req.Key.String())
	st, msg := w.toDeviceIn(ctx, t, &v, epoch)
	by := fmt.Sprintf("write forwarded from %s by %s", req.From, req.User)
	if st != ua.StatusOK {
		w.audit(t, prior.Value, &v, false, st, by+": "+msg, 0)
		return st, nil
	}
	w.store(t.V, &v)
	w.audit(t, prior.Value, &v, true, ua.StatusOK, by+", serviced", epoch)
	return ua.StatusOK, nil
}
