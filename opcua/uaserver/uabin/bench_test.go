package uabin

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// benchResponse is a PublishResponse shaped like the subscription
// benchmark's: n notifications, Int64 and Double values alternating, both
// timestamps, Good status.
func benchResponse(n int) *ua.PublishResponse {
	now := time.Now()
	items := make([]*ua.MonitoredItemNotification, n)
	for i := range items {
		var v any = int64(i)
		if i%2 == 1 {
			v = float64(i) / 3
		}
		dv := &ua.DataValue{Value: ua.MustVariant(v), SourceTimestamp: now, ServerTimestamp: now}
		dv.UpdateMask()
		items[i] = &ua.MonitoredItemNotification{ClientHandle: uint32(i + 1), Value: dv}
	}
	return &ua.PublishResponse{
		ResponseHeader:           &ua.ResponseHeader{Timestamp: now, ServiceDiagnostics: &ua.DiagnosticInfo{}, StringTable: []string{}, AdditionalHeader: ua.NewExtensionObject(nil)},
		SubscriptionID:           1,
		AvailableSequenceNumbers: []uint32{1, 2, 3},
		NotificationMessage: &ua.NotificationMessage{SequenceNumber: 3, PublishTime: now, NotificationData: []*ua.ExtensionObject{
			ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: items, DiagnosticInfos: []*ua.DiagnosticInfo{}}),
		}},
		Results: []ua.StatusCode{ua.StatusOK},
	}
}

// BenchmarkEncodePublish reports ns per notification of a 10,000-item
// message, with gopcua's ua.Encode (what otopcua used before) and with
// AppendResponse into a reused buffer.
func BenchmarkEncodePublish(b *testing.B) {
	const n = 10000
	resp := benchResponse(n)
	b.Run("ua.Encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ua.Encode(resp); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/notification")
	})
	b.Run("AppendResponse", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = AppendResponse(buf[:0], id.PublishResponse_Encoding_DefaultBinary, resp); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/notification")
	})
}

// benchEvents is a PublishResponse of n AuditWriteUpdateEventType events
// with the fields a client typically selects (14 per event).
func benchEvents(n int) *ua.PublishResponse {
	now := time.Now()
	evs := make([]*ua.EventFieldList, n)
	for i := range evs {
		evs[i] = &ua.EventFieldList{ClientHandle: uint32(i + 1), EventFields: []*ua.Variant{
			ua.MustVariant([]byte("0123456789abcdef")),
			ua.MustVariant(ua.NewNumericNodeID(0, id.AuditWriteUpdateEventType)),
			ua.MustVariant(ua.NewStringNodeID(2, "press1/Setpoint")),
			ua.MustVariant("Attribute/Write"),
			ua.MustVariant(now),
			ua.MustVariant(now),
			ua.MustVariant(ua.NewLocalizedText("not primary")),
			ua.MustVariant(uint16(500)),
			ua.MustVariant(false),
			ua.MustVariant("urn:otopcua:site-a:node1"),
			ua.MustVariant("operator"),
			ua.MustVariant(uint32(13)),
			ua.MustVariant(int16(5)),
			ua.MustVariant(int16(7)),
		}}
	}
	return &ua.PublishResponse{
		ResponseHeader:           &ua.ResponseHeader{Timestamp: now, ServiceDiagnostics: &ua.DiagnosticInfo{}, StringTable: []string{}, AdditionalHeader: ua.NewExtensionObject(nil)},
		SubscriptionID:           1,
		AvailableSequenceNumbers: []uint32{1},
		NotificationMessage: &ua.NotificationMessage{SequenceNumber: 1, PublishTime: now, NotificationData: []*ua.ExtensionObject{
			ua.NewExtensionObject(&ua.EventNotificationList{Events: evs}),
		}},
		Results: []ua.StatusCode{},
	}
}

// BenchmarkEncodeEvents reports ns per event of a 1,000-event message.
func BenchmarkEncodeEvents(b *testing.B) {
	const n = 1000
	resp := benchEvents(n)
	b.Run("ua.Encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ua.Encode(resp); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	})
	b.Run("AppendResponse", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = AppendResponse(buf[:0], id.PublishResponse_Encoding_DefaultBinary, resp); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	})
}
