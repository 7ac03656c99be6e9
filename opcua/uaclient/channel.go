package uaclient

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uasc"
	"github.com/otopcua/otopcua/opcua/uawire"
)

// Errors callers branch on.
var (
	// ErrTimeout: no response arrived within the request's timeout.
	ErrTimeout = errors.New("uaclient: request timed out")
	// ErrClosed: the channel is closed or its connection broke.
	ErrClosed = errors.New("uaclient: channel closed")
)

// Options tune a Channel. Zero values take the documented defaults.
type Options struct {
	// DialTimeout bounds TCP connect + Hello/Acknowledge + OpenSecureChannel.
	// Default: 10 s.
	DialTimeout time.Duration
	// ChunkSize is the receive buffer (largest chunk) announced in Hello, in
	// bytes. Default: 65535.
	ChunkSize uint32
	// MaxMessageSize is the largest response the channel assembles, in
	// bytes; larger ones fail their request. Default: 256 MiB.
	MaxMessageSize int
	// WriteTimeout bounds writing one request. Default: 10 s.
	WriteTimeout time.Duration
	// LocalIP is the address to connect from, e.g. "127.0.0.2" to appear
	// as another machine on loopback. Default: chosen by the kernel.
	LocalIP string
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = 0xffff
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = 256 << 20
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	return o
}

// Reply is a response body as it came off the wire.
type Reply struct {
	// Body starts with the response's type NodeId (ua.DecodeService input).
	Body []byte
	// At is when the last chunk of the response was read from the socket.
	At time.Time
	// First is when its first chunk was read (At for a single chunk).
	First time.Time
}

// Channel is an OPC UA secure channel with security policy None.
type Channel struct {
	opts     Options
	endpoint string
	conn     *uacp.Conn
	r        *bufio.Reader

	chanID, tokenID uint32
	maxBody         uint32 // body bytes per sent chunk
	reqID           atomic.Uint32

	wmu sync.Mutex // guards seq and writes to conn
	seq uint32     // wmu must be held.

	pmu     sync.Mutex
	pending map[uint32]chan result // pmu must be held.

	done    chan struct{} // closed when the reader stops
	doneErr error         // set before done is closed
	closing sync.Once
}

type result struct {
	reply Reply
	err   error
}

// chunk header sizes (Part 6, 6.7.2): message header, symmetric security
// header (token id), sequence header.
const (
	msgHeaderLen = 12
	symHeaderLen = 4
	seqHeaderLen = 8
	symChunkHead = msgHeaderLen + symHeaderLen + seqHeaderLen
)

