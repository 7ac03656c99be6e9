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
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/chunksec"
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
	// Security signs (and encrypts) the channel. Default (nil): security
	// policy None.
	Security *Security
	// Clock schedules token renewals. Default: the real clock.
	Clock clockwork.Clock
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
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
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

// Channel is an OPC UA secure channel: security policy None, or the
// policy and mode of Options.Security.
type Channel struct {
	opts     Options
	endpoint string
	conn     *uacp.Conn
	r        *bufio.Reader
	sec      *chanSec // nil for None; fixed by Dial

	chanID  uint32
	bufSize uint32 // largest chunk we send
	maxBody uint32 // body bytes per sent chunk; fixed by Dial
	reqID   atomic.Uint32

	wmu sync.Mutex // guards seq and writes to conn; taken before tmu
	seq uint32     // wmu must be held.

	tmu      sync.Mutex
	send     *token            // secures what we send; tmu must be held.
	recv     map[uint32]*token // tokens the server may use (current and previous); tmu must be held.
	renewals atomic.Int64
	renewing clockwork.Timer // tmu must be held.

	// rseq is the sequence number of the last chunk received; lastSeqOK
	// says whether one was. Only open (before the reader starts) and the
	// reader goroutine touch them.
	rseq      uint32
	rseqKnown bool

	failOnce sync.Once
	failErr  error // why the channel was failed; set before the conn is closed

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
		recv:     make(map[uint32]*token),
		pending:  make(map[uint32]chan result),
		done:     make(chan struct{}),
	}
	if opts.Security != nil {
		if c.sec, err = newChanSec(opts.Security); err != nil {
			conn.Close()
			return nil, err
		}
	}
	// The server's receive buffer bounds the chunks we send.
	c.bufSize = min(conn.ReceiveBufSize(), opts.ChunkSize)
	if c.bufSize < 8192 {
		c.bufSize = 8192 // Part 6 minimum
	}
	if err := c.open(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	go c.readLoop()
	return c, nil
}

// Endpoint is the URL the channel was dialled with.
func (c *Channel) Endpoint() string { return c.endpoint }

// open sends OpenSecureChannel (Issue) and reads its response
// synchronously, before the reader goroutine starts.
func (c *Channel) open(ctx context.Context) error {
	reqID := c.reqID.Add(1)
	req, err := c.openRequest(reqID, ua.SecurityTokenRequestTypeIssue)
	if err != nil {
		return err
	}
	c.seq++
	b, err := c.sec.openChunk(0, c.seq, reqID, req)
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
	typ, raw, err := c.readChunk()
	if err != nil {
		return fmt.Errorf("uaclient: read OpenSecureChannel response: %w", err)
	}
	if typ != "OPNF" {
		return fmt.Errorf("uaclient: OpenSecureChannel answered with %s", typ)
	}
	_, body, err := c.openBody(raw)
	if err != nil {
		return err
	}
	resp, err := decodeOpenResponse(body)
	if err != nil {
		return err
	}
	tok, err := c.sec.newToken(req.ClientNonce, resp)
	if err != nil {
		return err
	}
	c.chanID = resp.SecurityToken.ChannelID
	c.maxBody = c.sec.maxBody(tok, c.bufSize)
	c.install(tok)
	return nil
}

// openRequest is an OpenSecureChannel request of type typ with a fresh
// client nonce.
func (c *Channel) openRequest(reqID uint32, typ ua.SecurityTokenRequestType) (*ua.OpenSecureChannelRequest, error) {
	nonce, err := c.sec.nonce()
	if err != nil {
		return nil, fmt.Errorf("uaclient: client nonce: %w", err)
	}
	mode, lifetime := ua.MessageSecurityModeNone, time.Hour
	if c.sec != nil {
		mode, lifetime = c.sec.mode, c.sec.lifetime
	}
	return &ua.OpenSecureChannelRequest{
		RequestHeader:         c.header(nil, reqID, c.opts.DialTimeout),
		ClientProtocolVersion: 0,
		RequestType:           typ,
		SecurityMode:          mode,
		ClientNonce:           nonce,
		RequestedLifetime:     uint32(lifetime / time.Millisecond),
	}, nil
}

