package uabin

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"pgregory.net/rapid"
)

// reference is what otopcua sent before this package: uasc's chunk body,
// the type id followed by ua.Encode of the response. A panic is reported as
// an error so that the fast path can be compared on bad input too.
func reference(resp ua.Response) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	tid, err := ua.NewFourByteExpandedNodeID(0, ua.ServiceTypeID(resp)).Encode()
	if err != nil {
		return nil, err
	}
	body, err := ua.Encode(resp)
	if err != nil {
		return nil, err
	}
	return append(tid, body...), nil
}

// fast runs AppendResponse behind a prefix (it must append, not overwrite)
// and reports a panic as an error.
func fast(resp ua.Response) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	prefix := []byte("prefix")
	out, err := AppendResponse(append([]byte(nil), prefix...), ua.ServiceTypeID(resp), resp)
	if !bytes.HasPrefix(out, prefix) {
		return nil, fmt.Errorf("AppendResponse clobbered the bytes before it: %q", out[:min(len(out), len(prefix))])
	}
	return out[len(prefix):], err
}

// checkSame fails t unless the fast path writes exactly the reference bytes
// (or both fail).
func checkSame(t interface {
	Helper()
	Fatalf(string, ...any)
}, resp ua.Response) {
	t.Helper()
	want, werr := reference(resp)
	got, gerr := fast(resp)
	switch {
	case werr != nil && gerr != nil:
		return
	case werr != nil || gerr != nil:
		t.Fatalf("reference error %v, fast path error %v", werr, gerr)
	case !bytes.Equal(got, want):
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("encodings differ at byte %d of %d (fast) / %d (ua.Encode):\nfast %x\nwant %x",
			i, len(got), len(want), got[i:min(len(got), i+32)], want[i:min(len(want), i+32)])
	}
}

// Generators.

var genTime = rapid.Custom(func(t *rapid.T) time.Time {
	switch rapid.IntRange(0, 5).Draw(t, "timeKind") {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, rapid.Int64().Draw(t, "unixNano")) // 1678–2262
	case 2:
		return time.Date(1600, 12, 31, 23, 59, 59, 0, time.UTC) // before the OPC UA epoch
	case 3:
		return time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)
	case 4:
		loc := time.FixedZone("x", rapid.IntRange(-12, 14).Draw(t, "zone")*3600)
		return time.Unix(rapid.Int64Range(0, 1<<33).Draw(t, "sec"), rapid.Int64Range(0, 999_999_999).Draw(t, "ns")).In(loc)
	}
	return time.Now()
})

// genStatus favours the codes a server sends, with info bits (overflow,
// limits, semantics changed) and sub-codes.
var genStatus = rapid.Custom(func(t *rapid.T) ua.StatusCode {
	switch rapid.IntRange(0, 3).Draw(t, "statusKind") {
	case 0:
		return ua.StatusOK
	case 1:
		return rapid.SampledFrom([]ua.StatusCode{
			ua.StatusBadNodeIDUnknown, ua.StatusUncertainLastUsableValue, ua.StatusBadTimeout,
			ua.StatusGoodSubscriptionTransferred, ua.StatusBadSequenceNumberUnknown,
		}).Draw(t, "status")
	case 2:
		base := rapid.SampledFrom([]uint32{0, 0x40000000, 0x80000000}).Draw(t, "severity")
		info := rapid.SampledFrom([]uint32{0, 0x0400, 0x0480, 0x0500, 0x0700, 0x4000}).Draw(t, "info")
		return ua.StatusCode(base | info | uint32(rapid.IntRange(0, 0x3ff).Draw(t, "sub"))<<16)
	}
	return ua.StatusCode(rapid.Uint32().Draw(t, "rawStatus"))
})

var genFloat64 = rapid.OneOf(rapid.Float64(), rapid.SampledFrom([]float64{
	math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), math.Float64frombits(0x7ff0000000000001),
}))

var genFloat32 = rapid.OneOf(rapid.Float32(), rapid.SampledFrom([]float32{
	float32(math.NaN()), float32(math.Inf(1)), math.Float32frombits(0x7f800001),
}))

// genString includes the empty string (written as null) and non-ASCII.
var genString = rapid.OneOf(rapid.Just(""), rapid.String(), rapid.StringN(0, 3, 8))

