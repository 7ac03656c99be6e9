package conditions_test

import (
	"bytes"
	"testing"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/conditions"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

func callMethod(t *testing.T, c *gopcua.Client, object *ua.NodeID, method uint32, args ...any) *ua.CallMethodResult {
	t.Helper()
	req := &ua.CallMethodRequest{ObjectID: object, MethodID: nsid(method), InputArguments: []*ua.Variant{}}
	for _, a := range args {
		req.InputArguments = append(req.InputArguments, ua.MustVariant(a))
	}
	res, err := c.Call(testCtx(t), req)
	if err != nil {
		t.Fatalf("Call i=%d: %v", method, err)
	}
	return res
}

// TestCallConditionMethods calls the condition methods over the wire: the
// Actions get the condition's name, the EventId, the comment and the
// session's user; malformed calls never reach them.
func TestCallConditionMethods(t *testing.T) {
	p := startPlant(t)
	c := p.connect(t)
	eid, err := p.m.Update("HighTemperature", conditions.State{Enabled: true, Active: true, Retain: true, Quality: ua.StatusOK})
	if err != nil {
		t.Fatal(err)
	}
	// The engine raises the acknowledgement from inside the Action, as an
	// alarm engine does: no deadlock, and the client sees the new state.
	updated := make(chan []byte, 1)
	p.rec.set(ua.StatusOK, func(cl call) {
		if cl.method == "Acknowledge" {
			id, err := p.m.Update(cl.name, conditions.State{Enabled: true, Active: true, Acked: true, Retain: true,
				Comment: cl.comment, ClientUserID: cl.user, Quality: ua.StatusOK})
			if err != nil {
				t.Errorf("Update inside the Action: %v", err)
			}
			updated <- id
		}
	})
	comment := ua.NewLocalizedText("operator on the way")
	if r := callMethod(t, c, highTemp, id.AcknowledgeableConditionType_Acknowledge, eid, comment); r.StatusCode != ua.StatusOK {
		t.Fatalf("Acknowledge: %v", r.StatusCode)
	}
	ackEvent := <-updated
	if dv := readValues(t, c, ua.AttributeIDValue, sub("AckedState.Id"), sub("Comment"), sub("ClientUserId")); dv[0].Value.Value() != true ||
		text(dv[1].Value) != "operator on the way" || dv[2].Value.Value() != uaserver.AnonymousUser {
		t.Errorf("after Acknowledge: %v %v %v", dv[0].Value, dv[1].Value, dv[2].Value)
	}
	p.rec.set(ua.StatusOK, nil)
	for _, m := range []uint32{id.AcknowledgeableConditionType_Confirm, id.ConditionType_AddComment} {
		if r := callMethod(t, c, highTemp, m, ackEvent, comment); r.StatusCode != ua.StatusOK {
			t.Fatalf("method i=%d: %v", m, r.StatusCode)
		}
	}
	for _, m := range []uint32{id.ConditionType_Disable, id.ConditionType_Enable} {
		if r := callMethod(t, c, highTemp, m); r.StatusCode != ua.StatusOK {
			t.Fatalf("method i=%d: %v", m, r.StatusCode)
		}
	}
	got := p.rec.all()
	want := []call{
		{"Acknowledge", "HighTemperature", uaserver.AnonymousUser, eid, "operator on the way"},
		{"Confirm", "HighTemperature", uaserver.AnonymousUser, ackEvent, "operator on the way"},
		{"AddComment", "HighTemperature", uaserver.AnonymousUser, ackEvent, "operator on the way"},
		{"Disable", "HighTemperature", uaserver.AnonymousUser, nil, ""},
		{"Enable", "HighTemperature", uaserver.AnonymousUser, nil, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("Actions got %d calls, want %d: %+v", len(got), len(want), got)
	}
	for k := range want {
		g, w := got[k], want[k]
		if g.method != w.method || g.name != w.name || g.user != w.user || !bytes.Equal(g.eventID, w.eventID) || g.comment != w.comment {
			t.Errorf("call %d: %+v, want %+v", k, g, w)
		}
	}

	// Malformed calls: the Actions see none of them.
	p.rec.set(ua.StatusBadConditionBranchAlreadyAcked, nil)
	for _, tc := range []struct {
		name string
		obj  *ua.NodeID
		m    uint32
		args []any
		want ua.StatusCode
		argr []ua.StatusCode
	}{
		{"EventId as a String", highTemp, id.AcknowledgeableConditionType_Acknowledge, []any{"not bytes", comment}, ua.StatusBadInvalidArgument, []ua.StatusCode{ua.StatusBadTypeMismatch, ua.StatusOK}},
		{"Comment as a String", highTemp, id.AcknowledgeableConditionType_Acknowledge, []any{eid, "text"}, ua.StatusBadInvalidArgument, []ua.StatusCode{ua.StatusOK, ua.StatusBadTypeMismatch}},
		{"no Comment", highTemp, id.AcknowledgeableConditionType_Acknowledge, []any{eid}, ua.StatusBadArgumentsMissing, nil},
		{"three arguments", highTemp, id.AcknowledgeableConditionType_Acknowledge, []any{eid, comment, true}, ua.StatusBadTooManyArguments, nil},
		{"Enable with an argument", highTemp, id.ConditionType_Enable, []any{true}, ua.StatusBadTooManyArguments, nil},
		{"on the Server object", nsid(id.Server), id.AcknowledgeableConditionType_Acknowledge, []any{eid, comment}, ua.StatusBadMethodInvalid, nil},
		{"unknown object", ua.NewStringNodeID(1, "ghost"), id.AcknowledgeableConditionType_Acknowledge, []any{eid, comment}, ua.StatusBadNodeIDUnknown, nil},
		{"not a condition method", highTemp, id.Server_GetMonitoredItems, []any{uint32(1)}, ua.StatusBadMethodInvalid, nil},
	} {
		r := callMethod(t, c, tc.obj, tc.m, tc.args...)
		if r.StatusCode != tc.want || len(r.InputArgumentResults) != len(tc.argr) {
			t.Errorf("%s: %v %v, want %v %v", tc.name, r.StatusCode, r.InputArgumentResults, tc.want, tc.argr)
			continue
		}
		for k := range tc.argr {
			if r.InputArgumentResults[k] != tc.argr[k] {
				t.Errorf("%s: argument results %v, want %v", tc.name, r.InputArgumentResults, tc.argr)
			}
		}
	}
	if n := len(p.rec.all()); n != len(want) {
		t.Fatalf("malformed calls reached the Actions: %d calls", n)
	}
	// The Actions' status is the call's.
	if r := callMethod(t, c, highTemp, id.AcknowledgeableConditionType_Acknowledge, eid, comment); r.StatusCode != ua.StatusBadConditionBranchAlreadyAcked {
		t.Fatalf("the Actions' status: %v", r.StatusCode)
	}
	// After Close the methods are gone.
	p.m.Close()
	if r := callMethod(t, c, highTemp, id.ConditionType_Enable); r.StatusCode != ua.StatusBadMethodInvalid {
		t.Fatalf("after Close: %v", r.StatusCode)
	}
}

// TestAcknowledgeNeedsTheRight: a session whose role may only read (here
// the anonymous one, as OpcUa:Authorization has it by default) gets
// BadUserAccessDenied for Acknowledge, Confirm and AddComment, and the
// Actions never hear of it; ConditionRefresh needs only read.
func TestAcknowledgeNeedsTheRight(t *testing.T) {
	p := startPlantWith(t, func(c *opcua.Config) {
		c.Authorization = map[string]uaserver.Rights{uaserver.AnonymousRole: uaserver.RightRead}
	})
	c := p.connect(t)
	eid, err := p.m.Update("HighTemperature", conditions.State{Enabled: true, Active: true, Retain: true, Quality: ua.StatusOK})
	if err != nil {
		t.Fatal(err)
	}
	comment := ua.NewLocalizedText("not mine to ack")
	for _, m := range []uint32{id.AcknowledgeableConditionType_Acknowledge, id.AcknowledgeableConditionType_Confirm, id.ConditionType_AddComment} {
		if r := callMethod(t, c, highTemp, m, eid, comment); r.StatusCode != ua.StatusBadUserAccessDenied {
			t.Errorf("i=%d by a read-only session: %v, want BadUserAccessDenied", m, r.StatusCode)
		}
	}
	if got := p.rec.all(); len(got) != 0 {
		t.Fatalf("the Actions were called: %+v", got)
	}
	// ConditionRefresh of an unknown subscription: refused for the
	// subscription, not for the right.
	if r := callMethod(t, c, ua.NewNumericNodeID(0, id.ConditionType), id.ConditionType_ConditionRefresh, uint32(4711)); r.StatusCode == ua.StatusBadUserAccessDenied {
		t.Fatal("ConditionRefresh refused to a session that may read")
	}
}
