package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uasc"

	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/opcua/uawire"
)

// rawConn is one opc.tcp connection as a hostile client drives it: it
// writes exactly the bytes it is given, frames OPC UA messages itself (so
// that they can be corrupted before they are sent), and reads whatever the
// server answers under a deadline. opcua/uaclient is the well-behaved
// client; rawConn exists for what a proper client never does (silence
// after a Hello, fuzzed chunks, dropping the TCP connection without
// CloseSecureChannel).
//
// A rawConn is used by one goroutine.
type rawConn struct {
	c       *net.TCPConn
	r       *bufio.Reader
	url     string
	stop    func() bool // ends the close-on-cancel hook
	chanID  uint32
	token   uint32
	seq     uint32
	reqID   uint32
	maxBody uint32 // body bytes per MSG chunk the server accepts
}

// Chunk layout (Part 6 §6.7.2): message header (type, size, channel id),
// symmetric security header (token id), sequence header.
const (
	chunkHead   = 24
	uacpHead    = 8
	maxReadBody = 8 << 20 // largest response chunk this client reads
	// helloBufSize is the buffer size this client announces.
	helloBufSize = 0xffff
)

// dialRaw connects to endpoint ("opc.tcp://host:port") from localIP (""
// lets the kernel choose); ctx's end closes the connection, which makes
// every blocked read or write return.
func dialRaw(ctx context.Context, endpoint string, timeout time.Duration, localIP string) (*rawConn, error) {
	host := strings.TrimPrefix(endpoint, "opc.tcp://")
	d := net.Dialer{Timeout: timeout}
	if localIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(localIP)}
	}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	rc := &rawConn{c: tc, r: bufio.NewReaderSize(tc, 64<<10), url: endpoint, maxBody: 8192 - chunkHead}
	rc.stop = context.AfterFunc(ctx, func() { _ = tc.Close() })
	return rc, nil
}

// close closes the connection politely (FIN).
func (rc *rawConn) close() {
	rc.stop()
	_ = rc.c.Close()
}

// drop resets the connection (RST): the peer sees it vanish without a
// CloseSecureChannel or FIN.
func (rc *rawConn) drop() {
	rc.stop()
	_ = rc.c.SetLinger(0)
	_ = rc.c.Close()
}

// write sends b within timeout.
func (rc *rawConn) write(b []byte, timeout time.Duration) error {
	_ = rc.c.SetWriteDeadline(time.Now().Add(timeout))
	_, err := rc.c.Write(b)
	return err
}

// helloFrame is a valid Hello for endpoint.
func helloFrame(endpoint string) []byte {
	body, _ := (&uacp.Hello{ReceiveBufSize: helloBufSize, SendBufSize: helloBufSize, EndpointURL: endpoint}).Encode()
	return uacpFrame("HELF", body)
}

// uacpFrame prefixes body with a UACP header of type typ.
func uacpFrame(typ string, body []byte) []byte {
	b := make([]byte, uacpHead, uacpHead+len(body))
	copy(b, typ)
	binary.LittleEndian.PutUint32(b[4:], uint32(uacpHead+len(body)))
	return append(b, body...)
}

// hello sends a valid Hello and reads the Acknowledge.
func (rc *rawConn) hello(timeout time.Duration) error {
	if err := rc.write(helloFrame(rc.url), timeout); err != nil {
		return err
	}
	typ, body, err := rc.readFrame(timeout)
	if err != nil {
		return err
	}
	if typ != "ACKF" {
		return fmt.Errorf("Hello answered with %s", typ)
	}
	var ack uacp.Acknowledge
	if _, err := ack.Decode(body); err != nil {
		return fmt.Errorf("decode Acknowledge: %w", err)
	}
	if ack.ReceiveBufSize > chunkHead {
		rc.maxBody = min(ack.ReceiveBufSize, helloBufSize) - chunkHead
	}
	return nil
}