var genBytes = rapid.OneOf(rapid.Just([]byte(nil)), rapid.Just([]byte{}), rapid.SliceOfN(rapid.Byte(), 1, 20))

// genNodeID covers every NodeId encoding: the three numeric forms, String
// (empty included), GUID and ByteString.
var genNodeID = rapid.Custom(func(t *rapid.T) *ua.NodeID {
	ns := uint16(rapid.IntRange(0, 3).Draw(t, "ns"))
	switch rapid.IntRange(0, 6).Draw(t, "nodeIdKind") {
	case 0:
		return ua.NewTwoByteNodeID(rapid.Byte().Draw(t, "b"))
	case 1:
		return ua.NewFourByteNodeID(uint8(ns), rapid.Uint16().Draw(t, "u16"))
	case 2:
		return ua.NewStringNodeID(ns, genString.Draw(t, "sid"))
	case 3:
		return ua.NewGUIDNodeID(ns, "72962B91-FA75-4AE6-8D28-B404DC7DAF63")
	case 4:
		return ua.NewByteStringNodeID(ns, rapid.SliceOfN(rapid.Byte(), 0, 6).Draw(t, "bsid"))
	}
	return ua.NewNumericNodeID(ns, rapid.Uint32().Draw(t, "nid"))
})

// genEventList is an EventNotificationList as the engine builds it (a few
// events of a few fields each), with the odd nil entry and nil field list.
var genEventList = rapid.Custom(func(t *rapid.T) *ua.EventNotificationList {
	if rapid.IntRange(0, 9).Draw(t, "nilEvents") == 0 {
		return &ua.EventNotificationList{}
	}
	evs := make([]*ua.EventFieldList, rapid.IntRange(0, 5).Draw(t, "events"))
	for i := range evs {
		switch rapid.IntRange(0, 9).Draw(t, "eventKind") {
		case 0:
			continue // a nil entry
		case 1:
			evs[i] = &ua.EventFieldList{ClientHandle: rapid.Uint32().Draw(t, "handle")}
			continue
		}
		fields := make([]*ua.Variant, rapid.IntRange(0, 8).Draw(t, "fields"))
		for j := range fields {
			fields[j] = genVariant.Draw(t, "field")
		}
		evs[i] = &ua.EventFieldList{ClientHandle: rapid.Uint32().Draw(t, "handle"), EventFields: fields}
	}
	return &ua.EventNotificationList{Events: evs}
})

// scalar returns a value of every builtin Variant type, the ones the fast
// path writes and the ones it leaves to Variant.Encode.
func scalar(t *rapid.T, label string) any {
	switch rapid.IntRange(0, 21).Draw(t, label) {
	case 0:
		return rapid.Bool().Draw(t, "bool")
	case 1:
		return rapid.Int8().Draw(t, "int8")
	case 2:
		return rapid.Byte().Draw(t, "byte")
	case 3:
		return rapid.Int16().Draw(t, "int16")
	case 4:
		return rapid.Uint16().Draw(t, "uint16")
	case 5:
		return rapid.Int32().Draw(t, "int32")
	case 6:
		return rapid.Uint32().Draw(t, "uint32")
	case 7:
		return rapid.Int64().Draw(t, "int64")
	case 8:
		return rapid.Uint64().Draw(t, "uint64")
	case 9:
		return genFloat32.Draw(t, "float32")
	case 10:
		return genFloat64.Draw(t, "float64")
	case 11:
		return genString.Draw(t, "string")
	case 12:
		return genTime.Draw(t, "time")
	case 13:
		return genBytes.Draw(t, "bytestring")
	case 14:
		return genStatus.Draw(t, "statuscode")
	case 15:
		return ua.XMLElement(genString.Draw(t, "xml"))
	case 16:
		return genNodeID.Draw(t, "nodeid")
	case 17:
		return &ua.LocalizedText{Locale: genString.Draw(t, "locale"), Text: genString.Draw(t, "text"),
			EncodingMask: rapid.SampledFrom([]uint8{0, 1, 2, 3, 0xfc}).Draw(t, "ltmask")}
	case 18:
		return &ua.QualifiedName{NamespaceIndex: rapid.Uint16().Draw(t, "qns"), Name: genString.Draw(t, "qname")}
	case 19:
		return ua.NewGUID("72962B91-FA75-4AE6-8D28-B404DC7DAF63")
	case 20:
		return ua.NewExpandedNodeID(ua.NewStringNodeID(1, "x"), "urn:x", 2)
	}
	return ua.NewExtensionObject(&ua.Range{Low: rapid.Float64().Draw(t, "low"), High: 1})
}

