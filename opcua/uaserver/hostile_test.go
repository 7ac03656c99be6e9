package uaserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/otopcua/otopcua/opcua/uaclient"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/limits"
	"github.com/otopcua/otopcua/opcua/subscription"
)

// msgChunk frames body as one MSG chunk ("MSGF", "MSGC", "MSGA") of a
// secure channel.
func msgChunk(typ string, scID, token, reqID uint32, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString(typ)
	le := func(v uint32) { _ = binary.Write(&b, binary.LittleEndian, v) }
	le(uint32(8 + 4 + 4 + 8 + len(body)))
	le(scID)
	le(token)
	le(1 << 30) // sequence number
	le(reqID)
	b.Write(body)
	return b.Bytes()
}

// onlyChannel returns the id and token of the server's only channel.
func onlyChannel(t testing.TB, ts *testServer) (scID, token uint32) {
	t.Helper()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.channels) != 1 {
		t.Fatalf("%d channels, want 1", len(ts.channels))
	}
	for _, ch := range ts.channels {
		ch.tokMu.Lock()
		defer ch.tokMu.Unlock()
		return ch.id, ch.cur.id
	}
	return 0, 0
}

// typeIDPrefix is the four-byte NodeId encoding of a service type id.
func typeIDPrefix(typeID uint16) []byte {
	return []byte{0x01, 0x00, byte(typeID), byte(typeID >> 8)}
}

func TestUndecodableRequestKeepsChannel(t *testing.T) {
	ts := startServer(t, nil)
	rc := dialRaw(t, ts.url)
	rc.session(60000)
	scID, token := onlyChannel(t, ts)

	for _, tc := range []struct {
		reqID uint32
		body  []byte
		want  string
	}{
		{0x7fff0001, append(typeIDPrefix(id.ReadRequest_Encoding_DefaultBinary), 0xff, 0xff, 0xff), "BadDecodingError"},
		{0x7fff0002, typeIDPrefix(9999), "BadServiceUnsupported"},
	} {
		if _, err := rc.conn.Write(msgChunk("MSGF", scID, token, tc.reqID, tc.body)); err != nil {
			t.Fatal(err)
		}
		// The same channel still answers real requests.
		rc.mustDo(readReq(nodeTemp))
		want := fmt.Sprintf(`"request_id":%d`, tc.reqID)
		poll.CheckFor(t, 2*time.Second, 5*time.Millisecond, func() error { return contains(ts.logs.String(), want) })
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if n := len(ts.channels); n != 1 {
		t.Fatalf("%d channels, want 1", n)
	}
}

func TestMessageForUnknownChannelClosesOnlyThatChannel(t *testing.T) {
	ts := startServer(t, nil)
	victim := dialRaw(t, ts.url)
	victim.session(60000)
	other := dialRaw(t, ts.url)
	other.session(60000)

	if _, err := victim.conn.Write(msgChunk("MSGF", 12345, 1, 1, typeIDPrefix(id.ReadRequest_Encoding_DefaultBinary))); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if n := len(ts.channels); n != 1 {
			return fmt.Errorf("%d channels open, want 1", n)
		}
		return nil
	})
	other.mustDo(readReq(nodeTemp))
	if n := ts.SessionCount(); n != 2 {
		t.Fatalf("SessionCount %d, want 2 (sessions outlive channels)", n)
	}
}

// engineSource adapts the fake store to the engine's Source.
type engineSource struct{ store *fakeStore }

func (s engineSource) Read(n *ua.NodeID, attr ua.AttributeID) *ua.DataValue {
	return s.store.Read(&ua.ReadValueID{NodeID: n, AttributeID: attr, DataEncoding: &ua.QualifiedName{}}, ua.TimestampsToReturnBoth)
}

func (s engineSource) Watch(n *ua.NodeID, fn func(*ua.DataValue)) (func(), ua.StatusCode) {
	if !n.Equal(nodeTemp) {
		return nil, ua.StatusBadNodeIDUnknown
	}
	return func() {}, ua.StatusOK
}

