package addrspace_test

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

func TestWriteRules(t *testing.T) {
	as, clk := newSpace(t)
	add := func(name string, dt uint32, initial any, al byte) *ua.NodeID {
		t.Helper()
		v, err := as.AddVariable(ua.NewStringNodeID(1, name), name, "", i(id.ObjectsFolder), i(dt), initial, al)
		if err != nil {
			t.Fatal(err)
		}
		return v.NodeID()
	}
	dbl := add("Double", id.Double, 0.0, rw)
	ro := add("ReadOnly", id.Double, 0.0, byte(ua.AccessLevelTypeCurrentRead))
	userRO := add("UserReadOnly", id.Double, 0.0, rw)
	if err := as.SetAccessLevel(userRO, rw, byte(ua.AccessLevelTypeCurrentRead)); err != nil {
		t.Fatal(err)
	}
	arr := add("Array", id.Int32, []int32{1, 2}, rw)
	enum := add("Enum", id.RedundancySupport, int32(0), rw)
	num := add("Number", id.Number, 0.0, rw)
	anyv := add("Any", id.BaseDataType, 0.0, rw)
	utc := add("UtcTime", id.UtcTime, t0, rw)
	stat := add("StatusWritable", id.Double, 0.0, rw|byte(ua.AccessLevelTypeStatusWrite|ua.AccessLevelTypeTimestampWrite))

	withStatus := writeValue(stat, 1.0)
	withStatus.Value.EncodingMask |= ua.DataValueStatusCode | ua.DataValueSourceTimestamp
	withStatus.Value.Status = ua.StatusUncertain
	withStatus.Value.SourceTimestamp = t0.Add(-time.Hour)
	statusOnPlain := writeValue(dbl, 1.0)
	statusOnPlain.Value.EncodingMask |= ua.DataValueStatusCode
	statusOnPlain.Value.Status = ua.StatusBad
	tsOnPlain := writeValue(dbl, 1.0)
	tsOnPlain.Value.EncodingMask |= ua.DataValueSourceTimestamp
	tsOnPlain.Value.SourceTimestamp = t0
	goodStatusOnPlain := writeValue(dbl, 4.0)
	goodStatusOnPlain.Value.EncodingMask |= ua.DataValueStatusCode
	ranged := writeValue(arr, []int32{9})
	ranged.IndexRange = "0"
	displayName := &ua.WriteValue{NodeID: dbl, AttributeID: ua.AttributeIDDisplayName, Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(ua.NewLocalizedText("x"))}}
	noValue := &ua.WriteValue{NodeID: dbl, AttributeID: ua.AttributeIDValue, Value: &ua.DataValue{}}

	for _, c := range []struct {
		name string
		wv   *ua.WriteValue
		st   ua.StatusCode
	}{
		{"double", writeValue(dbl, 3.5), ua.StatusOK},
		{"int32 into double", writeValue(dbl, int32(3)), ua.StatusBadTypeMismatch},
		{"string into double", writeValue(dbl, "3.5"), ua.StatusBadTypeMismatch},
		{"array into scalar", writeValue(dbl, []float64{1}), ua.StatusBadTypeMismatch},
		{"no value", noValue, ua.StatusBadTypeMismatch},
		{"array", writeValue(arr, []int32{5, 6, 7}), ua.StatusOK},
		{"scalar into array", writeValue(arr, int32(5)), ua.StatusBadTypeMismatch},
		{"index range", ranged, ua.StatusBadWriteNotSupported},
		{"enumeration takes Int32", writeValue(enum, int32(2)), ua.StatusOK},
		{"enumeration refuses UInt32", writeValue(enum, uint32(2)), ua.StatusBadTypeMismatch},
		{"Number takes Int16", writeValue(num, int16(2)), ua.StatusOK},
		{"Number refuses String", writeValue(num, "2"), ua.StatusBadTypeMismatch},
		{"BaseDataType takes String", writeValue(anyv, "2"), ua.StatusOK},
		{"UtcTime (subtype of DateTime) takes DateTime", writeValue(utc, t0.Add(time.Second)), ua.StatusOK},
		{"UtcTime refuses Int64", writeValue(utc, int64(1)), ua.StatusBadTypeMismatch},
		{"read-only", writeValue(ro, 1.0), ua.StatusBadNotWritable},
		{"user read-only", writeValue(userRO, 1.0), ua.StatusBadNotWritable},
		{"status without StatusWrite", statusOnPlain, ua.StatusBadWriteNotSupported},
		{"timestamp without TimestampWrite", tsOnPlain, ua.StatusBadWriteNotSupported},
		{"Good status needs no StatusWrite", goodStatusOnPlain, ua.StatusOK},
		{"status and timestamp with the rights", withStatus, ua.StatusOK},
		{"DisplayName attribute", displayName, ua.StatusBadNotWritable},
		{"attribute id 99", &ua.WriteValue{NodeID: dbl, AttributeID: 99, Value: writeValue(dbl, 1.0).Value}, ua.StatusBadAttributeIDInvalid},
		{"Value of an object", writeValue(i(id.Server), 1.0), ua.StatusBadAttributeIDInvalid},
		{"Value of a variable type", writeValue(i(id.BaseDataVariableType), 1.0), ua.StatusBadNotWritable},
		{"unknown node", writeValue(ua.NewStringNodeID(1, "nope"), 1.0), ua.StatusBadNodeIDUnknown},
		{"ServiceLevel (namespace 0, CurrentRead only)", writeValue(i(id.Server_ServiceLevel), byte(0)), ua.StatusBadNotWritable},
		{"ServerArray (namespace 0)", writeValue(i(id.Server_ServerArray), []string{"urn:x"}), ua.StatusBadNotWritable},
		{"namespace 0 EnabledFlag (AccessLevel 3 in the nodeset)", writeValue(i(id.Server_ServerDiagnostics_EnabledFlag), true), ua.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := read(as, c.wv.NodeID, ua.AttributeIDValue)
			clk.Advance(time.Second)
			st := as.Write(c.wv)
			if st != c.st {
				t.Fatalf("Write = %v, want %v", st, c.st)
			}
			after := read(as, c.wv.NodeID, ua.AttributeIDValue)
			if st != ua.StatusOK {
				if after.Status != before.Status || (before.Value != nil && after.Value.Value() != nil &&
					!before.SourceTimestamp.Equal(after.SourceTimestamp)) {
					t.Errorf("a refused write changed the value: %+v -> %+v", before, after)
				}
				return
			}
			if got := after.Value.Type(); got != c.wv.Value.Value.Type() {
				t.Errorf("stored type %v, want %v", got, c.wv.Value.Value.Type())
			}
			if !after.ServerTimestamp.Equal(clk.Now()) {
				t.Errorf("ServerTimestamp %v, want the write time %v", after.ServerTimestamp, clk.Now())
			}
		})
	}
	got := read(as, stat, ua.AttributeIDValue)
	if got.Status != ua.StatusUncertain || !got.SourceTimestamp.Equal(t0.Add(-time.Hour)) {
		t.Errorf("written status/timestamp not stored: %v %v", got.Status, got.SourceTimestamp)
	}
	if got := mustRead(t, as, dbl, ua.AttributeIDValue); got != 4.0 {
		t.Errorf("double = %v after the writes, want 4", got)
	}
}