// array returns a one-dimensional array of a builtin type (sometimes nil
// or empty), a Byte array, or a two-dimensional array.
func array(t *rapid.T) any {
	n := rapid.IntRange(0, 6).Draw(t, "len")
	pick := rapid.IntRange(0, 17).Draw(t, "arrayKind")
	if rapid.IntRange(0, 9).Draw(t, "nilArray") == 0 {
		return []int32(nil)
	}
	fill := func(f func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	switch pick {
	case 0:
		return rapid.SliceOfN(rapid.Bool(), n, n).Draw(t, "bools")
	case 1:
		return rapid.SliceOfN(rapid.Int8(), n, n).Draw(t, "int8s")
	case 2:
		return ua.ByteArray(rapid.SliceOfN(rapid.Byte(), n, n).Draw(t, "bytes"))
	case 3:
		return rapid.SliceOfN(rapid.Int16(), n, n).Draw(t, "int16s")
	case 4:
		return rapid.SliceOfN(rapid.Uint16(), n, n).Draw(t, "uint16s")
	case 5:
		return rapid.SliceOfN(rapid.Int32(), n, n).Draw(t, "int32s")
	case 6:
		return rapid.SliceOfN(rapid.Uint32(), n, n).Draw(t, "uint32s")
	case 7:
		return rapid.SliceOfN(rapid.Int64(), n, n).Draw(t, "int64s")
	case 8:
		return rapid.SliceOfN(rapid.Uint64(), n, n).Draw(t, "uint64s")
	case 9:
		return rapid.SliceOfN(genFloat32, n, n).Draw(t, "float32s")
	case 10:
		return rapid.SliceOfN(genFloat64, n, n).Draw(t, "float64s")
	case 11:
		return rapid.SliceOfN(genString, n, n).Draw(t, "strings")
	case 12:
		return rapid.SliceOfN(genTime, n, n).Draw(t, "times")
	case 13:
		return rapid.SliceOfN(genStatus, n, n).Draw(t, "statuses")
	case 14:
		// A ByteString array (elements of one length: gopcua's rule for
		// nested slices); gopcua writes no elements for it.
		return rapid.SliceOfN(rapid.SliceOfN(rapid.Byte(), 2, 2), n, n).Draw(t, "bytestrings")
	case 15:
		texts := fill(func(int) any { return ua.NewLocalizedText(genString.Draw(t, "lt")) })
		out := make([]*ua.LocalizedText, n)
		for i, v := range texts {
			out[i] = v.(*ua.LocalizedText)
		}
		return out
	case 16:
		return [][]int32{{1, 2, 3}, {4, 5, 6}}
	}
	return [][]float64{{rapid.Float64().Draw(t, "m")}, {2}}
}

var genVariant = rapid.Custom(func(t *rapid.T) *ua.Variant {
	var v any
	switch rapid.IntRange(0, 5).Draw(t, "variantKind") {
	case 0:
		v = nil // the null Variant
	case 1:
		v = array(t)
	default:
		v = scalar(t, "scalar")
	}
	return ua.MustVariant(v)
})

// genDataValue builds values as the address space and the engine do
// (UpdateMask), or with a random mask over a non-nil Variant.
var genDataValue = rapid.Custom(func(t *rapid.T) *ua.DataValue {
	dv := &ua.DataValue{
		Status:          genStatus.Draw(t, "dvStatus"),
		SourceTimestamp: genTime.Draw(t, "src"),
		ServerTimestamp: genTime.Draw(t, "srv"),
	}
	if rapid.IntRange(0, 9).Draw(t, "noValue") > 0 {
		dv.Value = genVariant.Draw(t, "value")
	}
	if rapid.Bool().Draw(t, "picos") {
		dv.SourcePicoseconds = rapid.Uint16().Draw(t, "srcPico")
		dv.ServerPicoseconds = rapid.Uint16().Draw(t, "srvPico")
	}
	dv.UpdateMask()
	if dv.Value != nil && rapid.IntRange(0, 4).Draw(t, "rawMask") == 0 {
		dv.EncodingMask = rapid.Byte().Draw(t, "mask")
		if dv.EncodingMask&ua.DataValueValue == 0 && rapid.Bool().Draw(t, "forceValue") {
			dv.EncodingMask |= ua.DataValueValue
		}
	}
	return dv
})

var genDiagnosticInfo = rapid.Custom(func(t *rapid.T) *ua.DiagnosticInfo {
	if rapid.IntRange(0, 3).Draw(t, "diagEmpty") > 0 {
		return &ua.DiagnosticInfo{}
	}
	d := &ua.DiagnosticInfo{
		SymbolicID:      rapid.Int32().Draw(t, "sym"),
		NamespaceURI:    rapid.Int32().Draw(t, "nsu"),
		Locale:          rapid.Int32().Draw(t, "loc"),
		LocalizedText:   rapid.Int32().Draw(t, "lt"),
		AdditionalInfo:  genString.Draw(t, "info"),
		InnerStatusCode: genStatus.Draw(t, "inner"),
	}
	if rapid.Bool().Draw(t, "nested") {
		d.InnerDiagnosticInfo = &ua.DiagnosticInfo{SymbolicID: 7}
		d.InnerDiagnosticInfo.UpdateMask()
	}
	d.UpdateMask()
	return d
})

// genDiagnosticInfos is nil, empty, or a few entries (mostly empty ones, as
// the engine sends).
var genDiagnosticInfos = rapid.OneOf(
	rapid.Just([]*ua.DiagnosticInfo(nil)),
	rapid.Just([]*ua.DiagnosticInfo{}),
	rapid.SliceOfN(genDiagnosticInfo, 1, 3),
)

var genNotificationData = rapid.Custom(func(t *rapid.T) *ua.ExtensionObject {
	switch rapid.IntRange(0, 9).Draw(t, "notifKind") {
	case 0:
		return ua.NewExtensionObject(&ua.StatusChangeNotification{
			Status: genStatus.Draw(t, "scStatus"), DiagnosticInfo: genDiagnosticInfo.Draw(t, "scDiag"),
		})
	case 1, 4:
		return ua.NewExtensionObject(genEventList.Draw(t, "eventList"))
	case 2:
		return nil
	case 3:
		return ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: nil, DiagnosticInfos: nil})
	}
	n := rapid.IntRange(0, 40).Draw(t, "items")
	items := make([]*ua.MonitoredItemNotification, n)
	for i := range items {
		items[i] = &ua.MonitoredItemNotification{ClientHandle: rapid.Uint32().Draw(t, "handle"), Value: genDataValue.Draw(t, "dv")}
	}
	return ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: items, DiagnosticInfos: genDiagnosticInfos.Draw(t, "dcDiags")})
})