// TestRealEngineBadRequestsGetAStatus wires the real subscription engine:
// whatever it answers to nonsense (or if it panics), the client gets a
// status and the server goes on serving.
func TestRealEngineBadRequestsGetAStatus(t *testing.T) {
	srv, _ := startEngineServer(t, engineSource{newFakeStore()}, Config{})
	rc := dialRaw(t, "opc.tcp://"+srv.Addr().String())
	rc.session(60000)

	for _, req := range []ua.Request{
		&ua.DeleteMonitoredItemsRequest{SubscriptionID: 4242, MonitoredItemIDs: []uint32{1, 2}},
		&ua.ModifySubscriptionRequest{SubscriptionID: 4242},
		&ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{4242}},
		&ua.RepublishRequest{SubscriptionID: 4242, RetransmitSequenceNumber: 9},
		&ua.CreateMonitoredItemsRequest{SubscriptionID: 4242, ItemsToCreate: []*ua.MonitoredItemCreateRequest{}},
	} {
		resp, err := rc.do(req)
		if resp == nil {
			t.Fatalf("%T: no response (%v)", req, err)
		}
		checkHeader(t, req, resp)
	}
	rc.mustDo(readReq(nodeTemp))
}

// FuzzHandshake feeds arbitrary bytes to the Hello/Acknowledge handshake:
// it must never panic, and it may only succeed on a Hello with sane
// buffer sizes, answering an Acknowledge within our limits.
func FuzzHandshake(f *testing.F) {
	hello := func(recv, send uint32, url string) []byte {
		body, _ := (&uacp.Hello{ReceiveBufSize: recv, SendBufSize: send, EndpointURL: url}).Encode()
		h, _ := (&uacp.Header{MessageType: "HEL", ChunkType: 'F', MessageSize: uint32(8 + len(body))}).Encode()
		return append(h, body...)
	}
	f.Add(hello(65535, 65535, "opc.tcp://localhost:4840"))
	f.Add(hello(8192, 1<<30, ""))
	f.Add(hello(100, 100, "opc.tcp://x"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("HELF\xff\xff\xff\xff"))
	f.Add(hello(65535, 65535, "opc.tcp://localhost:4840")[:20])
	s, err := New(Config{ListenAddr: "127.0.0.1:0", Limits: limits.Limits{HelloTimeout: time.Second}, Logger: discardLogger()}, newFakeStore(), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		srvSide, cliSide := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = io.Copy(io.Discard, cliSide)
		}()
		go func() {
			_, _ = cliSide.Write(data)
			_ = cliSide.Close()
		}()
		ack, hel, err := s.handshake(srvSide)
		_ = srvSide.Close()
		<-done
		if err != nil {
			return
		}
		if !bytes.HasPrefix(data, []byte("HELF")) || hel == nil {
			t.Fatalf("handshake accepted %q", data)
		}
		if ack.ReceiveBufSize < minBufSize || ack.ReceiveBufSize > bufSize ||
			ack.SendBufSize < minBufSize || ack.SendBufSize > bufSize ||
			ack.ReceiveBufSize > hel.SendBufSize || ack.SendBufSize > hel.ReceiveBufSize {
			t.Fatalf("ack %+v for hello %+v", ack, hel)
		}
	})
}

