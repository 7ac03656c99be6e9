package uabin

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"pgregory.net/rapid"
)

// decodeBoth decodes the service message b (type id and body) with
// DecodePublishNotifications and with ua.DecodeService. It fails t when
// the fast path accepted what ua.DecodeService refuses or decoded it
// differently; it reports whether the fast path handled b.
func decodeBoth(t interface {
	Helper()
	Fatalf(string, ...any)
}, b []byte) bool {
	t.Helper()
	sub, msg, err := DecodePublishNotifications(b)
	if err != nil {
		if !errors.Is(err, ErrUnhandled) {
			t.Fatalf("DecodePublishNotifications: %v, want ErrUnhandled", err)
		}
		return false
	}
	_, v, err := ua.DecodeService(b)
	if err != nil {
		t.Fatalf("the fast path decoded what ua.DecodeService refuses (%v): %x", err, b)
	}
	want := v.(*ua.PublishResponse)
	if sub != want.SubscriptionID || !reflect.DeepEqual(msg, want.NotificationMessage) && firstDiff(sub, sub, msg, want.NotificationMessage) != "" {
		t.Fatalf("fast path and ua.DecodeService differ: %s\nof %x", firstDiff(sub, want.SubscriptionID, msg, want.NotificationMessage), b)
	}
	return true
}

// firstDiff names the first field in which two decodings differ.
func firstDiff(sub, wantSub uint32, got, want *ua.NotificationMessage) string {
	switch {
	case sub != wantSub:
		return fmt.Sprintf("SubscriptionID %d, want %d", sub, wantSub)
	case got == nil || want == nil:
		return fmt.Sprintf("message %v, want %v", got, want)
	case got.SequenceNumber != want.SequenceNumber || !reflect.DeepEqual(got.PublishTime, want.PublishTime):
		return fmt.Sprintf("header %d %v, want %d %v", got.SequenceNumber, got.PublishTime, want.SequenceNumber, want.PublishTime)
	case len(got.NotificationData) != len(want.NotificationData) || (got.NotificationData == nil) != (want.NotificationData == nil):
		return fmt.Sprintf("%d notifications, want %d", len(got.NotificationData), len(want.NotificationData))
	}
	for i, g := range got.NotificationData {
		w := want.NotificationData[i]
		if !reflect.DeepEqual(g.TypeID, w.TypeID) || g.EncodingMask != w.EncodingMask {
			return fmt.Sprintf("notification %d: type %#v mask %d, want %#v mask %d", i, g.TypeID.NodeID, g.EncodingMask, w.TypeID.NodeID, w.EncodingMask)
		}
		gd, wd := g.Value.(*ua.DataChangeNotification), w.Value.(*ua.DataChangeNotification)
		if !reflect.DeepEqual(gd.DiagnosticInfos, wd.DiagnosticInfos) || len(gd.MonitoredItems) != len(wd.MonitoredItems) || (gd.MonitoredItems == nil) != (wd.MonitoredItems == nil) {
			return fmt.Sprintf("notification %d: %d items diagnostics %#v, want %d items %#v", i, len(gd.MonitoredItems), gd.DiagnosticInfos, len(wd.MonitoredItems), wd.DiagnosticInfos)
		}
		for j, gi := range gd.MonitoredItems {
			if wi := wd.MonitoredItems[j]; !sameItem(gi, wi) {
				return fmt.Sprintf("notification %d item %d: %#v value %#v, want %#v value %#v", i, j, gi.Value, gi.Value.Value, wi.Value, wi.Value.Value)
			}
		}
	}
	return ""
}

// sameItem is reflect.DeepEqual, except that a NaN value equals a NaN of
// the same type (DeepEqual never finds NaN equal to itself).
func sameItem(a, b *ua.MonitoredItemNotification) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	if a.Value == nil || b.Value == nil || a.Value.Value == nil || b.Value.Value == nil ||
		a.Value.Value.EncodingMask() != b.Value.Value.EncodingMask() || !isNaN(a.Value.Value.Value()) || !isNaN(b.Value.Value.Value()) {
		return false
	}
	ac, bc := *a.Value, *b.Value
	ac.Value, bc.Value = nil, nil
	return a.ClientHandle == b.ClientHandle && reflect.DeepEqual(ac, bc)
}

func isNaN(v any) bool {
	switch x := v.(type) {
	case float32:
		return x != x
	case float64:
		return x != x
	}
	return false
}

// mirrorShaped is a PublishResponse as a mirror's Sent record carries it:
// an empty header, no results, data changes of scalar values of the
// built-in types a tag holds.
var mirrorShaped = rapid.Custom(func(t *rapid.T) *ua.PublishResponse {
	items := make([]*ua.MonitoredItemNotification, rapid.IntRange(0, 20).Draw(t, "items"))
	for i := range items {
		dv := &ua.DataValue{Status: genStatus.Draw(t, "status"), SourceTimestamp: genTime.Draw(t, "src"), ServerTimestamp: genTime.Draw(t, "srv")}
		if rapid.IntRange(0, 9).Draw(t, "noValue") > 0 {
			var v any
			for v == nil {
				switch x := scalar(t, "scalar").(type) {
				case *ua.NodeID, *ua.LocalizedText, *ua.QualifiedName, *ua.GUID, *ua.ExpandedNodeID, *ua.ExtensionObject:
				default:
					v = x
				}
			}
			dv.Value = ua.MustVariant(v)
		}
		if rapid.Bool().Draw(t, "picos") {
			dv.SourcePicoseconds, dv.ServerPicoseconds = rapid.Uint16().Draw(t, "srcPico"), rapid.Uint16().Draw(t, "srvPico")
		}
		dv.UpdateMask()
		items[i] = &ua.MonitoredItemNotification{ClientHandle: rapid.Uint32().Draw(t, "handle"), Value: dv}
	}
	data := []*ua.ExtensionObject{ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: items, DiagnosticInfos: []*ua.DiagnosticInfo{}})}
	return &ua.PublishResponse{
		ResponseHeader: &ua.ResponseHeader{ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)},
		SubscriptionID: rapid.Uint32().Draw(t, "sub"),
		NotificationMessage: &ua.NotificationMessage{SequenceNumber: rapid.Uint32().Draw(t, "seq"),
			PublishTime: genTime.Draw(t, "publishTime"), NotificationData: data},
		Results: []ua.StatusCode{}, DiagnosticInfos: []*ua.DiagnosticInfo{},
	}
})

