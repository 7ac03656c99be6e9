package uaserver

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/otopcua/otopcua/opcua/uawire"
	"pgregory.net/rapid"
)

// validRequests are realistic requests with every kind of nested value
// the wire check must walk: ExtensionObjects, Variants (scalars, arrays,
// matrices, nested), DataValues, LocalizedTexts, all NodeId encodings.
func validRequests() []ua.Request {
	guid := ua.NewGUIDNodeID(2, "72962B91-FA75-4AE6-8D28-B404DC7DAF63")
	anyNode := []*ua.NodeID{
		ua.NewTwoByteNodeID(7), ua.NewFourByteNodeID(1, 300), ua.NewNumericNodeID(3, 70000),
		ua.NewStringNodeID(1, "Tank/Level"), guid, ua.NewByteStringNodeID(4, []byte{1, 2, 3}),
	}
	var rv []*ua.ReadValueID
	for _, n := range anyNode {
		rv = append(rv, &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, IndexRange: "1:2", DataEncoding: &ua.QualifiedName{NamespaceIndex: 0, Name: "Default Binary"}})
	}
	values := []any{
		true, int8(-1), byte(2), int16(-3), uint16(4), int32(-5), uint32(6), int64(-7), uint64(8),
		float32(1.5), 2.5, "text", time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), []byte{9, 9},
		ua.NewStringNodeID(1, "x"), ua.NewExpandedNodeID(ua.NewNumericNodeID(1, 5), "urn:ns", 2),
		ua.StatusBadNodeIDUnknown, &ua.QualifiedName{NamespaceIndex: 1, Name: "q"},
		ua.NewLocalizedTextWithLocale("Hallo", "de"),
		ua.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyID: "anonymous"}),
		&ua.DataValue{EncodingMask: ua.DataValueValue | ua.DataValueStatusCode | ua.DataValueSourceTimestamp, Value: ua.MustVariant(1.0), Status: ua.StatusOK, SourceTimestamp: time.Unix(1, 0)},
		ua.MustVariant(int32(3)),
		[]int32{1, 2, 3}, []string{"a", "", "c"}, [][]float64{{1, 2, 3}, {4, 5, 6}},
		[]*ua.Variant{ua.MustVariant("a"), ua.MustVariant([]uint16{1, 2})},
		[]*ua.LocalizedText{ua.NewLocalizedText("a")}, []*ua.ExtensionObject{ua.NewExtensionObject(nil)},
	}
	var writes []*ua.WriteValue
	for _, v := range values {
		writes = append(writes, &ua.WriteValue{NodeID: nodeTemp, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}})
	}
	filter := &ua.EventFilter{
		SelectClauses: []*ua.SimpleAttributeOperand{{TypeDefinitionID: ua.NewNumericNodeID(0, id.BaseEventType),
			BrowsePath: []*ua.QualifiedName{{Name: "Message"}}, AttributeID: ua.AttributeIDValue}},
		WhereClause: &ua.ContentFilter{Elements: []*ua.ContentFilterElement{{
			FilterOperator: ua.FilterOperatorGreaterThan,
			FilterOperands: []*ua.ExtensionObject{
				ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(uint16(500))}),
				ua.NewExtensionObject(&ua.ElementOperand{Index: 1}),
			},
		}}},
	}
	return []ua.Request{
		&ua.ReadRequest{MaxAge: 100, TimestampsToReturn: ua.TimestampsToReturnBoth, NodesToRead: rv},
		&ua.WriteRequest{NodesToWrite: writes},
		&ua.ActivateSessionRequest{ClientSignature: &ua.SignatureData{}, LocaleIDs: []string{"en", "de"},
			UserIdentityToken:  ua.NewExtensionObject(&ua.UserNameIdentityToken{PolicyID: "u", UserName: "op", Password: []byte("pw")}),
			UserTokenSignature: &ua.SignatureData{}},
		&ua.CreateMonitoredItemsRequest{SubscriptionID: 1, TimestampsToReturn: ua.TimestampsToReturnBoth,
			ItemsToCreate: []*ua.MonitoredItemCreateRequest{
				{ItemToMonitor: rv[3], MonitoringMode: ua.MonitoringModeReporting, RequestedParameters: &ua.MonitoringParameters{
					ClientHandle: 1, SamplingInterval: 100, QueueSize: 10, DiscardOldest: true,
					Filter: ua.NewExtensionObject(&ua.DataChangeFilter{Trigger: ua.DataChangeTriggerStatusValue, DeadbandType: 1, DeadbandValue: 0.5})}},
				{ItemToMonitor: &ua.ReadValueID{NodeID: ua.NewNumericNodeID(0, id.Server), AttributeID: ua.AttributeIDEventNotifier, DataEncoding: &ua.QualifiedName{}},
					MonitoringMode: ua.MonitoringModeReporting, RequestedParameters: &ua.MonitoringParameters{Filter: ua.NewExtensionObject(filter)}},
			}},
		&ua.CallRequest{MethodsToCall: []*ua.CallMethodRequest{{ObjectID: nodeObjects, MethodID: nodeTemp,
			InputArguments: []*ua.Variant{ua.MustVariant([]byte{1}), ua.MustVariant(ua.NewExtensionObject(&ua.Range{Low: 1, High: 2}))}}}},
		&ua.HistoryReadRequest{HistoryReadDetails: ua.NewExtensionObject(&ua.ReadRawModifiedDetails{StartTime: time.Unix(0, 0), EndTime: time.Unix(100, 0), NumValuesPerNode: 10}),
			TimestampsToReturn: ua.TimestampsToReturnSource,
			NodesToRead:        []*ua.HistoryReadValueID{{NodeID: nodeTemp, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: []byte{}}}},
		&ua.BrowseNextRequest{ContinuationPoints: [][]byte{{1, 2}, {}, nil}},
		&ua.PublishRequest{SubscriptionAcknowledgements: []*ua.SubscriptionAcknowledgement{{SubscriptionID: 1, SequenceNumber: 2}}},
		&ua.CreateSessionRequest{ClientDescription: &ua.ApplicationDescription{ApplicationName: ua.NewLocalizedText("c"), DiscoveryURLs: []string{"opc.tcp://c:1"}},
			ClientNonce: make([]byte, 32), RequestedSessionTimeout: 1000},
	}
}

