package uaclient

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// encodeService is the body of a message carrying v, as Reply.Body holds it.
func encodeService(t testing.TB, v any) []byte {
	t.Helper()
	typeID := ua.ServiceTypeID(v)
	if typeID == 0 {
		t.Fatalf("%T is not a service", v)
	}
	b, err := ua.Encode(ua.NewFourByteExpandedNodeID(0, typeID))
	if err != nil {
		t.Fatal(err)
	}
	body, err := ua.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, body...)
}

func randomValue(r *rand.Rand) any {
	switch r.IntN(12) {
	case 0:
		return r.Int64()
	case 1:
		return r.Float64()
	case 2:
		return r.IntN(2) == 0
	case 3:
		return "text-" + string(rune('a'+r.IntN(26)))
	case 4:
		return []int32{1, 2, 3}
	case 5:
		return []string{"a", "bc", ""}
	case 6:
		return ua.NewNumericNodeID(uint16(r.IntN(3)), r.Uint32())
	case 7:
		return &ua.QualifiedName{NamespaceIndex: 2, Name: "q"}
	case 8:
		return &ua.LocalizedText{EncodingMask: ua.LocalizedTextText | ua.LocalizedTextLocale, Locale: "en", Text: "t"}
	case 9:
		return []byte{1, 2, 3, 4}
	case 10:
		return time.Unix(r.Int64N(1e9), 0)
	default:
		return uint16(r.IntN(60000))
	}
}

func randomPublish(r *rand.Rand, items int) *ua.PublishResponse {
	now := time.Now()
	var data []*ua.ExtensionObject
	for g := 0; g < 1+r.IntN(3); g++ {
		mis := make([]*ua.MonitoredItemNotification, items)
		for i := range mis {
			dv := &ua.DataValue{Value: ua.MustVariant(randomValue(r)), EncodingMask: ua.DataValueValue}
			if r.IntN(4) != 0 {
				dv.SourceTimestamp = now.Add(-time.Duration(r.IntN(1e9)))
				dv.EncodingMask |= ua.DataValueSourceTimestamp
			}
			if r.IntN(3) == 0 {
				dv.ServerTimestamp = now
				dv.EncodingMask |= ua.DataValueServerTimestamp | ua.DataValueServerPicoseconds
				dv.ServerPicoseconds = 7
			}
			if r.IntN(5) == 0 {
				dv.Status = ua.StatusBadNodeIDUnknown
				dv.EncodingMask |= ua.DataValueStatusCode
			}
			mis[i] = &ua.MonitoredItemNotification{ClientHandle: r.Uint32(), Value: dv}
		}
		dcn := &ua.DataChangeNotification{MonitoredItems: mis, DiagnosticInfos: []*ua.DiagnosticInfo{{EncodingMask: ua.DiagnosticInfoAdditionalInfo, AdditionalInfo: "x"}}}
		eo := ua.NewExtensionObject(dcn)
		eo.UpdateMask()
		data = append(data, eo)
	}
	if r.IntN(2) == 0 {
		evs := make([]*ua.EventFieldList, r.IntN(4))
		for i := range evs {
			fields := make([]*ua.Variant, r.IntN(6))
			for j := range fields {
				fields[j] = ua.MustVariant(randomValue(r))
			}
			evs[i] = &ua.EventFieldList{ClientHandle: r.Uint32(), EventFields: fields}
		}
		eo := ua.NewExtensionObject(&ua.EventNotificationList{Events: evs})
		eo.UpdateMask()
		data = append(data, eo)
	}
	if r.IntN(3) == 0 {
		eo := ua.NewExtensionObject(&ua.StatusChangeNotification{Status: ua.StatusBadTimeout, DiagnosticInfo: &ua.DiagnosticInfo{}})
		eo.UpdateMask()
		data = append(data, eo)
	}
	return &ua.PublishResponse{
		ResponseHeader: &ua.ResponseHeader{
			Timestamp:          now,
			RequestHandle:      r.Uint32(),
			ServiceResult:      ua.StatusOK,
			ServiceDiagnostics: &ua.DiagnosticInfo{EncodingMask: ua.DiagnosticInfoSymbolicID | ua.DiagnosticInfoInnerStatusCode, SymbolicID: 3, InnerStatusCode: ua.StatusBad},
			StringTable:        []string{"s1", "s2"},
			AdditionalHeader:   ua.NewExtensionObject(nil),
		},
		SubscriptionID:           r.Uint32(),
		AvailableSequenceNumbers: []uint32{4, 5, 6},
		MoreNotifications:        r.IntN(2) == 0,
		NotificationMessage: &ua.NotificationMessage{
			SequenceNumber:   r.Uint32(),
			PublishTime:      now,
			NotificationData: data,
		},
		Results:         []ua.StatusCode{ua.StatusOK, ua.StatusBadSequenceNumberUnknown},
		DiagnosticInfos: []*ua.DiagnosticInfo{},
	}
}