// open sends OpenSecureChannel (security None) and reads its response.
func (rc *rawConn) open(timeout time.Duration) error {
	rc.reqID++
	rc.seq++
	m := &uasc.Message{
		MessageHeader: &uasc.MessageHeader{
			Header:                   uasc.NewHeader(uasc.MessageTypeOpenSecureChannel, uasc.ChunkTypeFinal, 0),
			AsymmetricSecurityHeader: uasc.NewAsymmetricSecurityHeader(ua.SecurityPolicyURINone, nil, nil),
			SequenceHeader:           uasc.NewSequenceHeader(rc.seq, rc.reqID),
		},
		TypeID: ua.NewFourByteExpandedNodeID(0, id.OpenSecureChannelRequest_Encoding_DefaultBinary),
		Service: &ua.OpenSecureChannelRequest{
			RequestHeader:     requestHeader(nil, rc.reqID, timeout),
			RequestType:       ua.SecurityTokenRequestTypeIssue,
			SecurityMode:      ua.MessageSecurityModeNone,
			ClientNonce:       []byte{},
			RequestedLifetime: uint32(time.Hour / time.Millisecond),
		},
	}
	b, err := m.Encode()
	if err != nil {
		return err
	}
	if err := rc.write(b, timeout); err != nil {
		return err
	}
	typ, body, err := rc.readFrame(timeout)
	if err != nil {
		return err
	}
	if typ != "OPNF" {
		return fmt.Errorf("OpenSecureChannel answered with %s", typ)
	}
	// Channel id, then the asymmetric security header, then the sequence
	// header, then the body.
	var ash uasc.AsymmetricSecurityHeader
	n, err := ash.Decode(body[4:])
	if err != nil || len(body) < 4+n+8 {
		return errors.New("OpenSecureChannel response truncated")
	}
	_, svc, err := ua.DecodeService(body[4+n+8:])
	if err != nil {
		return fmt.Errorf("decode OpenSecureChannel response: %w", err)
	}
	resp, ok := svc.(*ua.OpenSecureChannelResponse)
	if !ok {
		return fmt.Errorf("OpenSecureChannel answered with %T", svc)
	}
	if s := resp.ResponseHeader.ServiceResult; s != ua.StatusOK {
		return s
	}
	rc.chanID, rc.token = resp.SecurityToken.ChannelID, resp.SecurityToken.TokenID
	return nil
}

func requestHeader(auth *ua.NodeID, handle uint32, timeout time.Duration) *ua.RequestHeader {
	if auth == nil {
		auth = ua.NewTwoByteNodeID(0)
	}
	return &ua.RequestHeader{
		AuthenticationToken: auth,
		Timestamp:           time.Now(),
		RequestHandle:       handle,
		TimeoutHint:         uint32(timeout / time.Millisecond),
		AdditionalHeader:    ua.NewExtensionObject(nil),
	}
}

// chunks encodes req as the MSG chunks of the next request, numbered.
func (rc *rawConn) chunks(req ua.Request, auth *ua.NodeID, timeout time.Duration) ([][]byte, error) {
	rc.reqID++
	req.SetHeader(requestHeader(auth, rc.reqID, timeout))
	m := &uasc.Message{
		MessageHeader: &uasc.MessageHeader{
			Header:                  uasc.NewHeader(uasc.MessageTypeMessage, uasc.ChunkTypeFinal, rc.chanID),
			SymmetricSecurityHeader: uasc.NewSymmetricSecurityHeader(rc.token),
			SequenceHeader:          uasc.NewSequenceHeader(0, rc.reqID),
		},
		TypeID:  ua.NewFourByteExpandedNodeID(0, ua.ServiceTypeID(req)),
		Service: req,
	}
	cs, err := m.EncodeChunks(rc.maxBody)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		rc.number(c)
	}
	return cs, nil
}

// number gives chunk c the next sequence number.
func (rc *rawConn) number(c []byte) {
	rc.seq++
	binary.LittleEndian.PutUint32(c[16:], rc.seq)
}

// msgChunk frames body as one final MSG chunk of the next request.
func (rc *rawConn) msgChunk(body []byte) []byte {
	rc.reqID++
	b := make([]byte, chunkHead, chunkHead+len(body))
	copy(b, "MSGF")
	binary.LittleEndian.PutUint32(b[4:], uint32(chunkHead+len(body)))
	binary.LittleEndian.PutUint32(b[8:], rc.chanID)
	binary.LittleEndian.PutUint32(b[12:], rc.token)
	binary.LittleEndian.PutUint32(b[20:], rc.reqID)
	rc.number(b)
	return append(b, body...)
}