func TestWireCheckAcceptsValidRequests(t *testing.T) {
	for _, req := range validRequests() {
		b := encodeRequest(t, req)
		if code := uawire.CheckService(b); code != ua.StatusOK {
			t.Errorf("%T: wire check %v", req, code)
			continue
		}
		got, code := decodeRequest(b)
		if code != ua.StatusOK || reflect.TypeOf(got) != reflect.TypeOf(req) {
			t.Errorf("%T: decoded %T, %v", req, got, code)
		}
	}
}

func TestWireCheckRejectsHostileLengths(t *testing.T) {
	le := binary.LittleEndian
	read := encodeRequest(t, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{}})
	withCount := func(n uint32) []byte { // the request ends with the NodesToRead count
		b := append([]byte(nil), read...)
		le.PutUint32(b[len(b)-4:], n)
		return b
	}
	variant := func(v ...byte) []byte { return writeOfVariant(t, v) }
	u32 := func(v uint32) []byte { return le.AppendUint32(nil, v) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	deepDiag := []byte{byte(ua.TypeIDDiagnosticInfo)}
	for range 200 {
		deepDiag = append(deepDiag, ua.DiagnosticInfoInnerDiagnosticInfo)
	}
	deepDiag = append(deepDiag, 0)

	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"array count 2^31-1", withCount(0x7fffffff)},
		{"array count above bytes", withCount(1000)},
		{"array count above int32", withCount(0x80000000)},
		{"variant array above gopcua limit", variant(cat([]byte{6 | 0x80}, u32(70000))...)},
		{"variant array -2", variant(cat([]byte{6 | 0x80}, u32(0xfffffffe))...)},
		{"variant array above bytes", variant(cat([]byte{6 | 0x80}, u32(5000))...)},
		{"variant dims negative", variant(cat([]byte{6 | 0x80 | 0x40}, u32(0), u32(0xffffffff))...)},
		{"variant dims count above bytes", variant(cat([]byte{6 | 0x80 | 0x40}, u32(0), u32(0x7fffffff))...)},
		{"variant dims zero", variant(cat([]byte{6 | 0x80 | 0x40}, u32(1), u32(5), u32(1), u32(0))...)},
		{"variant dims overflow to zero", variant(cat([]byte{6 | 0x80 | 0x40}, u32(0), u32(2), u32(1<<16), u32(1<<16))...)},
		{"variant dims mismatch", variant(cat([]byte{6 | 0x80 | 0x40}, u32(2), u32(1), u32(2), u32(1), u32(3))...)},
		{"variant type 26", variant(26)},
		{"diagnostic info 200 deep", variant(deepDiag...)},
		{"string longer than message", variant(cat([]byte{12}, u32(1<<30))...)},
		{"invalid NodeId encoding", cat(typeIDPrefix(id.ReadRequest_Encoding_DefaultBinary), []byte{0x0f})},
		{"truncated", read[:len(read)-2]},
	} {
		if code := uawire.CheckService(tc.b); code != ua.StatusBadDecodingError {
			t.Errorf("%s: wire check %v, want BadDecodingError", tc.name, code)
		}
	}
	// The same constructions with sane values pass: the cases above fail
	// for the reason they name.
	for _, b := range [][]byte{
		withCount(0),
		variant(6, 1, 0, 0, 0),
		variant(cat([]byte{6 | 0x80}, u32(2), u32(1), u32(2))...),
		variant(cat([]byte{6 | 0x80 | 0x40}, u32(2), u32(1), u32(2), u32(2), u32(1), u32(2))...),
		variant(cat([]byte{12}, u32(2), []byte("ok"))...),
		variant(append(deepDiag[:40:40], 0)...),
	} {
		if code := uawire.CheckService(b); code != ua.StatusOK {
			t.Errorf("sane control %x: wire check %v", b[len(b)-min(len(b), 16):], code)
		}
	}
	if code := uawire.CheckService(typeIDPrefix(9999)); code != ua.StatusBadServiceUnsupported {
		t.Errorf("unknown service: %v", code)
	}
}

