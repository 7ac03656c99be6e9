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