// openBody checks an OpenSecureChannel response chunk and returns its
// request id and body.
func (c *Channel) openBody(raw []byte) (uint32, []byte, error) {
	p, err := c.sec.openPlain(raw)
	if err != nil {
		return 0, nil, err
	}
	if err := c.checkSeq(p); err != nil {
		return 0, nil, err
	}
	return binary.LittleEndian.Uint32(p[4:]), p[seqHeaderLen:], nil
}

// checkSeq checks the sequence number of a received chunk's sequence
// header p (Part 6 §6.7.2.4). Reader goroutine only.
func (c *Channel) checkSeq(p []byte) error {
	n := seqOf(p)
	if c.rseqKnown && !chunksec.SeqFollows(c.rseq, n) {
		return fmt.Errorf("%w: sequence number %d after %d", ErrSecurity, n, c.rseq)
	}
	c.rseq, c.rseqKnown = n, true
	return nil
}

// install makes tok the token of what we send, keeps it and the previous
// one for what we receive, and schedules its renewal.
func (c *Channel) install(tok *token) {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	for id := range c.recv {
		if c.send == nil || id != c.send.id {
			delete(c.recv, id)
		}
	}
	c.send = tok
	c.recv[tok.id] = tok
	if c.sec == nil || tok.lifetime <= 0 {
		return // a None channel's token is not renewed
	}
	select {
	case <-c.done:
		return
	default:
	}
	c.renewing = c.opts.Clock.AfterFunc(renewAfter(tok.lifetime), c.renew)
}

// Renewals is how many times the security token was renewed.
func (c *Channel) Renewals() int64 { return c.renewals.Load() }

// renew sends OpenSecureChannel (Renew) and installs the new token; a
// failure fails the channel.
func (c *Channel) renew() {
	reqID := c.reqID.Add(1)
	req, err := c.openRequest(reqID, ua.SecurityTokenRequestTypeRenew)
	if err != nil {
		c.fail(err)
		return
	}
	ch := make(chan result, 1)
	c.pmu.Lock()
	c.pending[reqID] = ch
	c.pmu.Unlock()
	if err := c.writeOpen(reqID, req); err != nil {
		c.fail(err)
		return
	}
	timer := c.opts.Clock.NewTimer(c.opts.DialTimeout)
	defer timer.Stop()
	var r result
	select {
	case r = <-ch:
	case <-timer.Chan():
		c.fail(fmt.Errorf("%w: OpenSecureChannel (Renew) after %v", ErrTimeout, c.opts.DialTimeout))
		return
	case <-c.done:
		return
	}
	if r.err != nil {
		c.fail(fmt.Errorf("uaclient: renew the security token: %w", r.err))
		return
	}
	resp, err := decodeOpenResponse(r.reply.Body)
	if err == nil && resp.SecurityToken.ChannelID != c.chanID {
		err = fmt.Errorf("%w: renewal answered for channel %d", ErrSecurity, resp.SecurityToken.ChannelID)
	}
	var tok *token
	if err == nil {
		tok, err = c.sec.newToken(req.ClientNonce, resp)
	}
	if err != nil {
		c.fail(fmt.Errorf("uaclient: renew the security token: %w", err))
		return
	}
	c.wmu.Lock() // no chunk is half-sent with the old token
	c.install(tok)
	c.wmu.Unlock()
	c.renewals.Add(1)
}

// writeOpen sends an OpenSecureChannel request on the open channel.
func (c *Channel) writeOpen(reqID uint32, req *ua.OpenSecureChannelRequest) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return c.doneErr
	default:
	}
	c.seq++
	b, err := c.sec.openChunk(c.chanID, c.seq, reqID, req)
	if err != nil {
		return fmt.Errorf("uaclient: encode OpenSecureChannel: %w", err)
	}
	c.conn.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout))
	if _, err := c.conn.Write(b); err != nil {
		c.conn.Close()
		return fmt.Errorf("%w: write: %v", ErrClosed, err)
	}
	return nil
}