// FuzzServiceRequests decodes arbitrary bytes as a service request, sends
// it in an activated session and checks that the server answers it with
// some response and that the channel then still serves a Read.
func FuzzServiceRequests(f *testing.F) {
	seed := func(req ua.Request) {
		b, err := ua.Encode(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(ua.ServiceTypeID(req), b)
	}
	hdr := func() *ua.RequestHeader {
		return &ua.RequestHeader{AuthenticationToken: ua.NewTwoByteNodeID(0), AdditionalHeader: ua.NewExtensionObject(nil)}
	}
	seed(&ua.ReadRequest{RequestHeader: hdr(), NodesToRead: readReq(nodeTemp, nodePanic).NodesToRead})
	seed(&ua.BrowseRequest{RequestHeader: hdr(), View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)},
		RequestedMaxReferencesPerNode: 3,
		NodesToBrowse:                 []*ua.BrowseDescription{{NodeID: nodeObjects, ReferenceTypeID: ua.NewTwoByteNodeID(0)}}})
	seed(&ua.BrowseNextRequest{RequestHeader: hdr(), ContinuationPoints: [][]byte{{1, 2, 3}}})
	seed(&ua.WriteRequest{RequestHeader: hdr(), NodesToWrite: []*ua.WriteValue{{NodeID: nodeTemp, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(1.0)}}}})
	seed(&ua.CallRequest{RequestHeader: hdr(), MethodsToCall: []*ua.CallMethodRequest{{ObjectID: nodeObjects, MethodID: nodeTemp}}})
	seed(&ua.TranslateBrowsePathsToNodeIDsRequest{RequestHeader: hdr(), BrowsePaths: []*ua.BrowsePath{{StartingNode: nodeObjects,
		RelativePath: &ua.RelativePath{Elements: []*ua.RelativePathElement{{ReferenceTypeID: ua.NewTwoByteNodeID(0), TargetName: &ua.QualifiedName{}}}}}}})
	seed(&ua.GetEndpointsRequest{RequestHeader: hdr(), EndpointURL: "opc.tcp://[::1]:1/x"})
	seed(&ua.FindServersRequest{RequestHeader: hdr(), ServerURIs: []string{"urn:x"}})

	ts := startServer(f, func(c *Config) { c.Logger = discardLogger() })
	rc := dialRaw(f, ts.url)
	rc.session(3.6e6)
	scID, token := onlyChannel(f, ts)
	f.Fuzz(func(t *testing.T, typeID uint16, body []byte) {
		switch typeID {
		case id.OpenSecureChannelRequest_Encoding_DefaultBinary, id.CloseSecureChannelRequest_Encoding_DefaultBinary:
			return // they rightly end the channel
		}
		msg := append(typeIDPrefix(typeID), body...)
		// The bytes as they are: the server must answer or ignore them and
		// keep the channel.
		if _, err := rc.conn.Write(msgChunk("MSGF", scID, token, 0x7fff0000, msg)); err != nil {
			t.Fatalf("write: %v", err)
		}
		if _, err := rc.do(readReq(nodeTemp)); err != nil {
			t.Fatalf("Read after raw %d/%x: %v", typeID, body, err)
		}
		// Decoded and sent in the session, so the handlers run.
		req, code := decodeRequest(msg)
		if code != ua.StatusOK {
			return
		}
		switch req.(type) {
		case *ua.CreateSessionRequest, *ua.ActivateSessionRequest, *ua.CloseSessionRequest,
			*ua.OpenSecureChannelRequest, *ua.CloseSecureChannelRequest, *ua.PublishRequest:
			return // they change the state this target relies on
		}
		if !encodable(req) {
			return
		}
		if resp, err := rc.do(req); resp == nil {
			t.Fatalf("%T: no response: %v", req, err)
		}
		if _, err := rc.do(readReq(nodeTemp)); err != nil {
			t.Fatalf("Read after %T: %v", req, err)
		}
	})
}

// encodable reports whether gopcua's client can encode req (the decoder
// accepts values its encoder panics on).
func encodable(req ua.Request) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := ua.Encode(req)
	return err == nil
}

// getEndpointsWithLocales encodes a GetEndpoints request whose LocaleIds
// array claims count elements.
func getEndpointsWithLocales(t *testing.T, count uint32) []byte {
	b := encodeRequest(t, &ua.GetEndpointsRequest{LocaleIDs: []string{}, ProfileURIs: []string{}})
	// The body ends with LocaleIds (empty) and ProfileUris (empty): 4+4 bytes.
	binary.LittleEndian.PutUint32(b[len(b)-8:], count)
	return b
}