// TestDecodeMirrorShapedMatchesUADecode: every message of the mirror's
// shape takes the fast path and decodes as ua.DecodeService decodes it.
func TestDecodeMirrorShapedMatchesUADecode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, err := AppendResponse(nil, id.PublishResponse_Encoding_DefaultBinary, mirrorShaped.Draw(t, "response"))
		if err != nil {
			t.Fatal(err)
		}
		if !decodeBoth(t, b) {
			t.Fatalf("a mirror-shaped message was left to ua.DecodeService: %x", b)
		}
	})
}

// decodeProperty: for any PublishResponse (events, status changes,
// arrays, structures, diagnostics, headers), the fast path either says
// ErrUnhandled or decodes what ua.DecodeService decodes.
func decodeProperty(t *rapid.T) {
	b, err := AppendResponse(nil, id.PublishResponse_Encoding_DefaultBinary, genPublishResponse.Draw(t, "response"))
	if err != nil {
		t.Skip("not encodable")
	}
	decodeBoth(t, b)
	// A truncated or damaged copy never panics and never decodes into
	// something ua.DecodeService would not.
	cut := rapid.IntRange(0, len(b)).Draw(t, "cut")
	decodeBoth(t, b[:cut])
	if len(b) > 4 {
		bad := bytes.Clone(b)
		bad[rapid.IntRange(4, len(b)-1).Draw(t, "at")] ^= rapid.ByteRange(1, 255).Draw(t, "flip")
		decodeBoth(t, bad)
	}
}

func TestDecodeMatchesUADecodeOrStepsAside(t *testing.T) {
	rapid.Check(t, decodeProperty)
}

// FuzzDecodePublishNotifications feeds raw bytes behind a PublishResponse
// type id, and the generator's bytes to decodeProperty.
func FuzzDecodePublishNotifications(f *testing.F) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	b, err := AppendResponse(nil, id.PublishResponse_Encoding_DefaultBinary, &ua.PublishResponse{
		ResponseHeader: &ua.ResponseHeader{ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)},
		SubscriptionID: 7, NotificationMessage: eventsAndData(now), Results: []ua.StatusCode{}, DiagnosticInfos: []*ua.DiagnosticInfo{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[4:])
	f.Add([]byte{})
	f.Add(b) // a type id where the body should begin
	f.Fuzz(func(t *testing.T, body []byte) {
		decodeBoth(t, append(appendTypeID(nil, id.PublishResponse_Encoding_DefaultBinary), body...))
	})
}

// TestDecodeStepsAside names what the fast path leaves to ua.DecodeService.
func TestDecodeStepsAside(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	base := func(data ...*ua.ExtensionObject) *ua.PublishResponse {
		return &ua.PublishResponse{
			ResponseHeader: &ua.ResponseHeader{ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)},
			SubscriptionID: 7, NotificationMessage: &ua.NotificationMessage{SequenceNumber: 3, PublishTime: now, NotificationData: data},
			Results: []ua.StatusCode{}, DiagnosticInfos: []*ua.DiagnosticInfo{},
		}
	}
	change := func(v any) *ua.ExtensionObject {
		return ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: []*ua.MonitoredItemNotification{{ClientHandle: 1,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}}}, DiagnosticInfos: []*ua.DiagnosticInfo{}})
	}
	withResults := base(change(int16(1)))
	withResults.Results = []ua.StatusCode{ua.StatusOK}
	for name, r := range map[string]*ua.PublishResponse{
		"an array value":      base(change([]int16{1, 2})),
		"a structured value":  base(change(ua.NewLocalizedText("x"))),
		"a status change":     base(ua.NewExtensionObject(&ua.StatusChangeNotification{Status: ua.StatusBadTimeout, DiagnosticInfo: &ua.DiagnosticInfo{}})),
		"events":              base(eventsAndData(now).NotificationData...),
		"acknowledge results": withResults,
	} {
		b, err := AppendResponse(nil, id.PublishResponse_Encoding_DefaultBinary, r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, _, err := DecodePublishNotifications(b); !errors.Is(err, ErrUnhandled) {
			t.Errorf("%s: %v, want ErrUnhandled", name, err)
		}
	}
	fault, err := AppendResponse(nil, id.ServiceFault_Encoding_DefaultBinary, &ua.ServiceFault{ResponseHeader: base().ResponseHeader})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := DecodePublishNotifications(fault); !errors.Is(err, ErrUnhandled) {
		t.Errorf("a ServiceFault: %v, want ErrUnhandled", err)
	}
	// A keep-alive (no notification data) takes the fast path.
	b, err := AppendResponse(nil, id.PublishResponse_Encoding_DefaultBinary, base())
	if err != nil {
		t.Fatal(err)
	}
	if !decodeBoth(t, b) {
		t.Fatal("a keep-alive was left to ua.DecodeService")
	}
}