func TestWriteHooks(t *testing.T) {
	as, _ := newSpace(t)
	v, err := as.AddVariable(ua.NewStringNodeID(1, "Setpoint"), "Setpoint", "", i(id.ObjectsFolder), i(id.Double), 1.0, rw)
	if err != nil {
		t.Fatal(err)
	}
	other, err := as.AddVariable(ua.NewStringNodeID(1, "Other"), "Other", "", i(id.ObjectsFolder), i(id.Double), 1.0, rw)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	var globalResult, nodeResult = ua.StatusOK, ua.StatusOK
	as.SetWriteHook(func(nid *ua.NodeID, dv *ua.DataValue) ua.StatusCode {
		calls = append(calls, "global "+nid.String())
		// A hook may read the address space: no lock is held.
		if rd := read(as, nid, ua.AttributeIDValue); rd.Status != ua.StatusOK {
			t.Errorf("read inside the hook: %v", rd.Status)
		}
		return globalResult
	})
	v.SetWriteHook(func(nid *ua.NodeID, dv *ua.DataValue) ua.StatusCode {
		calls = append(calls, "node")
		if dv.Value.Value() != 2.0 {
			t.Errorf("node hook sees %v, want the written 2", dv.Value.Value())
		}
		return nodeResult
	})
	for _, c := range []struct {
		name          string
		global, local ua.StatusCode
		st            ua.StatusCode
		stored        bool
		calls         []string
	}{
		{"both accept", ua.StatusOK, ua.StatusOK, ua.StatusOK, true, []string{"global ns=1;s=Setpoint", "node"}},
		{"global veto skips the node hook", ua.StatusBadUserAccessDenied, ua.StatusOK, ua.StatusBadUserAccessDenied, false, []string{"global ns=1;s=Setpoint"}},
		{"node veto", ua.StatusOK, ua.StatusBadOutOfRange, ua.StatusBadOutOfRange, false, []string{"global ns=1;s=Setpoint", "node"}},
		{"handled by the hook: Good, not stored", ua.StatusOK, addrspace.WriteHandled, ua.StatusOK, false, []string{"global ns=1;s=Setpoint", "node"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := v.Set(1.0, ua.StatusOK, time.Time{}); err != nil {
				t.Fatal(err)
			}
			calls, globalResult, nodeResult = nil, c.global, c.local
			if st := as.Write(writeValue(v.NodeID(), 2.0)); st != c.st {
				t.Fatalf("Write = %v, want %v", st, c.st)
			}
			if got := v.Value().Value.Value(); (got == 2.0) != c.stored {
				t.Errorf("value %v, stored want %v", got, c.stored)
			}
			if len(calls) != len(c.calls) || (len(calls) > 0 && calls[0] != c.calls[0]) || calls[len(calls)-1] != c.calls[len(c.calls)-1] {
				t.Errorf("hook calls %q, want %q", calls, c.calls)
			}
		})
	}
	// The node hook is per node; the global hook sees every node.
	calls, globalResult = nil, ua.StatusOK
	if st := as.Write(writeValue(other.NodeID(), 2.0)); st != ua.StatusOK || len(calls) != 1 {
		t.Errorf("other node: %v, calls %q", st, calls)
	}
	// Hooks run only after the access checks.
	calls = nil
	if st := as.Write(writeValue(i(id.Server_ServiceLevel), byte(1))); st != ua.StatusBadNotWritable || len(calls) != 0 {
		t.Errorf("ServiceLevel: %v, calls %q", st, calls)
	}
	// Removing hooks.
	as.SetWriteHook(nil)
	v.SetWriteHook(nil)
	calls = nil
	if st := as.Write(writeValue(v.NodeID(), 2.0)); st != ua.StatusOK || len(calls) != 0 {
		t.Errorf("after removing hooks: %v, calls %q", st, calls)
	}
}