var genHeader = rapid.Custom(func(t *rapid.T) *ua.ResponseHeader {
	h := &ua.ResponseHeader{
		Timestamp:          genTime.Draw(t, "ts"),
		RequestHandle:      rapid.Uint32().Draw(t, "handle"),
		ServiceResult:      genStatus.Draw(t, "result"),
		ServiceDiagnostics: genDiagnosticInfo.Draw(t, "svcDiag"),
		AdditionalHeader:   ua.NewExtensionObject(nil),
	}
	switch rapid.IntRange(0, 3).Draw(t, "stringTable") {
	case 0:
		h.StringTable = []string{}
	case 1:
		h.StringTable = rapid.SliceOfN(genString, 1, 3).Draw(t, "strings")
	case 2:
		h.AdditionalHeader = nil
	}
	return h
})

var genPublishResponse = rapid.Custom(func(t *rapid.T) *ua.PublishResponse {
	r := &ua.PublishResponse{
		ResponseHeader:           genHeader.Draw(t, "header"),
		SubscriptionID:           rapid.Uint32().Draw(t, "sub"),
		AvailableSequenceNumbers: rapid.OneOf(rapid.Just([]uint32(nil)), rapid.SliceOfN(rapid.Uint32(), 0, 5)).Draw(t, "avail"),
		MoreNotifications:        rapid.Bool().Draw(t, "more"),
		Results:                  rapid.OneOf(rapid.Just([]ua.StatusCode(nil)), rapid.SliceOfN(genStatus, 0, 4)).Draw(t, "results"),
		DiagnosticInfos:          genDiagnosticInfos.Draw(t, "diags"),
	}
	if rapid.IntRange(0, 19).Draw(t, "noMessage") > 0 {
		r.NotificationMessage = &ua.NotificationMessage{
			SequenceNumber:   rapid.Uint32().Draw(t, "seq"),
			PublishTime:      genTime.Draw(t, "publishTime"),
			NotificationData: rapid.OneOf(rapid.Just([]*ua.ExtensionObject{}), rapid.SliceOfN(genNotificationData, 1, 3)).Draw(t, "data"),
		}
	}
	return r
})