// slowItems is the oracle: gopcua's reflection decoder, reduced to Items.
func slowItems(t *testing.T, body []byte) (*ua.PublishResponse, []Item) {
	t.Helper()
	_, svc, err := ua.DecodeService(body)
	if err != nil {
		t.Fatal(err)
	}
	resp := svc.(*ua.PublishResponse)
	var items []Item
	for _, eo := range resp.NotificationMessage.NotificationData {
		dcn, ok := eo.Value.(*ua.DataChangeNotification)
		if !ok {
			continue
		}
		for _, mi := range dcn.MonitoredItems {
			it := Item{ClientHandle: mi.ClientHandle, Mask: mi.Value.EncodingMask, Status: mi.Value.Status}
			if !mi.Value.SourceTimestamp.IsZero() {
				it.Source = mi.Value.SourceTimestamp.UnixNano()
			}
			items = append(items, it)
		}
	}
	return resp, items
}

func TestDecodePublishMatchesReflectionDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for round := 0; round < 200; round++ {
		body := encodeService(t, randomPublish(r, r.IntN(40)))
		want, wantItems := slowItems(t, body)
		var p Publish
		var got []Item
		if err := DecodePublish(body, &p, func(it Item) { got = append(got, it) }); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !reflect.DeepEqual(got, wantItems) {
			t.Fatalf("round %d: items differ\n got %v\nwant %v", round, got, wantItems)
		}
		nm := want.NotificationMessage
		if p.SequenceNumber != nm.SequenceNumber || p.SubscriptionID != want.SubscriptionID ||
			p.RequestHandle != want.ResponseHeader.RequestHandle || p.MoreNotes != want.MoreNotifications ||
			p.PublishTime != nm.PublishTime.UnixNano() || p.Items != len(wantItems) ||
			!reflect.DeepEqual(p.AckResults, want.Results) {
			t.Fatalf("round %d: header fields differ: %+v", round, p)
		}
		var dc, sc, el, ev int
		for _, eo := range nm.NotificationData {
			switch v := eo.Value.(type) {
			case *ua.EventNotificationList:
				el++
				ev += len(v.Events)
			case *ua.DataChangeNotification:
				dc++
			case *ua.StatusChangeNotification:
				sc++
				if p.Status != v.Status {
					t.Fatalf("round %d: status %v, want %v", round, p.Status, v.Status)
				}
			}
		}
		if p.DataChanges != dc || p.StatusChange != (sc > 0) {
			t.Fatalf("round %d: %d data changes / status %v, want %d / %d", round, p.DataChanges, p.StatusChange, dc, sc)
		}
		if p.EventLists != el || p.Events != ev || p.Other != 0 {
			t.Fatalf("round %d: %d event lists / %d events / %d other, want %d / %d / 0", round, p.EventLists, p.Events, p.Other, el, ev)
		}
	}
}