// Dial connects to endpoint ("opc.tcp://host:port"), performs Hello /
// Acknowledge and opens a secure channel with security None.
func Dial(ctx context.Context, endpoint string, opts Options) (*Channel, error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	nd := &net.Dialer{Timeout: opts.DialTimeout}
	if opts.LocalIP != "" {
		ip := net.ParseIP(opts.LocalIP)
		if ip == nil {
			return nil, fmt.Errorf("uaclient: Options.LocalIP %q is not an IP address", opts.LocalIP)
		}
		nd.LocalAddr = &net.TCPAddr{IP: ip}
	}
	d := &uacp.Dialer{
		Dialer: nd,
		ClientACK: &uacp.Acknowledge{
			ReceiveBufSize: opts.ChunkSize,
			SendBufSize:    opts.ChunkSize,
			MaxMessageSize: 0, // no limit announced; enforced locally
			MaxChunkCount:  0,
		},
	}
	conn, err := d.Dial(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("uaclient: dial %s: %w", endpoint, err)
	}
	c := &Channel{
		opts:     opts,
		endpoint: endpoint,
		conn:     conn,
		r:        bufio.NewReaderSize(conn.TCPConn, 256<<10),
		pending:  make(map[uint32]chan result),
		done:     make(chan struct{}),
	}
	// The server's receive buffer bounds the chunks we send.
	chunk := min(conn.ReceiveBufSize(), opts.ChunkSize)
	if chunk < 8192 {
		chunk = 8192 // Part 6 minimum
	}
	c.maxBody = chunk - symChunkHead
	if err := c.open(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	go c.readLoop()
	return c, nil
}

// Endpoint is the URL the channel was dialled with.
func (c *Channel) Endpoint() string { return c.endpoint }

// open sends OpenSecureChannel and reads its response synchronously, before
// the reader goroutine starts.
func (c *Channel) open(ctx context.Context) error {
	reqID := c.reqID.Add(1)
	req := &ua.OpenSecureChannelRequest{
		RequestHeader:         c.header(nil, reqID, c.opts.DialTimeout),
		ClientProtocolVersion: 0,
		RequestType:           ua.SecurityTokenRequestTypeIssue,
		SecurityMode:          ua.MessageSecurityModeNone,
		ClientNonce:           []byte{},
		RequestedLifetime:     uint32(time.Hour / time.Millisecond),
	}
	c.seq++
	m := &uasc.Message{
		MessageHeader: &uasc.MessageHeader{
			Header:                   uasc.NewHeader(uasc.MessageTypeOpenSecureChannel, uasc.ChunkTypeFinal, 0),
			AsymmetricSecurityHeader: uasc.NewAsymmetricSecurityHeader(ua.SecurityPolicyURINone, nil, nil),
			SequenceHeader:           uasc.NewSequenceHeader(c.seq, reqID),
		},
		TypeID:  ua.NewFourByteExpandedNodeID(0, id.OpenSecureChannelRequest_Encoding_DefaultBinary),
		Service: req,
	}
	b, err := m.Encode()
	if err != nil {
		return fmt.Errorf("uaclient: encode OpenSecureChannel: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		c.conn.SetDeadline(dl)
		defer c.conn.SetDeadline(time.Time{})
	}
	if _, err := c.conn.Write(b); err != nil {
		return fmt.Errorf("uaclient: send OpenSecureChannel: %w", err)
	}
	typ, _, raw, err := c.readChunk()
	if err != nil {
		return fmt.Errorf("uaclient: read OpenSecureChannel response: %w", err)
	}
	if typ != "OPNF" {
		return fmt.Errorf("uaclient: OpenSecureChannel answered with %s", typ)
	}
	var ash uasc.AsymmetricSecurityHeader
	n, err := ash.Decode(raw)
	if err != nil {
		return fmt.Errorf("uaclient: OpenSecureChannel response security header: %w", err)
	}
	if len(raw) < n+seqHeaderLen {
		return errors.New("uaclient: OpenSecureChannel response truncated")
	}
	_, svc, err := ua.DecodeService(raw[n+seqHeaderLen:])
	if err != nil {
		return fmt.Errorf("uaclient: decode OpenSecureChannel response: %w", err)
	}
	resp, ok := svc.(*ua.OpenSecureChannelResponse)
	if !ok {
		return fmt.Errorf("uaclient: OpenSecureChannel answered with %T", svc)
	}
	if s := resp.ResponseHeader.ServiceResult; s != ua.StatusOK {
		return fmt.Errorf("uaclient: OpenSecureChannel: %w", s)
	}
	c.chanID = resp.SecurityToken.ChannelID
	c.tokenID = resp.SecurityToken.TokenID
	return nil
}

// readChunk reads one chunk and returns its type ("MSGF", "OPNC", ...), its
// secure channel id and what follows the 12-byte message header.
func (c *Channel) readChunk() (typ string, chanID uint32, rest []byte, err error) {
	var hdr [msgHeaderLen]byte
	if _, err := io.ReadFull(c.r, hdr[:8]); err != nil {
		return "", 0, nil, err
	}
	typ = string(hdr[:4])
	size := binary.LittleEndian.Uint32(hdr[4:8])
	if typ[:3] == "ERR" {
		if size < 16 || size > 1<<20 {
			return typ, 0, nil, fmt.Errorf("uaclient: ERR message of %d bytes", size)
		}
		body := make([]byte, size-8)
		if _, err := io.ReadFull(c.r, body); err != nil {
			return typ, 0, nil, err
		}
		e := new(uacp.Error)
		if _, err := e.Decode(body); err != nil {
			return typ, 0, nil, fmt.Errorf("uaclient: decode ERR: %w", err)
		}
		return typ, 0, nil, fmt.Errorf("uaclient: server sent ERR: %w", e)
	}
	if size < msgHeaderLen || int(size) > c.opts.MaxMessageSize {
		return typ, 0, nil, fmt.Errorf("uaclient: %s chunk of %d bytes", typ, size)
	}
	if _, err := io.ReadFull(c.r, hdr[8:12]); err != nil {
		return typ, 0, nil, err
	}
	rest = make([]byte, size-msgHeaderLen)
	if _, err := io.ReadFull(c.r, rest); err != nil {
		return typ, 0, nil, err
	}
	return typ, binary.LittleEndian.Uint32(hdr[8:12]), rest, nil
}

// readLoop assembles chunks into responses and hands each to the request
// waiting for it. It runs until the connection fails or is closed.
func (c *Channel) readLoop() {
	type part struct {
		body  []byte
		first time.Time
	}
	partial := make(map[uint32]part)
	var err error
	for {
		var typ string
		var rest []byte
		typ, _, rest, err = c.readChunk()
		if err != nil {
			break
		}
		if len(rest) < symHeaderLen+seqHeaderLen {
			err = fmt.Errorf("uaclient: %s chunk too short", typ)
			break
		}
		reqID := binary.LittleEndian.Uint32(rest[symHeaderLen+4:])
		body := rest[symHeaderLen+seqHeaderLen:]
		switch typ[3] {
		case 'C':
			p, ok := partial[reqID]
			if !ok {
				p.first = time.Now()
			}
			p.body = append(p.body, body...)
			if len(p.body) > c.opts.MaxMessageSize {
				delete(partial, reqID)
				c.deliver(reqID, result{err: fmt.Errorf("uaclient: response larger than %d bytes", c.opts.MaxMessageSize)})
				continue
			}
			partial[reqID] = p
		case 'A':
			delete(partial, reqID)
			var a uasc.MessageAbort
			a.Decode(body)
			c.deliver(reqID, result{err: fmt.Errorf("uaclient: server aborted the response: %w", ua.StatusCode(a.ErrorCode))})
		case 'F':
			at := time.Now()
			first := at
			if p, ok := partial[reqID]; ok {
				delete(partial, reqID)
				body = append(p.body, body...)
				first = p.first
			}
			c.deliver(reqID, result{reply: Reply{Body: body, At: at, First: first}})
		default:
			err = fmt.Errorf("uaclient: chunk type %q", typ)
		}
		if err != nil {
			break
		}
	}
	c.doneErr = fmt.Errorf("%w: %v", ErrClosed, err)
	close(c.done)
}

func (c *Channel) deliver(reqID uint32, r result) {
	c.pmu.Lock()
	ch, ok := c.pending[reqID]
	delete(c.pending, reqID)
	c.pmu.Unlock()
	if ok {
		ch <- r // buffered, one slot
	}
}

func (c *Channel) header(auth *ua.NodeID, reqID uint32, timeout time.Duration) *ua.RequestHeader {
	if auth == nil {
		auth = ua.NewTwoByteNodeID(0)
	}
	return &ua.RequestHeader{
		AuthenticationToken: auth,
		Timestamp:           time.Now(),
		RequestHandle:       reqID,
		TimeoutHint:         uint32(timeout / time.Millisecond),
		AdditionalHeader:    ua.NewExtensionObject(nil),
	}
}

// Request sends req with the session's authentication token (nil before a
// session exists) and waits at most timeout for its response. The request
// header is filled in here.
func (c *Channel) Request(ctx context.Context, req ua.Request, auth *ua.NodeID, timeout time.Duration) (Reply, error) {
	typeID := ua.ServiceTypeID(req)
	if typeID == 0 {
		return Reply{}, fmt.Errorf("uaclient: %T is not a registered service", req)
	}
	reqID := c.reqID.Add(1)
	req.SetHeader(c.header(auth, reqID, timeout))
	m := &uasc.Message{
		MessageHeader: &uasc.MessageHeader{
			Header:                  uasc.NewHeader(uasc.MessageTypeMessage, uasc.ChunkTypeFinal, c.chanID),
			SymmetricSecurityHeader: uasc.NewSymmetricSecurityHeader(c.tokenID),
			SequenceHeader:          uasc.NewSequenceHeader(0, reqID),
		},
		TypeID:  ua.NewFourByteExpandedNodeID(0, typeID),
		Service: req,
	}
	chunks, err := m.EncodeChunks(c.maxBody)
	if err != nil {
		return Reply{}, fmt.Errorf("uaclient: encode %T: %w", req, err)
	}
	ch := make(chan result, 1)
	c.pmu.Lock()
	c.pending[reqID] = ch
	c.pmu.Unlock()
	forget := func() {
		c.pmu.Lock()
		delete(c.pending, reqID)
		c.pmu.Unlock()
	}
	if err := c.write(chunks); err != nil {
		forget()
		return Reply{}, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.reply, r.err
	case <-timer.C:
		forget()
		return Reply{}, fmt.Errorf("%w: %T after %v", ErrTimeout, req, timeout)
	case <-ctx.Done():
		forget()
		return Reply{}, ctx.Err()
	case <-c.done:
		forget()
		return Reply{}, c.doneErr
	}
}

// write sends the chunks of one message, numbering them.
func (c *Channel) write(chunks [][]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return c.doneErr
	default:
	}
	c.conn.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout))
	for _, b := range chunks {
		c.seq++
		binary.LittleEndian.PutUint32(b[msgHeaderLen+symHeaderLen:], c.seq)
		if _, err := c.conn.Write(b); err != nil {
			c.conn.Close()
			return fmt.Errorf("%w: write: %v", ErrClosed, err)
		}
	}
	return nil
}