// publishProperty: for any PublishResponse (data changes, status changes,
// keep-alives, events), AppendResponse writes what ua.Encode writes.
func publishProperty(t *rapid.T) {
	checkSame(t, genPublishResponse.Draw(t, "response"))
}

func TestPublishResponseMatchesUAEncode(t *testing.T) {
	rapid.Check(t, publishProperty)
}

// genHistoryData is a raw read's result body: DataValues (nil, empty or
// some), or another ExtensionObject (an event read's, or none).
var genHistoryData = rapid.Custom(func(t *rapid.T) *ua.ExtensionObject {
	switch rapid.IntRange(0, 5).Draw(t, "historyKind") {
	case 0:
		return nil
	case 1:
		return ua.NewExtensionObject(&ua.HistoryEvent{Events: []*ua.HistoryEventFieldList{{EventFields: []*ua.Variant{genVariant.Draw(t, "field")}}}})
	case 2:
		return ua.NewExtensionObject(&ua.HistoryData{})
	}
	return ua.NewExtensionObject(&ua.HistoryData{DataValues: rapid.SliceOfN(genDataValue, 0, 20).Draw(t, "values")})
})

// TestHistoryReadResponseMatchesUAEncode: for any HistoryReadResponse
// (values, events, statuses, continuation points), AppendResponse writes
// what ua.Encode writes.
func TestHistoryReadResponseMatchesUAEncode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &ua.HistoryReadResponse{ResponseHeader: genHeader.Draw(t, "header"), DiagnosticInfos: genDiagnosticInfos.Draw(t, "diags")}
		if rapid.IntRange(0, 9).Draw(t, "nilResults") > 0 {
			r.Results = []*ua.HistoryReadResult{}
			for range rapid.IntRange(0, 4).Draw(t, "results") {
				r.Results = append(r.Results, &ua.HistoryReadResult{StatusCode: genStatus.Draw(t, "status"),
					ContinuationPoint: genBytes.Draw(t, "cp"), HistoryData: genHistoryData.Draw(t, "data")})
			}
		}
		checkSame(t, r)
	})
}

func TestServiceFaultMatchesUAEncode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkSame(t, &ua.ServiceFault{ResponseHeader: genHeader.Draw(t, "header")})
	})
}

// TestVariantMatchesEncode checks the Variant and DataValue writers on their
// own, where a difference is easiest to read.
func TestVariantMatchesEncode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dv := genDataValue.Draw(t, "dv")
		want, err := dv.Encode()
		if err != nil {
			t.Skip("DataValue.Encode refuses it")
		}
		got, err := AppendDataValue(nil, dv)
		if err != nil {
			t.Fatalf("AppendDataValue: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("DataValue %+v (variant %T):\nfast %x\nwant %x", dv, dv.Value.Value(), got, want)
		}
	})
}

// FuzzAppendResponse feeds fuzzer bytes to the same generator.
func FuzzAppendResponse(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		bytes.Repeat([]byte{0xff}, 64),
		bytes.Repeat([]byte{0x00, 0x01, 0x7f, 0x80}, 64),
		[]byte("otopcua publish response with data changes and a keep-alive"),
	} {
		f.Add(seed)
	}
	f.Fuzz(rapid.MakeFuzz(publishProperty))
}

