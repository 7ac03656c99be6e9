package uaserver

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/gopcua/opcua/ua"
)

// methodRecorder is a registered method that records its calls.
type methodRecorder struct {
	mu    sync.Mutex
	calls []*MethodCall
}

func (m *methodRecorder) run(_ context.Context, c *MethodCall) ([]*ua.Variant, ua.StatusCode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, c)
	if c.Inputs[0].Value().(string) == "panic" {
		panic("method test: asked to panic")
	}
	if c.Inputs[0].Value().(string) == "refuse" {
		return nil, ua.StatusBadInvalidState
	}
	return []*ua.Variant{ua.MustVariant(uint32(len(m.calls)))}, ua.StatusOK
}

func (m *methodRecorder) all() []*MethodCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*MethodCall(nil), m.calls...)
}

// TestCallChecksThenRunsRegisteredMethods calls a registered method over
// the wire with good and bad arguments and on objects that do not have it.
func TestCallChecksThenRunsRegisteredMethods(t *testing.T) {
	rec := &methodRecorder{}
	ts := startServer(t, nil)
	m := Method{Inputs: []Argument{{Name: "Text", Type: ua.TypeIDString}, {Name: "Count", Type: ua.TypeIDUint32}}, Func: rec.run}
	if err := ts.RegisterMethod(nodeReset, m); err != nil {
		t.Fatal(err)
	}
	if err := ts.RegisterMethod(nodeReset, m); !errors.Is(err, ErrMethodRegistered) {
		t.Fatalf("second registration: %v", err)
	}
	rc := dialRaw(t, ts.url)
	cs := rc.session(60000)

	v := ua.MustVariant
	calls := []*ua.CallMethodRequest{
		{ObjectID: nodeObjects, MethodID: nodeReset, InputArguments: []*ua.Variant{v("go"), v(uint32(3))}},
		{ObjectID: nodeObjects, MethodID: nodeReset, InputArguments: []*ua.Variant{v("go")}},
		{ObjectID: nodeObjects, MethodID: nodeReset, InputArguments: []*ua.Variant{v("go"), v(uint32(3)), v(true)}},
		{ObjectID: nodeObjects, MethodID: nodeReset, InputArguments: []*ua.Variant{v(int32(1)), v(uint32(3))}},
		{ObjectID: nodeObjects, MethodID: nodeReset, InputArguments: []*ua.Variant{v("go"), v([]uint32{3})}},
		{ObjectID: nodeObjects, MethodID: nodeReset, InputArguments: []*ua.Variant{v("refuse"), v(uint32(3))}},
		{ObjectID: nodeObjects, MethodID: nodeReset, InputArguments: []*ua.Variant{v("panic"), v(uint32(3))}},
		{ObjectID: nodeTemp, MethodID: nodeReset, InputArguments: []*ua.Variant{v("go"), v(uint32(3))}},  // a variable
		{ObjectID: ua.NewStringNodeID(1, "Ghost"), MethodID: nodeReset, InputArguments: []*ua.Variant{}}, // unknown
		{ObjectID: nodeObjects, MethodID: nodeTemp, InputArguments: []*ua.Variant{}},                     // unregistered
	}
	resp := rc.mustDo(&ua.CallRequest{MethodsToCall: calls}).(*ua.CallResponse)
	want := []struct {
		code ua.StatusCode
		args []ua.StatusCode
	}{
		{ua.StatusOK, []ua.StatusCode{ua.StatusOK, ua.StatusOK}},
		{ua.StatusBadArgumentsMissing, nil},
		{ua.StatusBadTooManyArguments, nil},
		{ua.StatusBadInvalidArgument, []ua.StatusCode{ua.StatusBadTypeMismatch, ua.StatusOK}},
		{ua.StatusBadInvalidArgument, []ua.StatusCode{ua.StatusOK, ua.StatusBadTypeMismatch}},
		{ua.StatusBadInvalidState, []ua.StatusCode{ua.StatusOK, ua.StatusOK}},
		{ua.StatusBadInternalError, []ua.StatusCode{ua.StatusOK, ua.StatusOK}},
		{ua.StatusBadNodeIDInvalid, nil}, // not an Object or ObjectType
		{ua.StatusBadNodeIDUnknown, nil},
		{ua.StatusBadMethodInvalid, nil},
	}
	for k, w := range want {
		r := resp.Results[k]
		if r.StatusCode != w.code || len(r.InputArgumentResults) != len(w.args) {
			t.Errorf("call %d: %v %v, want %v %v", k, r.StatusCode, r.InputArgumentResults, w.code, w.args)
			continue
		}
		for j := range w.args {
			if r.InputArgumentResults[j] != w.args[j] {
				t.Errorf("call %d argument %d: %v, want %v", k, j, r.InputArgumentResults[j], w.args[j])
			}
		}
	}
	if out := resp.Results[0].OutputArguments; len(out) != 1 || out[0].Value() != uint32(1) {
		t.Errorf("outputs %v", out)
	}
	got := rec.all()
	if len(got) != 3 {
		t.Fatalf("the method ran %d times, want 3 (good, refuse, panic)", len(got))
	}
	s := got[0].Session
	if !s.NodeID.Equal(cs.SessionID) || s.ID != SessionIDOf(cs.SessionID) || s.UserID != AnonymousUser || s.Name != t.Name() {
		t.Errorf("session info %+v", s)
	}
	if !got[0].ObjectID.Equal(nodeObjects) || !got[0].MethodID.Equal(nodeReset) {
		t.Errorf("call %+v", got[0])
	}

	ts.UnregisterMethod(nodeReset)
	resp = rc.mustDo(&ua.CallRequest{MethodsToCall: calls[:1]}).(*ua.CallResponse)
	if resp.Results[0].StatusCode != ua.StatusBadMethodInvalid {
		t.Fatalf("after UnregisterMethod: %v", resp.Results[0].StatusCode)
	}
}