// fail closes the connection for err; the reader then ends the channel
// with it. Only the first cause is kept.
func (c *Channel) fail(err error) {
	c.failOnce.Do(func() {
		c.failErr = err
		c.conn.Close()
	})
}

// readChunk reads one chunk and returns its type ("MSGF", "OPNC", ...)
// and the whole chunk, message header included.
func (c *Channel) readChunk() (typ string, raw []byte, err error) {
	var hdr [8]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return "", nil, err
	}
	typ = string(hdr[:4])
	size := binary.LittleEndian.Uint32(hdr[4:8])
	if typ[:3] == "ERR" {
		if size < 16 || size > 1<<20 {
			return typ, nil, fmt.Errorf("uaclient: ERR message of %d bytes", size)
		}
		body := make([]byte, size-8)
		if _, err := io.ReadFull(c.r, body); err != nil {
			return typ, nil, err
		}
		e := new(uacp.Error)
		if _, err := e.Decode(body); err != nil {
			return typ, nil, fmt.Errorf("uaclient: decode ERR: %w", err)
		}
		return typ, nil, fmt.Errorf("uaclient: server sent ERR: %w", e)
	}
	if size < msgHeaderLen+symHeaderLen+seqHeaderLen || int(size) > c.opts.MaxMessageSize {
		return typ, nil, fmt.Errorf("uaclient: %s chunk of %d bytes", typ, size)
	}
	raw = make([]byte, size)
	copy(raw, hdr[:])
	if _, err := io.ReadFull(c.r, raw[8:]); err != nil {
		return typ, nil, err
	}
	return typ, raw, nil
}

// msgBody checks a MSG chunk (token, signature, encryption, sequence
// number) and returns its request id and body.
func (c *Channel) msgBody(raw []byte) (uint32, []byte, error) {
	if id := binary.LittleEndian.Uint32(raw[8:]); id != c.chanID {
		return 0, nil, fmt.Errorf("%w: chunk for channel %d, ours is %d", ErrSecurity, id, c.chanID)
	}
	tokID := binary.LittleEndian.Uint32(raw[msgHeaderLen:])
	c.tmu.Lock()
	tok := c.recv[tokID]
	c.tmu.Unlock()
	if tok == nil {
		return 0, nil, fmt.Errorf("%w: chunk with unknown token %d", ErrSecurity, tokID)
	}
	p, err := c.sec.msgPlain(tok, raw)
	if err != nil {
		return 0, nil, err
	}
	if err := c.checkSeq(p); err != nil {
		return 0, nil, err
	}
	return binary.LittleEndian.Uint32(p[4:]), p[seqHeaderLen:], nil
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
		var raw, body []byte
		var reqID uint32
		typ, raw, err = c.readChunk()
		if err != nil {
			break
		}
		switch typ {
		case "OPNF":
			reqID, body, err = c.openBody(raw)
		case "MSGC", "MSGF", "MSGA":
			reqID, body, err = c.msgBody(raw)
		default:
			err = fmt.Errorf("uaclient: chunk type %q", typ)
		}
		if err != nil {
			break
		}
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
	c.fail(err)
	c.doneErr = fmt.Errorf("%w: %w", ErrClosed, c.failErr)
	c.tmu.Lock()
	if c.renewing != nil {
		c.renewing.Stop()
	}
	c.tmu.Unlock()
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
			SymmetricSecurityHeader: uasc.NewSymmetricSecurityHeader(0), // set by write
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
	c.tmu.Lock()
	tok := c.send
	c.tmu.Unlock()
	c.conn.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout))
	for _, b := range chunks {
		c.seq++
		binary.LittleEndian.PutUint32(b[msgHeaderLen:], tok.id)
		binary.LittleEndian.PutUint32(b[msgHeaderLen+symHeaderLen:], c.seq)
		b, err := c.sec.sealMsg(tok, b)
		if err != nil {
			c.fail(fmt.Errorf("uaclient: secure a chunk: %w", err))
			return fmt.Errorf("%w: secure a chunk: %v", ErrClosed, err)
		}
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
				SymmetricSecurityHeader: uasc.NewSymmetricSecurityHeader(0), // set by write
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