// TestEdgeCases lists responses worth naming: keep-alive, status change,
// nil pointers gopcua skips or chokes on, and the values with special
// encodings.
func TestEdgeCases(t *testing.T) {
	now := time.Date(2025, 11, 29, 12, 0, 0, 123456789, time.UTC)
	hdr := func() *ua.ResponseHeader {
		return &ua.ResponseHeader{Timestamp: now, RequestHandle: 7, ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)}
	}
	dv := func(v any, status ua.StatusCode) *ua.DataValue {
		d := &ua.DataValue{Value: ua.MustVariant(v), Status: status, SourceTimestamp: now, ServerTimestamp: now}
		d.UpdateMask()
		return d
	}
	dataChange := func(vals ...*ua.DataValue) *ua.NotificationMessage {
		items := make([]*ua.MonitoredItemNotification, len(vals))
		for i, v := range vals {
			items[i] = &ua.MonitoredItemNotification{ClientHandle: uint32(i + 1), Value: v}
		}
		return &ua.NotificationMessage{SequenceNumber: 5, PublishTime: now, NotificationData: []*ua.ExtensionObject{
			ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: items, DiagnosticInfos: []*ua.DiagnosticInfo{}}),
		}}
	}
	cases := map[string]*ua.PublishResponse{
		"keep-alive": {ResponseHeader: hdr(), SubscriptionID: 1, AvailableSequenceNumbers: []uint32{},
			NotificationMessage: &ua.NotificationMessage{SequenceNumber: 9, PublishTime: now, NotificationData: []*ua.ExtensionObject{}}},
		"status change": {ResponseHeader: hdr(), SubscriptionID: 1, NotificationMessage: &ua.NotificationMessage{
			SequenceNumber: 3, PublishTime: now, NotificationData: []*ua.ExtensionObject{
				ua.NewExtensionObject(&ua.StatusChangeNotification{Status: ua.StatusBadTimeout, DiagnosticInfo: &ua.DiagnosticInfo{}}),
			}}},
		"int64 and double": {ResponseHeader: hdr(), NotificationMessage: dataChange(dv(int64(-5), 0), dv(2.5, 0))},
		"overflow bits":    {ResponseHeader: hdr(), NotificationMessage: dataChange(dv(int32(1), 0x0480), dv(int32(2), ua.StatusUncertainLastUsableValue|0x0480))},
		"nan and empty":    {ResponseHeader: hdr(), NotificationMessage: dataChange(dv(math.NaN(), 0), dv(float32(math.NaN()), 0), dv("", 0), dv([]string{"", "a"}, 0), dv([]byte{}, 0))},
		"null variant":     {ResponseHeader: hdr(), NotificationMessage: dataChange(dv(nil, ua.StatusBadNodeIDUnknown))},
		"no timestamps":    {ResponseHeader: hdr(), NotificationMessage: dataChange(&ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(true)})},
		"nil item":         {ResponseHeader: hdr(), NotificationMessage: &ua.NotificationMessage{NotificationData: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: []*ua.MonitoredItemNotification{nil}})}}},
		"nil header":       {SubscriptionID: 4},
		"events":           {ResponseHeader: hdr(), NotificationMessage: eventsAndData(now)},
		"empty event list": {ResponseHeader: hdr(), NotificationMessage: &ua.NotificationMessage{NotificationData: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.EventNotificationList{Events: []*ua.EventFieldList{}})}}},
		"empty string node id": {ResponseHeader: hdr(), NotificationMessage: &ua.NotificationMessage{NotificationData: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.EventNotificationList{Events: []*ua.EventFieldList{
			{ClientHandle: 1, EventFields: []*ua.Variant{ua.MustVariant(ua.NewStringNodeID(1, "")), ua.MustVariant(&ua.LocalizedText{})}}}})}}},
		// ua.Encode panics on a nil field; the fast path must fail too.
		"nil event field": {ResponseHeader: hdr(), NotificationMessage: &ua.NotificationMessage{NotificationData: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.EventNotificationList{Events: []*ua.EventFieldList{
			{ClientHandle: 1, EventFields: []*ua.Variant{nil}}}})}}},
		"nil everything": {},
		// ua.Encode panics on these; the fast path must not hide that.
		"nil value":            {ResponseHeader: hdr(), NotificationMessage: dataChange(&ua.DataValue{EncodingMask: ua.DataValueValue})},
		"nil service diag":     {ResponseHeader: &ua.ResponseHeader{AdditionalHeader: ua.NewExtensionObject(nil)}},
		"nil item DataValue":   {ResponseHeader: hdr(), NotificationMessage: dataChange(nil)},
		"nil diagnostic entry": {ResponseHeader: hdr(), DiagnosticInfos: []*ua.DiagnosticInfo{nil}},
	}
	for name, resp := range cases {
		t.Run(name, func(t *testing.T) { checkSame(t, resp) })
	}
}