// TestWireCheckAcceptsRandomVariants: any Variant gopcua can encode passes
// the wire check and decodes.
func TestWireCheckAcceptsRandomVariants(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		v := genVariant(rt, 0)
		b := encodeRequest(t, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: nodeTemp, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: v}}}})
		if code := uawire.CheckService(b); code != ua.StatusOK {
			rt.Fatalf("wire check %v for %#v", code, v.Value())
		}
		if _, code := decodeRequest(b); code != ua.StatusOK {
			rt.Fatalf("decode %v for %#v", code, v.Value())
		}
	})
}

func genVariant(t *rapid.T, depth int) *ua.Variant {
	scalars := []func() any{
		func() any { return rapid.Bool().Draw(t, "bool") },
		func() any { return rapid.Int8().Draw(t, "i8") },
		func() any { return rapid.Int32().Draw(t, "i32") },
		func() any { return rapid.Uint64().Draw(t, "u64") },
		func() any { return rapid.Float64().Draw(t, "f64") },
		func() any { return rapid.String().Draw(t, "s") },
		func() any { return rapid.SliceOf(rapid.Byte()).Draw(t, "bs") },
		func() any { return ua.NewStringNodeID(rapid.Uint16().Draw(t, "ns"), rapid.String().Draw(t, "id")) },
		func() any { return ua.NewLocalizedText(rapid.String().Draw(t, "lt")) },
		func() any { return &ua.QualifiedName{NamespaceIndex: 1, Name: rapid.String().Draw(t, "qn")} },
	}
	arrays := []func() any{
		func() any { return rapid.SliceOfN(rapid.Int32(), 0, 20).Draw(t, "ai32") },
		func() any { return rapid.SliceOfN(rapid.String(), 0, 10).Draw(t, "as") },
		func() any {
			rows, cols := rapid.IntRange(1, 4).Draw(t, "rows"), rapid.IntRange(1, 4).Draw(t, "cols")
			m := make([][]uint16, rows)
			for i := range m {
				m[i] = rapid.SliceOfN(rapid.Uint16(), cols, cols).Draw(t, "row")
			}
			return m
		},
	}
	switch k := rapid.IntRange(0, 3).Draw(t, "kind"); {
	case k == 3 && depth < 4:
		n := rapid.IntRange(0, 3).Draw(t, "n")
		vs := make([]*ua.Variant, n)
		for i := range vs {
			vs[i] = genVariant(t, depth+1)
		}
		return ua.MustVariant(vs)
	case k == 2:
		return ua.MustVariant(rapid.SampledFrom(arrays).Draw(t, "array")())
	default:
		return ua.MustVariant(rapid.SampledFrom(scalars).Draw(t, "scalar")())
	}
}

// FuzzDecodeRequest: whatever the bytes, checking and decoding a request
// neither panics nor exhausts memory.
func FuzzDecodeRequest(f *testing.F) {
	for _, req := range validRequests() {
		b, err := ua.Encode(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(typeIDPrefix(ua.ServiceTypeID(req)), b...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, code := decodeRequest(b)
		if (req == nil) != (code != ua.StatusOK) {
			t.Fatalf("request %T with status %v", req, code)
		}
	})
}