func TestHostileLengthsAreRefusedBeforeDecoding(t *testing.T) {
	ts := startServer(t, nil)
	w := dialWire(t, ts.Addr().String(), nil)

	// Before any session: an array claiming 2^31-1 elements (gopcua's
	// decoder would try to allocate tens of GB and abort the process).
	w.send("MSGF", 10, getEndpointsWithLocales(t, 0x7fffffff))
	w.wantFault(10, ua.StatusBadDecodingError)
	w.wantOK(11)

	// A Variant whose dimensions overflow int32 to match zero elements.
	variant := []byte{byte(ua.TypeIDInt32) | 0x80 | 0x40}
	variant = binary.LittleEndian.AppendUint32(variant, 0) // 0 elements
	variant = binary.LittleEndian.AppendUint32(variant, 2) // 2 dimensions
	variant = binary.LittleEndian.AppendUint32(variant, 1<<16)
	variant = binary.LittleEndian.AppendUint32(variant, 1<<16)
	w.send("MSGF", 12, writeOfVariant(t, variant))
	w.wantFault(12, ua.StatusBadDecodingError)

	// Variants nested 60000 deep.
	deep := make([]byte, 0, 60001)
	for range 60000 {
		deep = append(deep, byte(ua.TypeIDVariant))
	}
	deep = append(deep, 0)
	w.send("MSGF", 13, writeOfVariant(t, deep))
	w.wantFault(13, ua.StatusBadDecodingError)

	// An unknown service type.
	w.send("MSGF", 14, typeIDPrefix(9999))
	w.wantFault(14, ua.StatusBadServiceUnsupported)
	w.wantOK(15)

	// A chunk larger than the negotiated buffer ends the channel with ERR.
	w.send("MSGF", 16, make([]byte, 70000))
	if code := w.errCode(); code != ua.StatusBadTCPMessageTooLarge {
		t.Fatalf("oversized chunk: ERR %v", code)
	}
}

// writeOfVariant encodes a WriteRequest of one value and replaces the
// value's Variant with the raw bytes v.
func writeOfVariant(t *testing.T, v []byte) []byte {
	b := encodeRequest(t, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{
		NodeID: nodeTemp, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(int32(7))},
	}}})
	// The request ends with the DataValue: mask byte, then Variant
	// (type byte + 4-byte Int32).
	return append(b[:len(b)-5], v...)
}

func TestChunkedRequests(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Logger = discardLogger() })
	w := dialWire(t, ts.Addr().String(), nil)

	// A request in three chunks is reassembled.
	b := encodeRequest(t, &ua.GetEndpointsRequest{EndpointURL: "opc.tcp://localhost:1"})
	w.send("MSGC", 20, b[:5])
	w.send("MSGC", 20, b[5:9])
	w.send("MSGF", 20, b[9:])
	got, resp := w.recv()
	if ep, ok := resp.(*ua.GetEndpointsResponse); got != 20 || !ok || len(ep.Endpoints) != 1 {
		t.Fatalf("chunked request: got %T for %d", resp, got)
	}

	// An aborted request is forgotten; the next one is answered.
	w.send("MSGC", 21, b[:5])
	w.send("MSGA", 21, []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	w.wantOK(22)

	// A request beyond the chunk limit is refused, its remaining chunks
	// are dropped, and the channel goes on.
	for range maxChunkCount {
		w.send("MSGC", 23, []byte{0})
	}
	w.wantFault(23, ua.StatusBadRequestTooLarge)
	w.send("MSGF", 23, []byte{0})
	w.wantOK(24)
}

func TestResponseLargerThanClientLimitIsRefused(t *testing.T) {
	ts := startServer(t, nil)
	w := dialWire(t, ts.Addr().String(), &uacp.Hello{ReceiveBufSize: 65535, SendBufSize: 65535, MaxMessageSize: 300})
	w.send("MSGF", 30, encodeRequest(t, &ua.GetEndpointsRequest{}))
	w.wantFault(30, ua.StatusBadResponseTooLarge)
	w.send("MSGF", 31, encodeRequest(t, &ua.FindServersRequest{ServerURIs: []string{"urn:none"}}))
	if got, resp := w.recv(); got != 31 || resp.Header().ServiceResult != ua.StatusOK {
		t.Fatalf("small response: %T %v for %d", resp, resp.Header().ServiceResult, got)
	}
}