// TestWriterHookNamesTheWriter: a write through WriteAs tells the
// variable's writer hook the session and request; one through Write tells
// it nil; its result decides as a write hook's does.
func TestWriterHookNamesTheWriter(t *testing.T) {
	as, _ := newSpace(t)
	v, err := as.AddVariable(ua.NewStringNodeID(1, "W"), "W", "", i(id.ObjectsFolder), i(id.Double), 0.0, rw)
	if err != nil {
		t.Fatal(err)
	}
	var got []*uaserver.Writer
	v.SetWriterHook(func(w *uaserver.Writer, _ *ua.NodeID, _ *ua.DataValue) ua.StatusCode {
		got = append(got, w)
		if w == nil {
			return ua.StatusBadInvalidState
		}
		return addrspace.WriteHandled
	})
	who := uaserver.Writer{Session: uaserver.SessionInfo{UserID: "op", Role: "Operator"}, Handle: 17, Index: 2}
	if st := as.WriteAs(who, writeValue(v.NodeID(), 1.0)); st != ua.StatusOK {
		t.Fatalf("WriteAs: %v, want Good (handled)", st)
	}
	if st := as.Write(writeValue(v.NodeID(), 2.0)); st != ua.StatusBadInvalidState {
		t.Fatalf("Write: %v, want the hook's BadInvalidState", st)
	}
	if len(got) != 2 || got[0] == nil || got[0].Handle != 17 || got[0].Index != 2 || got[0].Session.Role != "Operator" || got[1] != nil {
		t.Fatalf("writers seen %+v, want the session's then nil", got)
	}
	if dv := v.Value(); dv.Value.Value() != 0.0 {
		t.Fatalf("stored %v; a handled or refused write stores nothing", dv.Value.Value())
	}
}
