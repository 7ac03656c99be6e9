package uaserver

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uasc"
)

// wireClient speaks the secure channel protocol by hand, so a test can
// send any bytes and see every answer, including those to requests a
// real client never sends.
type wireClient struct {
	t     *testing.T
	c     net.Conn
	scID  uint32
	token uint32
	seq   uint32
}

// dialWire connects, sends hello and opens a secure channel.
func dialWire(t *testing.T, addr string, hel *uacp.Hello) *wireClient {
	t.Helper()
	return dialWireFrom(t, addr, "", hel)
}

// dialWireFrom is dialWire from the local address ip ("" lets the kernel
// choose).
func dialWireFrom(t *testing.T, addr, ip string, hel *uacp.Hello) *wireClient {
	t.Helper()
	d := net.Dialer{}
	if ip != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if hel == nil {
		hel = &uacp.Hello{ReceiveBufSize: 65535, SendBufSize: 65535}
	}
	if err := writeUACP(c, "HELF", hel); err != nil {
		t.Fatal(err)
	}
	w := &wireClient{t: t, c: c, seq: 1}
	if typ, _ := w.frame(); typ != "ACKF" {
		t.Fatalf("got %s, want ACKF", typ)
	}
	resp := w.open(ua.SecurityTokenRequestTypeIssue, 0, ua.SecurityPolicyURINone)
	w.scID, w.token = resp.SecurityToken.ChannelID, resp.SecurityToken.TokenID
	return w
}

// frame reads one UACP message and returns its type ("MSGF") and bytes.
func (w *wireClient) frame() (string, []byte) {
	w.t.Helper()
	var hb [8]byte
	if _, err := io.ReadFull(w.c, hb[:]); err != nil {
		w.t.Fatalf("read header: %v", err)
	}
	n := binary.LittleEndian.Uint32(hb[4:])
	b := make([]byte, n)
	copy(b, hb[:])
	if _, err := io.ReadFull(w.c, b[8:]); err != nil {
		w.t.Fatalf("read body: %v", err)
	}
	return string(hb[:4]), b
}

// open sends OpenSecureChannel and returns the response.
func (w *wireClient) open(typ ua.SecurityTokenRequestType, scID uint32, policy string) *ua.OpenSecureChannelResponse {
	w.t.Helper()
	w.writeOpen(typ, scID, policy)
	kind, b := w.frame()
	if kind != "OPNF" {
		w.t.Fatalf("got %s, want OPNF", kind)
	}
	_, resp := decodeChunk(w.t, b)
	return resp.(*ua.OpenSecureChannelResponse)
}

func (w *wireClient) writeOpen(typ ua.SecurityTokenRequestType, scID uint32, policy string) {
	w.t.Helper()
	w.seq++
	m := &uasc.Message{
		MessageHeader: &uasc.MessageHeader{
			Header:                   uasc.NewHeader("OPN", 'F', scID),
			AsymmetricSecurityHeader: uasc.NewAsymmetricSecurityHeader(policy, nil, nil),
			SequenceHeader:           uasc.NewSequenceHeader(w.seq, w.seq),
		},
		TypeID: ua.NewFourByteExpandedNodeID(0, id.OpenSecureChannelRequest_Encoding_DefaultBinary),
		Service: &ua.OpenSecureChannelRequest{
			RequestHeader: newRequestHeader(), RequestType: typ,
			SecurityMode: ua.MessageSecurityModeNone, ClientNonce: []byte{}, RequestedLifetime: 60000,
		},
	}
	b, err := m.Encode()
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.c.Write(b); err != nil {
		w.t.Fatal(err)
	}
}

func newRequestHeader() *ua.RequestHeader {
	return &ua.RequestHeader{AuthenticationToken: ua.NewTwoByteNodeID(0), AdditionalHeader: ua.NewExtensionObject(nil)}
}

// encodeRequest returns the service encoding (type id, body) of req.
func encodeRequest(t *testing.T, req ua.Request) []byte {
	t.Helper()
	if req.Header() == nil {
		req.SetHeader(newRequestHeader())
	}
	b, err := ua.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	return append(typeIDPrefix(ua.ServiceTypeID(req)), b...)
}

// send writes one chunk of type typ ("MSGF", "MSGC", "MSGA") with body.
func (w *wireClient) send(typ string, reqID uint32, body []byte) {
	w.t.Helper()
	if _, err := w.c.Write(msgChunk(typ, w.scID, w.token, reqID, body)); err != nil {
		w.t.Fatal(err)
	}
}

// recv reads one MSG response and returns its request id and response.
func (w *wireClient) recv() (uint32, ua.Response) {
	w.t.Helper()
	kind, b := w.frame()
	if kind != "MSGF" {
		w.t.Fatalf("got %s %q, want MSGF", kind, b)
	}
	return decodeChunk(w.t, b)
}

// errCode reads an ERR message and returns its status.
func (w *wireClient) errCode() ua.StatusCode {
	w.t.Helper()
	kind, b := w.frame()
	if kind != "ERRF" {
		w.t.Fatalf("got %s, want ERRF", kind)
	}
	var e uacp.Error
	if _, err := e.Decode(b[8:]); err != nil {
		w.t.Fatal(err)
	}
	return ua.StatusCode(e.ErrorCode)
}

func decodeChunk(t *testing.T, b []byte) (uint32, ua.Response) {
	t.Helper()
	m := new(uasc.MessageChunk)
	if _, err := m.Decode(b); err != nil {
		t.Fatal(err)
	}
	seq := new(uasc.SequenceHeader)
	n, err := seq.Decode(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := ua.DecodeService(m.Data[n:])
	if err != nil {
		t.Fatalf("decode response: %v", err)
	}
	return seq.RequestID, v.(ua.Response)
}

// wantFault reads the next response and checks it is a ServiceFault with
// code for reqID.
func (w *wireClient) wantFault(reqID uint32, code ua.StatusCode) {
	w.t.Helper()
	got, resp := w.recv()
	f, ok := resp.(*ua.ServiceFault)
	if got != reqID || !ok || f.ResponseHeader.ServiceResult != code {
		w.t.Fatalf("got %T (%v) for request %d, want ServiceFault %v for %d", resp, resp.Header().ServiceResult, got, code, reqID)
	}
}

// wantOK sends a GetEndpoints and checks it is answered: the channel works.
func (w *wireClient) wantOK(reqID uint32) {
	w.t.Helper()
	w.send("MSGF", reqID, encodeRequest(w.t, &ua.GetEndpointsRequest{}))
	got, resp := w.recv()
	if _, ok := resp.(*ua.GetEndpointsResponse); !ok || got != reqID {
		w.t.Fatalf("got %T for %d, want GetEndpointsResponse for %d", resp, got, reqID)
	}
}
