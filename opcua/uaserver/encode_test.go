package uaserver

import (
	"bytes"
	"encoding/binary"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uasc"
	"pgregory.net/rapid"
)

// captureConn records what a channel writes.
type captureConn struct {
	net.Conn // nil: only the methods below are used
	buf      bytes.Buffer
}

func (c *captureConn) Write(b []byte) (int, error)      { return c.buf.Write(b) }
func (c *captureConn) SetWriteDeadline(time.Time) error { return nil }
func (c *captureConn) Close() error                     { return nil }
func (c *captureConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// captureChannel is an open channel (id 7, token 9) whose peer announced
// bufSize and the given message limits, writing into a captureConn.
func captureChannel(t *testing.T, bufSize, maxMsg, maxChunks uint32) (*channel, *captureConn) {
	t.Helper()
	srv, err := New(Config{ListenAddr: "127.0.0.1:0"}, newFakeStore(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	conn := &captureConn{}
	ack := &uacp.Acknowledge{ReceiveBufSize: bufSize, SendBufSize: bufSize}
	ch := newChannel(srv, conn, "127.0.0.1", ack, &uacp.Hello{ReceiveBufSize: bufSize, SendBufSize: bufSize, MaxMessageSize: maxMsg, MaxChunkCount: maxChunks})
	ch.id, ch.cur, ch.opened = 7, &secToken{id: 9}, true
	return ch, conn
}

// rawService encodes as its bytes (the body after the type id).
type rawService []byte

func (r rawService) Encode() ([]byte, error) { return r, nil }

// TestWriteMsgMatchesUASC checks the hand-made framing against gopcua's
// uasc.Message.EncodeChunks, which otopcua used before, for bodies of every
// size around the chunk boundaries. uasc adds an empty final chunk when the
// body fills its chunks exactly; otopcua ends with the full one.
func TestWriteMsgMatchesUASC(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bufSize := uint32(rapid.IntRange(minBufSize, bufSize).Draw(rt, "bufSize"))
		ch, conn := captureChannel(t, bufSize, 0, 0)
		max := int(ch.sendMax)
		n := rapid.OneOf(
			rapid.IntRange(4, 5*max),
			rapid.SampledFrom([]int{4, max - 1, max, max + 1, 2 * max, 3*max - 1}),
		).Draw(rt, "bodyLen")
		reqID := rapid.Uint32().Draw(rt, "reqID")
		seq0 := uint32(rapid.IntRange(0, 5000).Draw(rt, "seq"))
		ch.seq = seq0
		rest := make([]byte, n-4)
		for i := range rest {
			rest[i] = byte(i * 7)
		}
		body := append([]byte{0x01, 0x00, 0x41, 0x03}, rest...) // FourByte ns=0;i=833
		if err := ch.writeMsg(reqID, body); err != nil {
			rt.Fatal(err)
		}

		m := &uasc.Message{
			MessageHeader: &uasc.MessageHeader{
				Header:                  uasc.NewHeader(uasc.MessageTypeMessage, uasc.ChunkTypeFinal, 7),
				SymmetricSecurityHeader: uasc.NewSymmetricSecurityHeader(9),
				SequenceHeader:          uasc.NewSequenceHeader(0, reqID),
			},
			TypeID:  ua.NewFourByteExpandedNodeID(0, 833),
			Service: rawService(rest),
		}
		chunks, err := m.EncodeChunks(ch.sendMax)
		if err != nil {
			rt.Fatal(err)
		}
		if n%max == 0 {
			last := chunks[len(chunks)-1]
			if len(last) != symHeaderLen {
				rt.Fatalf("uasc's quirk changed: final chunk of %d bytes", len(last))
			}
			chunks = chunks[:len(chunks)-1]
			chunks[len(chunks)-1][3] = uasc.ChunkTypeFinal
		}
		var want []byte
		for i, c := range chunks {
			binary.LittleEndian.PutUint32(c[16:], seq0+uint32(i)+1)
			want = append(want, c...)
		}
		if got := conn.buf.Bytes(); !bytes.Equal(got, want) {
			rt.Fatalf("framing of a %d-byte body in %d-byte chunks differs (%d vs %d bytes)", n, bufSize, len(got), len(want))
		}
	})
}

// readChunks splits captured bytes into chunks and reassembles the body
// of the one message they must hold.
func readChunks(t *testing.T, b []byte) (reqID uint32, body []byte, n int) {
	t.Helper()
	for len(b) > 0 {
		size := binary.LittleEndian.Uint32(b[4:])
		c := b[:size]
		b = b[size:]
		n++
		if string(c[:3]) != "MSG" || binary.LittleEndian.Uint32(c[8:]) != 7 || binary.LittleEndian.Uint32(c[12:]) != 9 {
			t.Fatalf("chunk %d header % x", n, c[:16])
		}
		reqID = binary.LittleEndian.Uint32(c[20:])
		body = append(body, c[symHeaderLen:]...)
		if final := c[3] == 'F'; final != (len(b) == 0) {
			t.Fatalf("chunk %d of type %c with %d bytes after it", n, c[3], len(b))
		}
	}
	return reqID, body, n
}

// bigPublish is a PublishResponse of n data changes.
func bigPublish(n int) *ua.PublishResponse {
	now := time.Now().UTC().Truncate(100 * time.Nanosecond)
	items := make([]*ua.MonitoredItemNotification, n)
	for i := range items {
		dv := &ua.DataValue{Value: ua.MustVariant(float64(i)), SourceTimestamp: now, ServerTimestamp: now}
		dv.UpdateMask()
		items[i] = &ua.MonitoredItemNotification{ClientHandle: uint32(i), Value: dv}
	}
	return &ua.PublishResponse{
		ResponseHeader: newResponseHeader(5, ua.StatusOK, now),
		SubscriptionID: 3,
		NotificationMessage: &ua.NotificationMessage{SequenceNumber: 4, PublishTime: now, NotificationData: []*ua.ExtensionObject{
			ua.NewExtensionObject(&ua.DataChangeNotification{MonitoredItems: items, DiagnosticInfos: []*ua.DiagnosticInfo{}}),
		}},
		AvailableSequenceNumbers: []uint32{4},
		Results:                  []ua.StatusCode{},
		DiagnosticInfos:          []*ua.DiagnosticInfo{},
	}
}

// TestSendLargePublish sends a PublishResponse over many chunks and decodes
// it back with gopcua.
func TestSendLargePublish(t *testing.T) {
	ch, conn := captureChannel(t, minBufSize, 0, 0)
	resp := bigPublish(5000)
	if err := ch.send(77, resp); err != nil {
		t.Fatal(err)
	}
	reqID, body, n := readChunks(t, conn.buf.Bytes())
	if reqID != 77 || n < 10 {
		t.Fatalf("request id %d in %d chunks", reqID, n)
	}
	_, v, err := ua.DecodeService(body)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := v.(*ua.PublishResponse)
	if !ok {
		t.Fatalf("decoded %T", v)
	}
	want := resp.NotificationMessage.NotificationData[0].Value.(*ua.DataChangeNotification).MonitoredItems
	items := got.NotificationMessage.NotificationData[0].Value.(*ua.DataChangeNotification).MonitoredItems
	if len(items) != len(want) || items[4999].ClientHandle != 4999 || items[4999].Value.Value.Float() != 4999 ||
		!items[0].Value.ServerTimestamp.Equal(want[0].Value.ServerTimestamp) {
		t.Fatalf("decoded %d items, last %+v", len(items), items[len(items)-1])
	}
	if !reflect.DeepEqual(got.AvailableSequenceNumbers, []uint32{4}) || got.ResponseHeader.RequestHandle != 5 {
		t.Fatalf("decoded %+v", got)
	}
}

// TestSendTooLarge: a response beyond the client's MaxChunkCount or
// MaxMessageSize is replaced by a BadResponseTooLarge fault carrying the
// request's handle.
func TestSendTooLarge(t *testing.T) {
	for name, lim := range map[string][2]uint32{"chunks": {0, 3}, "bytes": {20000, 0}} {
		t.Run(name, func(t *testing.T) {
			ch, conn := captureChannel(t, minBufSize, lim[0], lim[1])
			if err := ch.send(12, bigPublish(2000)); err == nil {
				t.Fatal("send of an oversized response returned no error")
			}
			reqID, body, n := readChunks(t, conn.buf.Bytes())
			_, v, err := ua.DecodeService(body)
			if err != nil {
				t.Fatal(err)
			}
			f, ok := v.(*ua.ServiceFault)
			if reqID != 12 || n != 1 || !ok || f.ResponseHeader.ServiceResult != ua.StatusBadResponseTooLarge || f.ResponseHeader.RequestHandle != 5 {
				t.Fatalf("got %T %+v for request %d in %d chunks", v, v, reqID, n)
			}
		})
	}
}

// TestServiceTypeIDs: the shortcut ids are gopcua's.
func TestServiceTypeIDs(t *testing.T) {
	for _, r := range []ua.Response{&ua.PublishResponse{}, &ua.ServiceFault{}, &ua.ReadResponse{}} {
		if got, want := responseTypeID(r), ua.ServiceTypeID(r); got != want || got == 0 {
			t.Errorf("%T: %d, want %d", r, got, want)
		}
	}
	if responseTypeID(&ua.PublishResponse{}) != id.PublishResponse_Encoding_DefaultBinary {
		t.Error("PublishResponse id")
	}
}