func TestTokenRenewal(t *testing.T) {
	ts := startServer(t, nil)
	w := dialWire(t, ts.Addr().String(), nil)
	old := w.token
	resp := w.open(ua.SecurityTokenRequestTypeRenew, w.scID, ua.SecurityPolicyURINone)
	if resp.SecurityToken.ChannelID != w.scID || resp.SecurityToken.TokenID == old {
		t.Fatalf("renewal: channel %d token %d (old %d)", resp.SecurityToken.ChannelID, resp.SecurityToken.TokenID, old)
	}
	w.wantOK(40) // the old token is still good until the new one is used
	w.token = resp.SecurityToken.TokenID
	w.wantOK(41)
	w.token = old // once the new token was used the old one is gone
	w.send("MSGF", 42, encodeRequest(t, &ua.GetEndpointsRequest{}))
	if code := w.errCode(); code != ua.StatusBadSecureChannelTokenUnknown {
		t.Fatalf("old token after switch: ERR %v", code)
	}
}

func TestSecurityPolicyOtherThanNoneIsRejected(t *testing.T) {
	ts := startServer(t, nil)
	c, err := net.Dial("tcp", ts.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	w := &wireClient{t: t, c: c}
	if err := writeUACP(c, "HELF", &uacp.Hello{ReceiveBufSize: 65535, SendBufSize: 65535}); err != nil {
		t.Fatal(err)
	}
	if typ, _ := w.frame(); typ != "ACKF" {
		t.Fatalf("got %s, want ACKF", typ)
	}
	w.writeOpen(ua.SecurityTokenRequestTypeIssue, 0, "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256")
	if code := w.errCode(); code != ua.StatusBadSecurityPolicyRejected {
		t.Fatalf("ERR %v, want BadSecurityPolicyRejected", code)
	}
}

// TestSubscriptionThroughRealEngine runs a subscription against the real
// engine: Publish goes out through the channel's Sender and a data change
// for the monitored value comes back. The client is otopcua's own
// (opcua/uaclient): gopcua's client can leave its publish loop paused when
// its first Publish (sent before any subscription exists) is answered
// BadNoSubscription while Subscribe resumes the loop — a race in the
// client, which made this test flaky under load.
func TestSubscriptionThroughRealEngine(t *testing.T) {
	store := newFakeStore()
	eng := subscription.New(engineSource{store}, subscription.Options{Logger: discardLogger()})
	t.Cleanup(eng.Close)
	srv, err := New(Config{ListenAddr: "127.0.0.1:0", Logger: discardLogger()}, store, eng)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ctx := testCtx(t)
	ch, err := uaclient.Dial(ctx, "opc.tcp://"+srv.Addr().String(), uaclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ses, err := uaclient.OpenSession(ctx, ch, uaclient.SessionParams{Name: "engine", Timeout: time.Minute, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ses.Call(ctx, &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 50, RequestedLifetimeCount: 300, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true}, 5*time.Second)
	if err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
	subID := resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	resp, err = ses.Call(ctx, &ua.CreateMonitoredItemsRequest{SubscriptionID: subID, TimestampsToReturn: ua.TimestampsToReturnBoth,
		ItemsToCreate: []*ua.MonitoredItemCreateRequest{opcua.NewMonitoredItemCreateRequestWithDefaults(nodeTemp, ua.AttributeIDValue, 1)}}, 5*time.Second)
	if err != nil || resp.(*ua.CreateMonitoredItemsResponse).Results[0].StatusCode != ua.StatusOK {
		t.Fatalf("CreateMonitoredItems: %v %v", err, resp)
	}
	poll.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		resp, err := ses.Call(ctx, &ua.PublishRequest{SubscriptionAcknowledgements: []*ua.SubscriptionAcknowledgement{}}, 5*time.Second)
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		pr := resp.(*ua.PublishResponse)
		if pr.SubscriptionID != subID {
			t.Fatalf("Publish answered for subscription %d, want %d", pr.SubscriptionID, subID)
		}
		if len(pr.NotificationMessage.NotificationData) > 0 {
			dc, ok := pr.NotificationMessage.NotificationData[0].Value.(*ua.DataChangeNotification)
			if !ok || len(dc.MonitoredItems) == 0 || dc.MonitoredItems[0].Value.Value.Value() != 21.5 {
				t.Fatalf("notification %+v, want Temp = 21.5", pr.NotificationMessage.NotificationData[0].Value)
			}
			return nil
		}
		return errors.New("only keep-alives, no data change notification")
	})
	if _, err := ses.Call(ctx, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{subID}}, 5*time.Second); err != nil {
		t.Fatalf("DeleteSubscriptions: %v", err)
	}
}
