package mirror

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaserver"
)

// TestSessionKeyIsString: the key of a session is its NodeId's String
// for every kind of NodeId (the peers and the subscription engine key
// sessions by that string).
func TestSessionKeyIsString(t *testing.T) {
	ids := []*ua.NodeID{
		ua.NewNumericNodeID(1, 1332780630), ua.NewNumericNodeID(0, 4294967295), ua.NewNumericNodeID(65535, 7),
		ua.NewFourByteNodeID(3, 65535), ua.NewFourByteNodeID(0, 12), ua.NewTwoByteNodeID(255),
		ua.NewStringNodeID(1, "session"), ua.NewGUIDNodeID(1, "AD3B7F2E-3C4A-4B8D-9C1E-2F3A4B5C6D7E"),
		ua.NewByteStringNodeID(2, []byte{1, 2, 3}), nil,
	}
	for _, id := range ids {
		if got, want := sessionKey(id), id.String(); got != want {
			t.Errorf("sessionKey(%v) = %q, want %q", id, got, want)
		}
	}
}

// BenchmarkSessionKey compares gopcua's String (what the hooks called
// before) with sessionKey on a session id as uaserver issues them.
func BenchmarkSessionKey(b *testing.B) {
	id := ua.NewNumericNodeID(1, 1332780630)
	b.Run("String", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = id.String()
		}
	})
	b.Run("sessionKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = sessionKey(id)
		}
	})
}

// discardTransport drops every batch.
type discardTransport struct{}

func (discardTransport) Send(string, []byte) error { return nil }

// oneItemResponse is a PublishResponse with one data change: the common
// message of many sessions with a few changing items each.
func oneItemResponse() *ua.PublishResponse {
	now := time.Unix(1_800_000_000, 0)
	return &ua.PublishResponse{SubscriptionID: 7, NotificationMessage: &ua.NotificationMessage{SequenceNumber: 1, PublishTime: now,
		NotificationData: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.DataChangeNotification{
			MonitoredItems: []*ua.MonitoredItemNotification{{ClientHandle: 42, Value: &ua.DataValue{
				EncodingMask: ua.DataValueValue | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
				Value:        ua.MustVariant(int16(7)), SourceTimestamp: now, ServerTimestamp: now}}},
			DiagnosticInfos: []*ua.DiagnosticInfo{}})}}}
}

// BenchmarkSentOneItem is the serving member's own work in the Sent hook
// for a NotificationMessage with one data change (the common message of
// many sessions with a few changing items each): the session key, the
// record's encoding and queueing, without a peer to wait for.
func BenchmarkSentOneItem(b *testing.B) {
	m := New(Options{Self: "a", Transport: discardTransport{}, Sync: true})
	id := ua.NewNumericNodeID(1, 1332780630)
	m.Session(uaserver.MirroredSession{ID: id, Name: "bench", Timeout: time.Minute, Activated: true})
	resp := oneItemResponse()
	b.ReportAllocs()
	for b.Loop() {
		m.Sent(id, resp)
	}
}

// TestInboxHoldsABurstOfSmallBatches: batches that arrive while the reader
// is busy wait for it (their bytes are bounded by the sender's
// MaxLagBytes); a burst of a few thousand small ones — what a standby
// fell behind under 1,000 sessions — is not dropped as inbox-full.
func TestInboxHoldsABurstOfSmallBatches(t *testing.T) {
	m := New(Options{Self: "a", Transport: discardTransport{}, Sync: true}) // not attached: no reader runs
	batch := make([]byte, 64)
	for range 8000 {
		m.Receive("b", batch)
	}
	if n := m.Stats().Dropped["inbox-full"]; n != 0 {
		t.Fatalf("%d of 8,000 small batches dropped as inbox-full", n)
	}
	m.Receive("b", batch)
	for range inboxSize {
		m.Receive("b", batch)
	}
	if n := m.Stats().Dropped["inbox-full"]; n == 0 {
		t.Fatal("a full inbox dropped nothing: the bound is gone")
	}
}

// BenchmarkDecodeSentOneItem is the replica's decoding of the record
// BenchmarkSentOneItem's message makes: what a standby pays per message a
// client of the serving member gets.
func BenchmarkDecodeSentOneItem(b *testing.B) {
	resp := oneItemResponse()
	rec, err := encSent("ns=1;i=1332780630", resp)
	if err != nil {
		b.Fatal(err)
	}
	body := rec[5:] // after the kind and the length
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRecord(kSent, body); err != nil {
			b.Fatal(err)
		}
	}
}