// Call sends req, decodes the response and returns it, or the service
// result when it is not Good (a ServiceFault included).
func (c *Channel) Call(ctx context.Context, req ua.Request, auth *ua.NodeID, timeout time.Duration) (ua.Response, error) {
	r, err := c.Request(ctx, req, auth, timeout)
	if err != nil {
		return nil, err
	}
	if code := uawire.CheckService(r.Body); code != ua.StatusOK {
		return nil, fmt.Errorf("uaclient: response to %T refused before decoding: %w", req, code)
	}
	_, svc, err := ua.DecodeService(r.Body)
	if err != nil {
		return nil, fmt.Errorf("uaclient: decode response to %T: %w", req, err)
	}
	resp, ok := svc.(ua.Response)
	if !ok {
		return nil, fmt.Errorf("uaclient: %T answered with %T", req, svc)
	}
	if s := resp.Header().ServiceResult; s != ua.StatusOK {
		return resp, fmt.Errorf("%T: %w", req, s)
	}
	return resp, nil
}

// Close sends CloseSecureChannel (without waiting) and closes the
// connection. Safe to call more than once.
func (c *Channel) Close() error {
	c.closing.Do(func() {
		reqID := c.reqID.Add(1)
		m := &uasc.Message{
			MessageHeader: &uasc.MessageHeader{
				Header:                  uasc.NewHeader(uasc.MessageTypeCloseSecureChannel, uasc.ChunkTypeFinal, c.chanID),
				SymmetricSecurityHeader: uasc.NewSymmetricSecurityHeader(c.tokenID),
				SequenceHeader:          uasc.NewSequenceHeader(0, reqID),
			},
			TypeID:  ua.NewFourByteExpandedNodeID(0, id.CloseSecureChannelRequest_Encoding_DefaultBinary),
			Service: &ua.CloseSecureChannelRequest{RequestHeader: c.header(nil, reqID, time.Second)},
		}
		if chunks, err := m.EncodeChunks(c.maxBody); err == nil {
			_ = c.write(chunks)
		}
		c.conn.Close()
	})
	<-c.done
	return nil
}