// call sends req and returns its decoded response; a non-Good service
// result is the error.
func (rc *rawConn) call(req ua.Request, auth *ua.NodeID, timeout time.Duration) (ua.Response, error) {
	cs, err := rc.chunks(req, auth, timeout)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if err := rc.write(c, timeout); err != nil {
			return nil, err
		}
	}
	body, err := rc.readResponse(timeout)
	if err != nil {
		return nil, err
	}
	_, svc, err := ua.DecodeService(body)
	if err != nil {
		return nil, fmt.Errorf("decode response to %T: %w", req, err)
	}
	resp, ok := svc.(ua.Response)
	if !ok {
		return nil, fmt.Errorf("%T answered with %T", req, svc)
	}
	if s := resp.Header().ServiceResult; s != ua.StatusOK {
		return resp, s
	}
	return resp, nil
}

// readFrame reads one UACP frame (chunk) and returns its type and what
// follows the 8-byte header. An ERR frame is returned as a *uacp.Error.
func (rc *rawConn) readFrame(timeout time.Duration) (string, []byte, error) {
	_ = rc.c.SetReadDeadline(time.Now().Add(timeout))
	var h [uacpHead]byte
	if _, err := io.ReadFull(rc.r, h[:]); err != nil {
		return "", nil, err
	}
	typ := string(h[:4])
	size := binary.LittleEndian.Uint32(h[4:])
	if size < uacpHead || size > maxReadBody {
		return typ, nil, fmt.Errorf("%q frame of %d bytes", typ, size)
	}
	body := make([]byte, size-uacpHead)
	if _, err := io.ReadFull(rc.r, body); err != nil {
		return typ, nil, err
	}
	if strings.HasPrefix(typ, "ERR") {
		e := new(uacp.Error)
		if _, err := e.Decode(body); err != nil {
			return typ, nil, fmt.Errorf("undecodable ERR: %w", err)
		}
		return typ, nil, e
	}
	return typ, body, nil
}

// readResponse reads MSG chunks until a final one and returns the
// response body (from its type NodeId on), checked by uawire before
// anyone decodes it.
func (rc *rawConn) readResponse(timeout time.Duration) ([]byte, error) {
	var body []byte
	for {
		typ, b, err := rc.readFrame(timeout)
		if err != nil {
			return nil, err
		}
		if len(b) < chunkHead-uacpHead || !strings.HasPrefix(typ, "MSG") {
			return nil, fmt.Errorf("unexpected %q frame of %d bytes", typ, len(b))
		}
		part := b[chunkHead-uacpHead:]
		switch typ[3] {
		case 'C':
			body = append(body, part...)
			if len(body) > maxReadBody {
				return nil, errors.New("response too large")
			}
			continue
		case 'A':
			return nil, errors.New("server aborted the response")
		}
		body = append(body, part...)
		if code := uawire.CheckService(body); code != ua.StatusOK {
			return nil, fmt.Errorf("response refused by the wire check: %w", code)
		}
		return body, nil
	}
}

// answer reads what the server does after a hostile message, within
// timeout, and names it for the status histogram: "ERR <status>" for an
// ERR message, the service result of a response or ServiceFault, "closed"
// when the server closed or reset the connection, "no answer" when
// nothing came.
func (rc *rawConn) answer(timeout time.Duration) string {
	body, err := rc.readResponse(timeout)
	if err != nil {
		return outcome(err)
	}
	_, svc, err := ua.DecodeService(body)
	if err != nil {
		return "undecodable response"
	}
	if r, ok := svc.(ua.Response); ok {
		return statusName(r.Header().ServiceResult)
	}
	return fmt.Sprintf("%T", svc)
}

// outcome names err for the status histogram.
func outcome(err error) string {
	var ue *uacp.Error
	var st ua.StatusCode
	var ne net.Error
	switch {
	case err == nil:
		return "Good"
	case errors.As(err, &ue):
		return "ERR " + statusName(ua.StatusCode(ue.ErrorCode))
	case errors.As(err, &st):
		return statusName(st)
	case errors.Is(err, uaclient.ErrTimeout), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "no answer"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, uaclient.ErrClosed):
		return "closed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return "error: " + s
}

// statusName is the short name of a status code ("BadTooManySessions").
func statusName(st ua.StatusCode) string {
	if st == ua.StatusOK {
		return "Good"
	}
	if d, ok := ua.StatusCodes[st]; ok {
		return strings.TrimPrefix(d.Name, "Status")
	}
	if d, ok := ua.StatusCodes[st&0xFFFF0000]; ok {
		return strings.TrimPrefix(d.Name, "Status") + fmt.Sprintf("+0x%04X", uint32(st)&0xFFFF)
	}
	return fmt.Sprintf("0x%08X", uint32(st))
}