func TestDecodePublishKeepaliveAndFault(t *testing.T) {
	ka := &ua.PublishResponse{
		ResponseHeader:      &ua.ResponseHeader{RequestHandle: 5, ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)},
		SubscriptionID:      1,
		NotificationMessage: &ua.NotificationMessage{SequenceNumber: 9, NotificationData: []*ua.ExtensionObject{}},
	}
	var p Publish
	if err := DecodePublish(encodeService(t, ka), &p, func(Item) { t.Fatal("keep-alive has no items") }); err != nil {
		t.Fatal(err)
	}
	if !p.Keepalive() || p.SequenceNumber != 9 || p.RequestHandle != 5 {
		t.Fatalf("keep-alive decoded as %+v", p)
	}
	fault := &ua.ServiceFault{ResponseHeader: &ua.ResponseHeader{RequestHandle: 3, ServiceResult: ua.StatusBadTooManyPublishRequests, ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)}}
	if err := DecodePublish(encodeService(t, fault), &p, nil); err != nil {
		t.Fatal(err)
	}
	if !p.Fault || p.ServiceResult != ua.StatusBadTooManyPublishRequests || p.RequestHandle != 3 {
		t.Fatalf("fault decoded as %+v", p)
	}
	other := encodeService(t, &ua.ReadResponse{ResponseHeader: fault.ResponseHeader})
	if err := DecodePublish(other, &p, nil); !errors.Is(err, ErrDecode) {
		t.Fatalf("ReadResponse: err = %v, want ErrDecode", err)
	}
}

func TestDecodePublishTruncated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	body := encodeService(t, randomPublish(r, 5))
	for n := 0; n < len(body); n++ {
		var p Publish
		if err := DecodePublish(body[:n], &p, func(Item) {}); !errors.Is(err, ErrDecode) {
			t.Fatalf("prefix of %d/%d bytes: err = %v, want ErrDecode", n, len(body), err)
		}
	}
}

func FuzzDecodePublish(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 4 {
		f.Add(encodeService(f, randomPublish(r, 3))) // some carry events
	}
	f.Add([]byte{1, 0, byte(id.PublishResponse_Encoding_DefaultBinary & 0xff), byte(id.PublishResponse_Encoding_DefaultBinary >> 8)})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Publish
		_ = DecodePublish(b, &p, func(Item) {})
	})
}

func benchBody(b *testing.B, n int) []byte {
	now := time.Now()
	items := make([]*ua.MonitoredItemNotification, n)
	for i := range items {
		items[i] = &ua.MonitoredItemNotification{ClientHandle: uint32(i), Value: &ua.DataValue{EncodingMask: ua.DataValueValue | ua.DataValueSourceTimestamp, Value: ua.MustVariant(int64(i)), SourceTimestamp: now}}
	}
	eo := ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: items, DiagnosticInfos: []*ua.DiagnosticInfo{}})
	eo.UpdateMask()
	return encodeService(b, &ua.PublishResponse{
		ResponseHeader:      &ua.ResponseHeader{ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)},
		NotificationMessage: &ua.NotificationMessage{SequenceNumber: 1, PublishTime: now, NotificationData: []*ua.ExtensionObject{eo}},
	})
}

// BenchmarkDecodePublish50k and BenchmarkDecodeService50k compare the two
// decoders on one PublishResponse of 50,000 Int64 notifications.
func BenchmarkDecodePublish50k(b *testing.B) {
	body := benchBody(b, 50000)
	var p Publish
	var sum int64
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := DecodePublish(body, &p, func(it Item) { sum += it.Source }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeService50k(b *testing.B) {
	body := benchBody(b, 50000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := ua.DecodeService(body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecodePublishCountsEvents(t *testing.T) {
	evs := &ua.EventNotificationList{Events: []*ua.EventFieldList{
		{ClientHandle: 1, EventFields: []*ua.Variant{ua.MustVariant([]byte{1, 2}), ua.MustVariant(ua.NewNumericNodeID(0, id.BaseEventType)), ua.MustVariant(nil)}},
		{ClientHandle: 2, EventFields: []*ua.Variant{ua.MustVariant(ua.NewLocalizedText("m"))}},
	}}
	eo := ua.NewExtensionObject(evs)
	eo.UpdateMask()
	msg := &ua.PublishResponse{
		ResponseHeader:      &ua.ResponseHeader{ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)},
		NotificationMessage: &ua.NotificationMessage{SequenceNumber: 4, NotificationData: []*ua.ExtensionObject{eo}},
	}
	var p Publish
	if err := DecodePublish(encodeService(t, msg), &p, func(Item) { t.Fatal("an event message has no items") }); err != nil {
		t.Fatal(err)
	}
	if p.EventLists != 1 || p.Events != 2 || p.Other != 0 || p.Keepalive() || p.SequenceNumber != 4 {
		t.Fatalf("decoded %+v: want 1 event list of 2 events, not a keep-alive", p)
	}
}