// eventsAndData is a message as the engine builds it for a subscription
// with data and event items: a DataChangeNotification, then an
// EventNotificationList of two AuditWriteUpdateEventType events.
func eventsAndData(now time.Time) *ua.NotificationMessage {
	dv := &ua.DataValue{Value: ua.MustVariant(2.5), SourceTimestamp: now, ServerTimestamp: now}
	dv.UpdateMask()
	fields := func(user string) []*ua.Variant {
		return []*ua.Variant{
			ua.MustVariant([]byte("0123456789abcdef")),
			ua.MustVariant(ua.NewNumericNodeID(0, id.AuditWriteUpdateEventType)),
			ua.MustVariant(ua.NewStringNodeID(2, "press1/Setpoint")),
			ua.MustVariant("Attribute/Write"),
			ua.MustVariant(now),
			ua.MustVariant(ua.NewLocalizedText("not primary")),
			ua.MustVariant(uint16(500)),
			ua.MustVariant(false),
			ua.MustVariant(user),
			ua.MustVariant(uint32(13)),
			ua.MustVariant(int16(5)),
			ua.MustVariant(nil),
			ua.MustVariant(&ua.QualifiedName{NamespaceIndex: 2, Name: "q"}),
		}
	}
	return &ua.NotificationMessage{SequenceNumber: 8, PublishTime: now, NotificationData: []*ua.ExtensionObject{
		ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: []*ua.MonitoredItemNotification{{ClientHandle: 1, Value: dv}}}),
		ua.NewExtensionObject(&ua.EventNotificationList{Events: []*ua.EventFieldList{
			{ClientHandle: 2, EventFields: fields("operator")},
			{ClientHandle: 2, EventFields: fields("")},
		}}),
	}}
}

// TestDecodesBack checks the fast path's output with gopcua's decoder: a
// second, independent view of the bytes.
func TestDecodesBack(t *testing.T) {
	now := time.Now().UTC().Truncate(100 * time.Nanosecond)
	dv := &ua.DataValue{Value: ua.MustVariant(int64(42)), Status: 0x0480, SourceTimestamp: now, ServerTimestamp: now}
	dv.UpdateMask()
	resp := &ua.PublishResponse{
		ResponseHeader: &ua.ResponseHeader{Timestamp: now, RequestHandle: 3, ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)},
		SubscriptionID: 11,
		NotificationMessage: &ua.NotificationMessage{SequenceNumber: 12, PublishTime: now, NotificationData: []*ua.ExtensionObject{
			ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: []*ua.MonitoredItemNotification{{ClientHandle: 99, Value: dv}}, DiagnosticInfos: []*ua.DiagnosticInfo{}}),
		}},
		Results: []ua.StatusCode{ua.StatusOK},
	}
	b, err := AppendResponse(nil, id.PublishResponse_Encoding_DefaultBinary, resp)
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := ua.DecodeService(b)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(*ua.PublishResponse)
	dcn := got.NotificationMessage.NotificationData[0].Value.(*ua.DataChangeNotification)
	n := dcn.MonitoredItems[0]
	if got.SubscriptionID != 11 || got.NotificationMessage.SequenceNumber != 12 || n.ClientHandle != 99 ||
		n.Value.Value.Value() != int64(42) || n.Value.Status != 0x0480 || !n.Value.SourceTimestamp.Equal(now) {
		t.Fatalf("decoded %+v / %+v", got, n.Value)
	}

	resp.NotificationMessage = eventsAndData(now)
	if b, err = AppendResponse(nil, id.PublishResponse_Encoding_DefaultBinary, resp); err != nil {
		t.Fatal(err)
	}
	if _, v, err = ua.DecodeService(b); err != nil {
		t.Fatal(err)
	}
	data := v.(*ua.PublishResponse).NotificationMessage.NotificationData
	evl, ok := data[1].Value.(*ua.EventNotificationList)
	if len(data) != 2 || !ok || len(evl.Events) != 2 {
		t.Fatalf("decoded notification data %+v", data)
	}
	f := evl.Events[0].EventFields
	if evl.Events[0].ClientHandle != 2 || len(f) != 13 || f[2].Value().(*ua.NodeID).StringID() != "press1/Setpoint" ||
		f[5].Value().(*ua.LocalizedText).Text != "not primary" || f[6].Value() != uint16(500) || f[8].Value() != "operator" ||
		f[11].Value() != nil || f[12].Value().(*ua.QualifiedName).Name != "q" {
		t.Fatalf("decoded event fields %v", f)
	}
}
