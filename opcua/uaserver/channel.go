package uaserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uasc"
	"github.com/otopcua/otopcua/opcua/uawire"

	"github.com/otopcua/otopcua/opcua/chunksec"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver/uabin"
)

// Secure channel limits (OPC UA Part 6 §6.7).
const (
	// symHeaderLen is the size of a MSG chunk's headers: message header,
	// token id and sequence header.
	symHeaderLen = 12 + 4 + 8
	// maxPendingRequests is the number of multi-chunk requests one channel
	// may be receiving at once.
	maxPendingRequests = 16
)

// errChannelClosedByClient ends the read loop quietly.
var errChannelClosedByClient = errors.New("closed by the client")

// channel is one secure channel (one TCP connection) with security policy
// None. Its reader goroutine reassembles and checks chunks, answers
// OpenSecureChannel itself and queues service requests; its worker
// goroutine handles them in order. Responses are written by the worker
// and, for Publish, by the engine's goroutines; sendMu serialises writes.
//
// The channel is implemented here rather than with uasc.SecureChannel
// because uasc decodes a message before its caller can look at it, and
// gopcua's decoder trusts array lengths from the wire (see package uawire).
type channel struct {
	srv *Server
	id  uint32 // SecureChannelId, set by Server.addChannel before run
	// ident is the application identity the server presents on the
	// channel: the one of the local address the connection was accepted
	// on (set by serveConn before run; the server's own until then).
	// Read-only once the channel runs.
	ident   *appIdentity
	conn    net.Conn
	addr    string            // client IP address (per-address limits)
	ack     *uacp.Acknowledge // negotiated buffer sizes
	hello   *uacp.Hello       // the client's Hello: its limits for our responses
	sendMax uint32            // body bytes per chunk we send
	log     *slog.Logger

	ctx    context.Context // cancelled when the channel closes
	cancel context.CancelFunc
	queue  chan *call
	pub    *publishSender

	// Reader goroutine only.
	opened       bool
	pending      map[uint32]*partial // multi-chunk requests being received
	pendingBytes int
	ackAt        time.Time // Acknowledge sent
	openedAt     time.Time // first OpenSecureChannel answered
	lastRecv     time.Time // last complete chunk received

	hasSession atomic.Bool // a session was created or activated on this channel
	budget     *byteBudget // encoded bytes of requests queued or being served

	// sec is the channel's security policy, mode and client certificate,
	// set by the reader before opened, read-only afterwards.
	sec chanSecurity
	// recvSeq is the sequence number of the last chunk received; reader
	// goroutine only.
	recvSeq uint32

	tokMu sync.Mutex
	cur   *secToken // token of our messages and the client's; tokMu must be held.
	next  *secToken // token issued by a renewal, not yet used by the client; tokMu must be held.

	sendMu    sync.Mutex // serialises writes, their deadlines and seq
	seq       uint32     // last sequence number sent; sendMu must be held.
	closeOnce sync.Once
}

// partial is a request whose chunks are still arriving.
type partial struct {
	chunks  [][]byte
	size    int
	discard bool // too large: drop chunks until the final one
}

func newChannel(s *Server, conn net.Conn, addr string, ack *uacp.Acknowledge, hel *uacp.Hello) *channel {
	ctx, cancel := context.WithCancel(s.ctx)
	now := time.Now()
	ch := &channel{
		srv:     s,
		ident:   s.ids.own,
		conn:    conn,
		addr:    addr,
		ackAt:   now,
		budget:  newByteBudget(s.cfg.MaxRequestBytesPerChannel),
		ack:     ack,
		hello:   hel,
		sendMax: ack.SendBufSize - symHeaderLen,
		log:     s.log.With("remote", conn.RemoteAddr().String()),
		ctx:     ctx,
		cancel:  cancel,
		queue:   make(chan *call, max(s.cfg.MaxRequestsInFlightPerChannel-1, 0)),
		pending: make(map[uint32]*partial),
		sec:     chanSecurity{policy: ua.SecurityPolicyURINone, mode: ua.MessageSecurityModeNone},
		seq:     uint32(rand.IntN(1023)),
	}
	ch.pub = &publishSender{ch: ch, handles: make(map[uint32]uint32)}
	return ch
}

// run serves the channel until the client closes it, a protocol error
// occurs or the server closes. It returns after the worker has returned.
func (ch *channel) run() {
	defer ch.srv.removeChannel(ch)
	ch.log = ch.log.With("channel", ch.id)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch.work()
	}()
	err := ch.readLoop()
	ch.close()
	<-done
	switch {
	case errors.Is(err, errChannelClosedByClient), ch.srv.ctx.Err() != nil:
		ch.log.Debug("uaserver: channel closed", "reason", err)
	default:
		ch.srv.logs.Log(ch.log, slog.LevelInfo, ch.addr+" closed", time.Now(), "uaserver: channel closed", "reason", err)
	}
}

// readLoop reads chunks until an error ends the channel.
func (ch *channel) readLoop() error {
	for {
		b, err := ch.readFrame()
		if err != nil {
			return err
		}
		if err := ch.handleChunk(b); err != nil {
			return err
		}
	}
}

// readFrame reads one UACP message (header included) of at most the
// negotiated ReceiveBufSize. The wait for its header is bounded by the
// deadline of the channel's phase (see nextDeadline); a message that
// stops half way is cut after IdleChannelTimeout.
func (ch *channel) readFrame() ([]byte, error) {
	var hb [uacpHeaderLen]byte
	if err := ch.readHeader(hb[:]); err != nil {
		return nil, err
	}
	var h uacp.Header
	if _, err := h.Decode(hb[:]); err != nil {
		return nil, err
	}
	switch {
	case h.MessageType == uacp.MessageTypeError:
		return nil, errChannelClosedByClient
	case h.MessageSize > ch.ack.ReceiveBufSize:
		return nil, ch.abort(ua.StatusBadTCPMessageTooLarge, fmt.Sprintf("chunk of %d bytes", h.MessageSize))
	case h.MessageSize < uacpHeaderLen+symHeaderLen-8:
		return nil, ch.abort(ua.StatusBadTCPMessageTypeInvalid, fmt.Sprintf("chunk of %d bytes", h.MessageSize))
	}
	b := make([]byte, h.MessageSize)
	copy(b, hb[:])
	_ = ch.conn.SetReadDeadline(time.Now().Add(ch.srv.cfg.IdleChannelTimeout))
	if _, err := io.ReadFull(ch.conn, b[uacpHeaderLen:]); err != nil {
		if isTimeout(err) {
			ch.srv.counters.refuse(LimitIdleChannelTimeout)
			return nil, ch.abort(ua.StatusBadTimeout, "message stalled half way")
		}
		return nil, err
	}
	ch.lastRecv = time.Now()
	return b, nil
}

// readHeader reads the header of the next message. It waits until the
// deadline of the channel's phase and, when that passes, checks the phase
// again (a session may have been created meanwhile, a Publish request may
// be waiting): a channel whose deadline has really passed is closed with an
// ERR BadTimeout.
func (ch *channel) readHeader(hb []byte) error {
	n := 0
	for {
		deadline, limit := ch.nextDeadline(time.Now())
		_ = ch.conn.SetReadDeadline(deadline)
		k, err := io.ReadFull(ch.conn, hb[n:])
		n += k
		if err == nil {
			return nil
		}
		if !isTimeout(err) {
			return err
		}
		now := time.Now()
		if d, _ := ch.nextDeadline(now); now.Before(d) {
			continue
		}
		ch.srv.counters.refuse(limit)
		return ch.abort(ua.StatusBadTimeout, "no "+phaseWant[limit]+" within the deadline ("+limit+")")
	}
}

// phaseWant says what the client failed to send, by the limit that ends
// the phase.
var phaseWant = map[string]string{
	LimitOpenSecureChannelTimeout: "OpenSecureChannel",
	LimitCreateSessionTimeout:     "CreateSession or ActivateSession",
	LimitIdleChannelTimeout:       "request",
}

// nextDeadline returns when the client must have sent its next message and
// the limit that bounds it: OpenSecureChannel within
// OpenSecureChannelTimeout of the Acknowledge, a session within
// CreateSessionTimeout of the OpenSecureChannel, and then a request within
// IdleChannelTimeout of the last one, or of now while a Publish request of
// the channel waits for its answer. Reader goroutine only.
func (ch *channel) nextDeadline(now time.Time) (time.Time, string) {
	cfg := &ch.srv.cfg
	switch {
	case !ch.opened:
		return ch.ackAt.Add(cfg.OpenSecureChannelTimeout), LimitOpenSecureChannelTimeout
	case !ch.hasSession.Load():
		return ch.openedAt.Add(cfg.CreateSessionTimeout), LimitCreateSessionTimeout
	case ch.pub.waiting() > 0:
		return now.Add(cfg.IdleChannelTimeout), LimitIdleChannelTimeout
	}
	return ch.lastRecv.Add(cfg.IdleChannelTimeout), LimitIdleChannelTimeout
}

// handleChunk processes one chunk; an error closes the channel.
func (ch *channel) handleChunk(b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			ch.log.Error("uaserver: panic while reading a message", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic while reading: %v", r)
		}
	}()
	m := new(uasc.MessageChunk)
	if _, err := m.Decode(b); err != nil {
		return ch.abort(ua.StatusBadTCPMessageTypeInvalid, err.Error())
	}
	if m.MessageType == uasc.MessageTypeOpenSecureChannel {
		return ch.handleOpenChunk(m, b)
	}
	if m.MessageType == uasc.MessageTypeCloseSecureChannel && !ch.sec.secured() {
		return errChannelClosedByClient
	}
	if !ch.opened || m.SecureChannelID != ch.id {
		return ch.abort(ua.StatusBadTCPSecureChannelUnknown, "message for an unknown secure channel")
	}
	tok, code := ch.acceptToken(m.TokenID)
	if code != ua.StatusOK {
		ch.srv.counters.securityRefusals.Add(1)
		return ch.abort(code, "message with an unknown or expired token")
	}
	p, serr := ch.sec.unsealSym(tok, b)
	if serr != nil {
		ch.srv.counters.securityRefusals.Add(1)
		return ch.abort(serr.code, serr.reason)
	}
	reqID, body, err := ch.sequence(p)
	if err != nil {
		return err
	}
	if m.MessageType == uasc.MessageTypeCloseSecureChannel {
		return errChannelClosedByClient
	}
	return ch.handleMessage(m, reqID, body)
}

// sequence decodes the sequence header at the start of p, checks its
// number against the previous chunk's on a secured channel and returns the
// request id and the body after it. On a channel with policy None the
// number is not checked: anyone on the path can forge a chunk with the
// right one, so the check would protect nothing.
func (ch *channel) sequence(p []byte) (reqID uint32, body []byte, err error) {
	seq := new(uasc.SequenceHeader)
	n, err := seq.Decode(p)
	if err != nil {
		return 0, nil, ch.abort(ua.StatusBadDecodingError, "sequence header")
	}
	if ch.opened && ch.sec.secured() && !chunksec.SeqFollows(ch.recvSeq, seq.SequenceNumber) {
		ch.srv.counters.securityRefusals.Add(1)
		return 0, nil, ch.abort(ua.StatusBadSequenceNumberInvalid,
			fmt.Sprintf("sequence number %d after %d", seq.SequenceNumber, ch.recvSeq))
	}
	ch.recvSeq = seq.SequenceNumber
	return seq.RequestID, p[n:], nil
}

// handleOpenChunk checks, decrypts and answers an OpenSecureChannel chunk.
func (ch *channel) handleOpenChunk(m *uasc.MessageChunk, b []byte) error {
	if m.ChunkType != uasc.ChunkTypeFinal {
		return ch.abort(ua.StatusBadTCPMessageTypeInvalid, "chunked OpenSecureChannel")
	}
	if m.AsymmetricSecurityHeader == nil {
		return ch.abort(ua.StatusBadTCPMessageTypeInvalid, "OpenSecureChannel without an asymmetric security header")
	}
	sec := &chanSecurity{policy: ua.SecurityPolicyURINone, mode: ua.MessageSecurityModeNone}
	p := m.Data
	if m.SecurityPolicyURI != ua.SecurityPolicyURINone || ch.sec.secured() {
		if err := ch.guardOpen(b); err != nil {
			return err
		}
		var cur *chanSecurity
		if ch.opened {
			cur = &ch.sec
		}
		var serr *errSecurity
		if sec, p, serr = ch.srv.openSecurity(ch.ident, m, b, cur); serr != nil {
			ch.srv.guard.forgetRequest(digestOf('r', b))
			ch.srv.counters.securityRefusals.Add(1)
			ch.logRefusal(serr.code, serr.reason)
			return ch.abort(serr.code, serr.reason)
		}
	}
	reqID, body, err := ch.sequence(p)
	if err != nil {
		return err
	}
	return ch.handleOpen(m, reqID, body, sec)
}

// guardOpen runs the checks of a secured OpenSecureChannel chunk b that
// come before any private-key operation: the same bytes seen within
// SecureChannelReplayWindow answer ERR BadNonceInvalid (they carry a
// client nonce already used: Part 4 §5.5.2 lists that code for
// OpenSecureChannel), and an address beyond MaxSecureChannelOpensPerAddress
// (Issue) or MaxTokenRenewalsPerAddress (Renew) a second answers ERR
// BadTcpServerTooBusy (Part 6 §7.1.5: the server is too busy to
// process the request; the client may retry later). Both close the
// channel. A chunk that passes is remembered until its checks fail.
func (ch *channel) guardOpen(b []byte) error {
	now := time.Now()
	if !ch.srv.guard.claimRequest(digestOf('r', b), now) {
		ch.srv.counters.refuse(LimitReplayedOpenSecureChannel)
		ch.logRefusal(ua.StatusBadNonceInvalid, "OpenSecureChannel replayed")
		return ch.abort(ua.StatusBadNonceInvalid, "OpenSecureChannel replayed")
	}
	if ch.srv.guard.allow(ch.addr, ch.opened, now) {
		return nil
	}
	ch.srv.guard.forgetRequest(digestOf('r', b))
	limit, what := LimitSecureChannelOpensPerAddress, "secured OpenSecureChannel requests"
	if ch.opened {
		limit, what = LimitTokenRenewalsPerAddress, "security token renewals"
	}
	ch.srv.counters.refuse(limit)
	reason := "too many " + what + " from this address (" + limit + ")"
	ch.logRefusal(ua.StatusBadTCPServerTooBusy, reason)
	return ch.abort(ua.StatusBadTCPServerTooBusy, reason)
}

// logRefusal logs a refused OpenSecureChannel at most once a minute per
// client address and status, with the count of the ones not logged.
func (ch *channel) logRefusal(code ua.StatusCode, reason string) {
	ch.srv.logs.Log(ch.log, slog.LevelInfo, ch.addr+" opn "+code.Error(), time.Now(),
		"uaserver: OpenSecureChannel refused", "status", code, "reason", reason)
}

// handleOpen answers OpenSecureChannel (issue or renew), Part 4 §5.5.2, on
// a channel whose chunk asked for sec (its mode still to be read from the
// request).
func (ch *channel) handleOpen(m *uasc.MessageChunk, reqID uint32, body []byte, sec *chanSecurity) error {
	r, code := decodeRequest(body)
	req, ok := r.(*ua.OpenSecureChannelRequest)
	if code != ua.StatusOK || !ok {
		return ch.abort(ua.StatusBadDecodingError, "undecodable OpenSecureChannel")
	}
	if code, reason := ch.checkOpen(m, req, sec); code != ua.StatusOK {
		ch.srv.counters.securityRefusals.Add(1)
		ch.logRefusal(code, reason)
		return ch.abort(code, reason)
	}
	if sec.asym != nil && !ch.srv.guard.claimNonce(req.ClientNonce, time.Now()) {
		ch.srv.counters.refuse(LimitReplayedOpenSecureChannel)
		ch.logRefusal(ua.StatusBadNonceInvalid, "client nonce already used")
		return ch.abort(ua.StatusBadNonceInvalid, "client nonce already used")
	}
	sec.mode = req.SecurityMode
	var nonce []byte
	if sec.asym != nil {
		var err error
		if nonce, err = sec.asym.MakeNonce(); err != nil {
			return ch.abort(ua.StatusBadInternalError, "nonce: "+err.Error())
		}
	}
	sym, err := newSymmetric(sec.policy, nonce, req.ClientNonce)
	if err != nil {
		return ch.abort(ua.StatusBadSecurityChecksFailed, "key derivation: "+err.Error())
	}
	lifetime := ch.reviseLifetime(req.RequestedLifetime)
	tok := &secToken{
		id:      ch.srv.newTokenID(),
		expires: tokenExpiry(time.Now(), time.Duration(lifetime)*time.Millisecond),
		sym:     sym,
	}
	renewal := ch.opened
	if !renewal {
		ch.sec = *sec
		ch.sendMax = ch.sec.symMaxBody(sym, ch.ack.SendBufSize)
		ch.openedAt = time.Now()
		ch.opened = true
	} else {
		ch.sec.asym = sec.asym
		ch.srv.counters.tokensRenewed.Add(1)
	}
	ch.tokMu.Lock()
	if renewal {
		ch.next = tok
	} else {
		ch.cur = tok
	}
	ch.tokMu.Unlock()

	now := ch.srv.cfg.Clock.Now()
	resp := &ua.OpenSecureChannelResponse{
		ResponseHeader: newResponseHeader(requestHeader(req).RequestHandle, ua.StatusOK, now),
		SecurityToken: &ua.ChannelSecurityToken{
			ChannelID: ch.id, TokenID: tok.id, CreatedAt: now, RevisedLifetime: lifetime,
		},
		ServerNonce: nonce,
	}
	if resp.ServerNonce == nil {
		resp.ServerNonce = []byte{}
	}
	ch.sendMu.Lock()
	defer ch.sendMu.Unlock()
	if err := ch.writeOpen(reqID, resp); err != nil {
		return fmt.Errorf("send OpenSecureChannel response: %w", err)
	}
	return nil
}

// checkOpen checks an OpenSecureChannel request against the channel's
// state and the endpoints offered.
func (ch *channel) checkOpen(m *uasc.MessageChunk, req *ua.OpenSecureChannelRequest, sec *chanSecurity) (ua.StatusCode, string) {
	secCfg := &ch.srv.cfg.Security
	switch {
	case sec.policy == ua.SecurityPolicyURINone && req.SecurityMode != ua.MessageSecurityModeNone:
		return ua.StatusBadSecurityModeRejected, "policy None takes security mode None"
	case sec.policy != ua.SecurityPolicyURINone && !secCfg.offers(sec.policy, req.SecurityMode):
		return ua.StatusBadSecurityModeRejected, fmt.Sprintf("security mode %s is not offered with %s", req.SecurityMode, sec.policy)
	case req.RequestType == ua.SecurityTokenRequestTypeIssue && ch.opened:
		return ua.StatusBadSecureChannelIDInvalid, "channel already open"
	case req.RequestType == ua.SecurityTokenRequestTypeRenew && (!ch.opened || m.SecureChannelID != ch.id):
		return ua.StatusBadSecureChannelIDInvalid, "renewal of an unknown channel"
	case req.RequestType != ua.SecurityTokenRequestTypeIssue && req.RequestType != ua.SecurityTokenRequestTypeRenew:
		return ua.StatusBadRequestTypeInvalid, "unknown token request type"
	case ch.opened && req.SecurityMode != ch.sec.mode:
		return ua.StatusBadSecurityModeRejected, "renewal with another security mode"
	case sec.asym != nil && len(req.ClientNonce) != sec.asym.NonceLength():
		return ua.StatusBadNonceInvalid, fmt.Sprintf("client nonce of %d bytes, want %d", len(req.ClientNonce), sec.asym.NonceLength())
	}
	return ua.StatusOK, ""
}

// reviseLifetime bounds a requested token lifetime (ms) by
// Security.MinTokenLifetime and MaxTokenLifetime; 0 gets the maximum.
func (ch *channel) reviseLifetime(ms uint32) uint32 {
	lo := uint32(ch.srv.cfg.Security.MinTokenLifetime / time.Millisecond)
	hi := uint32(min(ch.srv.cfg.Security.MaxTokenLifetime/time.Millisecond, math.MaxUint32))
	switch {
	case ms == 0 || ms > hi:
		return hi
	case ms < lo:
		return lo
	}
	return ms
}

// handleMessage collects the chunks of a request and delivers complete
// ones.
func (ch *channel) handleMessage(m *uasc.MessageChunk, reqID uint32, body []byte) error {
	p := ch.pending[reqID]
	switch m.ChunkType {
	case uasc.ChunkTypeError: // MSGA: the client aborted the request
		ch.drop(reqID, p)
		return nil
	case uasc.ChunkTypeIntermediate:
		if p == nil {
			if len(ch.pending) >= maxPendingRequests {
				return ch.abort(ua.StatusBadTCPMessageTooLarge, "too many chunked requests at once")
			}
			p = &partial{}
			ch.pending[reqID] = p
		}
		if p.discard {
			return nil
		}
		if len(p.chunks)+2 > maxChunkCount || ch.pendingBytes+len(body) > maxMessageSize {
			ch.pendingBytes -= p.size
			*p = partial{discard: true}
			ch.fault(reqID, ua.StatusBadRequestTooLarge)
			return nil
		}
		p.chunks = append(p.chunks, body)
		p.size += len(body)
		ch.pendingBytes += len(body)
		return nil
	case uasc.ChunkTypeFinal:
		if p != nil {
			ch.drop(reqID, p)
			if p.discard {
				return nil
			}
			body = joinChunks(p.chunks, body)
			if len(body) > maxMessageSize {
				ch.fault(reqID, ua.StatusBadRequestTooLarge)
				return nil
			}
		}
		return ch.deliver(reqID, body)
	}
	return ch.abort(ua.StatusBadTCPMessageTypeInvalid, "unknown chunk type")
}

func (ch *channel) drop(reqID uint32, p *partial) {
	if p != nil {
		ch.pendingBytes -= p.size
		delete(ch.pending, reqID)
	}
}

func joinChunks(chunks [][]byte, last []byte) []byte {
	n := len(last)
	for _, c := range chunks {
		n += len(c)
	}
	b := make([]byte, 0, n)
	for _, c := range chunks {
		b = append(b, c...)
	}
	return append(b, last...)
}

// acceptToken returns the token id names if the client may use it: the
// current one until it expires, or the one of a renewal, whose first use
// makes it the current one and retires the old (Part 6 §6.7.4).
func (ch *channel) acceptToken(id uint32) (*secToken, ua.StatusCode) {
	ch.tokMu.Lock()
	defer ch.tokMu.Unlock()
	switch {
	case ch.next != nil && id == ch.next.id:
		ch.cur, ch.next = ch.next, nil
		return ch.cur, ua.StatusOK
	case ch.cur == nil || id != ch.cur.id:
		return nil, ua.StatusBadSecureChannelTokenUnknown
	case time.Now().After(ch.cur.expires):
		return nil, ua.StatusBadSecureChannelTokenUnknown
	}
	return ch.cur, ua.StatusOK
}

// deliver decodes a complete request and queues it for the worker. A
// request that cannot be decoded is answered with a ServiceFault.
func (ch *channel) deliver(reqID uint32, body []byte) error {
	req, code := decodeRequest(body)
	if code != ua.StatusOK {
		ch.log.Debug("uaserver: undecodable request", "request_id", reqID, "status", code)
		ch.fault(reqID, code)
		return nil
	}
	switch req.(type) {
	case *ua.CloseSecureChannelRequest:
		return errChannelClosedByClient
	case *ua.OpenSecureChannelRequest:
		return ch.abort(ua.StatusBadTCPMessageTypeInvalid, "OpenSecureChannel in a MSG message")
	}
	c := &call{ch: ch, reqID: reqID, req: req, typeID: ua.ServiceTypeID(req), hdr: requestHeader(req), size: len(body)}
	if err := ch.budget.acquire(ch.ctx, c.size); err != nil {
		return err
	}
	select {
	case ch.queue <- c:
		return nil
	case <-ch.ctx.Done():
		ch.budget.release(c.size)
		return ch.ctx.Err()
	}
}

// decodeRequest checks and decodes an encoded service request.
func decodeRequest(b []byte) (req ua.Request, code ua.StatusCode) {
	if code := uawire.CheckService(b); code != ua.StatusOK {
		return nil, code
	}
	defer func() {
		if recover() != nil {
			req, code = nil, ua.StatusBadDecodingError
		}
	}()
	_, v, err := ua.DecodeService(b)
	if err != nil {
		return nil, ua.StatusBadDecodingError
	}
	req, ok := v.(ua.Request)
	if !ok {
		return nil, ua.StatusBadServiceUnsupported
	}
	return req, ua.StatusOK
}

// work handles queued requests in arrival order. Requests still queued
// when the channel closes are abandoned: nobody would read their answers.
func (ch *channel) work() {
	for {
		select {
		case <-ch.ctx.Done():
			return
		case c := <-ch.queue:
			if ch.ctx.Err() != nil {
				return
			}
			ch.srv.dispatch(c)
			ch.budget.release(c.size)
		}
	}
}

// fault answers reqID with a ServiceFault whose RequestHandle is unknown.
func (ch *channel) fault(reqID uint32, code ua.StatusCode) {
	_ = ch.send(reqID, &ua.ServiceFault{ResponseHeader: newResponseHeader(0, code, ch.srv.cfg.Clock.Now())})
}

// abort sends an ERR message and returns an error that closes the channel.
// Like a failed handshake it half-closes and drains for a moment, so the
// client reads the ERR before the connection goes.
func (ch *channel) abort(code ua.StatusCode, reason string) error {
	ch.sendMu.Lock()
	_ = ch.conn.SetWriteDeadline(time.Now().Add(ch.srv.cfg.WriteTimeout))
	err := writeUACP(ch.conn, "ERRF", &uacp.Error{ErrorCode: uint32(code), Reason: reason})
	ch.sendMu.Unlock()
	if err == nil {
		linger(ch.conn)
	}
	return fmt.Errorf("%s: %s", reason, code)
}

// shut closes the channel from outside its goroutines, without waiting:
// an ERR of code and reason is sent unless a write is in progress (its
// client does not read: then the connection just closes), the channel
// stops sending, and the connection is half-closed and closed errLinger
// later, or as soon as the client closes its end, so the client reads the
// ERR before the connection goes. Safe for concurrent use.
func (ch *channel) shut(code ua.StatusCode, reason string) {
	go func() {
		// A write in progress ends soon unless its client stopped reading:
		// wait for it up to errLinger (a response sent a moment ago must
		// not cost the ERR), then give up and close.
		if !tryLockFor(&ch.sendMu, errLinger) {
			ch.close()
			return
		}
		if ch.ctx.Err() == nil {
			_ = ch.conn.SetWriteDeadline(time.Now().Add(errLinger))
			_ = writeUACP(ch.conn, "ERRF", &uacp.Error{ErrorCode: uint32(code), Reason: reason})
		}
		ch.cancel()
		ch.sendMu.Unlock()
		if cw, ok := ch.conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		time.AfterFunc(errLinger, ch.close)
	}()
}

// tryLockFor takes mu if it comes free within d.
func tryLockFor(mu *sync.Mutex, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !mu.TryLock() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// errResponseTooLarge means the encoded response exceeds MaxResponseSize
// or the client's MaxMessageSize or MaxChunkCount.
var errResponseTooLarge = errors.New("response exceeds the client's message limits")

// send writes resp as the answer to reqID within WriteTimeout. The response
// is encoded before sendMu is taken, so responses of one channel encode in
// parallel and only their writes are serialised. A response that cannot be
// encoded, or is too large for the client, is replaced by a ServiceFault; a
// failed write closes the channel. It returns ErrClosed once the channel is
// closed. Safe for concurrent use.
func (ch *channel) send(reqID uint32, resp ua.Response) error {
	if ch.ctx.Err() != nil {
		return ErrClosed
	}
	body, err := ch.encodeBody(resp)
	if err != nil {
		return ch.sendFault(reqID, resp, err)
	}
	defer putBody(body)
	ch.sendMu.Lock()
	defer ch.sendMu.Unlock()
	if ch.ctx.Err() != nil {
		return ErrClosed
	}
	if err := ch.writeMsg(reqID, *body); err != nil {
		ch.writeFailed(err)
		return err
	}
	return nil
}

// writeFailed closes the channel after a failed write; a client that read
// nothing for WriteTimeout counts as a refusal of that limit. sendMu must
// be held.
func (ch *channel) writeFailed(err error) {
	if isTimeout(err) {
		ch.srv.counters.refuse(LimitWriteTimeout)
		ch.log.Info("uaserver: client does not read its responses; channel closed", "write_timeout", ch.srv.cfg.WriteTimeout)
	}
	ch.close()
}

// sendFault answers reqID with a ServiceFault in place of resp, which
// failed to encode with err, and returns err (or the write's error).
func (ch *channel) sendFault(reqID uint32, resp ua.Response, err error) error {
	code := ua.StatusBadInternalError
	if errors.Is(err, errResponseTooLarge) {
		code = ua.StatusBadResponseTooLarge
		ch.srv.counters.refuse(LimitResponseSize)
	} else {
		ch.log.Error("uaserver: response could not be encoded", "response", fmt.Sprintf("%T", resp), "err", err)
	}
	handle := uint32(0)
	if h := resp.Header(); h != nil {
		handle = h.RequestHandle
	}
	f := &ua.ServiceFault{ResponseHeader: newResponseHeader(handle, code, ch.srv.cfg.Clock.Now())}
	body, ferr := ch.encodeBody(f)
	if ferr != nil {
		return ferr // unreachable: a ServiceFault always encodes
	}
	defer putBody(body)
	ch.sendMu.Lock()
	defer ch.sendMu.Unlock()
	if ch.ctx.Err() != nil {
		return ErrClosed
	}
	if werr := ch.writeMsg(reqID, *body); werr != nil {
		ch.writeFailed(werr)
		return werr
	}
	return err
}

// writeError is a failed socket write: the byte stream is broken.
type writeError struct{ err error }

func (e *writeError) Error() string { return "write: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// maxPooledBody is the largest encode buffer kept for reuse.
const maxPooledBody = 4 << 20

// bodyPool holds encode buffers (*[]byte) for encodeBody.
var bodyPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 64<<10)
	return &b
}}

func putBody(b *[]byte) {
	if cap(*b) <= maxPooledBody {
		*b = (*b)[:0]
		bodyPool.Put(b)
	}
}

// encodeBody encodes resp, type id first, into a pooled buffer the caller
// returns with putBody: Publish responses and faults with uabin's encoder,
// anything else with ua.Encode. Encoding failures (including panics of
// gopcua's encoder) and responses beyond the client's MaxMessageSize or
// MaxChunkCount return an error and no buffer.
func (ch *channel) encodeBody(resp ua.Response) (body *[]byte, err error) {
	typeID := responseTypeID(resp)
	if typeID == 0 {
		return nil, fmt.Errorf("unregistered response type %T", resp)
	}
	buf := bodyPool.Get().(*[]byte)
	defer func() {
		if r := recover(); r != nil {
			putBody(buf)
			body, err = nil, fmt.Errorf("panic while encoding: %v", r)
		}
	}()
	b, err := uabin.AppendResponse((*buf)[:0], typeID, resp)
	*buf = b
	if err != nil {
		putBody(buf)
		return nil, err
	}
	chunks := (len(b) + int(ch.sendMax) - 1) / int(ch.sendMax)
	if len(b) > ch.srv.cfg.MaxResponseSize ||
		(ch.hello.MaxChunkCount > 0 && chunks > int(ch.hello.MaxChunkCount)) ||
		(ch.hello.MaxMessageSize > 0 && len(b) > int(ch.hello.MaxMessageSize)) {
		putBody(buf)
		return nil, errResponseTooLarge
	}
	return buf, nil
}

// responseTypeID is the binary encoding id of resp; the hot types skip
// gopcua's registry, which parses a NodeId string on every lookup.
func responseTypeID(resp ua.Response) uint16 {
	switch resp.(type) {
	case *ua.PublishResponse:
		return id.PublishResponse_Encoding_DefaultBinary
	case *ua.ServiceFault:
		return id.ServiceFault_Encoding_DefaultBinary
	}
	return ua.ServiceTypeID(resp)
}

// writeMsg frames body (an encoded service) as MSG chunks of at most
// sendMax body bytes, numbers them, secures them with the current token and
// writes them with one vectored write within WriteTimeout. Failures are
// *writeError. sendMu must be held.
func (ch *channel) writeMsg(reqID uint32, body []byte) error {
	n := max((len(body)+int(ch.sendMax)-1)/int(ch.sendMax), 1)
	ch.tokMu.Lock()
	tok := ch.cur
	ch.tokMu.Unlock()
	var hdrs []byte
	if !ch.sec.secured() {
		hdrs = make([]byte, n*symHeaderLen)
	}
	bufs := make(net.Buffers, 0, 2*n)
	for i := range n {
		part := body[min(i*int(ch.sendMax), len(body)):min((i+1)*int(ch.sendMax), len(body))]
		var h []byte
		if hdrs != nil {
			h = hdrs[i*symHeaderLen : (i+1)*symHeaderLen]
		} else {
			h = make([]byte, symHeaderLen, symHeaderLen+len(part)+chunkSecurityRoom)
		}
		copy(h, "MSGC")
		if i == n-1 {
			h[3] = uasc.ChunkTypeFinal
		}
		binary.LittleEndian.PutUint32(h[4:], uint32(symHeaderLen+len(part)))
		binary.LittleEndian.PutUint32(h[8:], ch.id)
		binary.LittleEndian.PutUint32(h[12:], tok.id)
		binary.LittleEndian.PutUint32(h[16:], ch.nextSeq())
		binary.LittleEndian.PutUint32(h[20:], reqID)
		if hdrs != nil {
			bufs = append(bufs, h, part)
			continue
		}
		c, err := ch.sec.sealSym(tok, append(h, part...))
		if err != nil {
			return &writeError{err}
		}
		bufs = append(bufs, c)
	}
	_ = ch.conn.SetWriteDeadline(time.Now().Add(ch.srv.cfg.WriteTimeout))
	defer func() { _ = ch.conn.SetWriteDeadline(time.Time{}) }()
	if _, err := bufs.WriteTo(ch.conn); err != nil {
		return &writeError{err}
	}
	return nil
}

// chunkSecurityRoom is the most a secured chunk grows beyond its plaintext:
// padding (a cipher block and two size bytes) and a signature.
const chunkSecurityRoom = 16 + 2 + 64

// writeOpen encodes, secures and writes an OpenSecureChannel response (one
// chunk, asymmetric security header with our certificate when the channel
// is secured). sendMu must be held.
func (ch *channel) writeOpen(reqID uint32, resp *ua.OpenSecureChannelResponse) error {
	asymHdr := uasc.NewAsymmetricSecurityHeader(ua.SecurityPolicyURINone, nil, nil)
	if ch.sec.asym != nil {
		asymHdr = uasc.NewAsymmetricSecurityHeader(ch.sec.policy, ch.ident.cert, ch.sec.thumbprint)
	}
	hdr := &uasc.MessageHeader{
		Header:                   uasc.NewHeader(uasc.MessageTypeOpenSecureChannel, uasc.ChunkTypeFinal, ch.id),
		AsymmetricSecurityHeader: asymHdr,
		SequenceHeader:           uasc.NewSequenceHeader(ch.nextSeq(), reqID),
	}
	m := &uasc.Message{MessageHeader: hdr, TypeID: ua.NewFourByteExpandedNodeID(0, id.OpenSecureChannelResponse_Encoding_DefaultBinary), Service: resp}
	chunk, err := m.Encode()
	if err != nil {
		return err
	}
	if chunk, err = ch.sec.sealOpen(chunk, 12+asymHdr.Len()); err != nil {
		return err
	}
	_ = ch.conn.SetWriteDeadline(time.Now().Add(ch.srv.cfg.WriteTimeout))
	defer func() { _ = ch.conn.SetWriteDeadline(time.Time{}) }()
	if _, err := ch.conn.Write(chunk); err != nil {
		return &writeError{err}
	}
	return nil
}

// nextSeq returns the next sequence number (Part 6 §6.7.2.4: wraps to a
// value below 1024 before reaching 2^32-1024). sendMu must be held.
func (ch *channel) nextSeq() uint32 {
	ch.seq++
	if ch.seq > math.MaxUint32-1024 {
		ch.seq = 1
	}
	return ch.seq
}

// close cancels the channel's context and closes its connection; the
// reader and worker then return. Safe to call more than once.
func (ch *channel) close() {
	ch.closeOnce.Do(func() {
		ch.cancel()
		_ = ch.conn.Close()
	})
}

// publishSender answers Publish requests of one channel for the engine.
type publishSender struct {
	ch      *channel
	mu      sync.Mutex
	handles map[uint32]uint32 // request id → RequestHandle of a Publish not yet answered; mu must be held.
}

var _ subscription.Sender = (*publishSender)(nil)

// waiting returns how many Publish requests of the channel wait for their
// answer.
func (p *publishSender) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.handles)
}

// expect records the RequestHandle of a Publish the engine will answer.
func (p *publishSender) expect(reqID, handle uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.handles[reqID] = handle
}

// SendResponse answers the Publish with request id reqID, stamping the
// request's RequestHandle and a Timestamp on resp. It returns an error once
// the channel is closed.
func (p *publishSender) SendResponse(reqID uint32, resp ua.Response) error {
	if isNil(resp) {
		return errors.New("uaserver: nil response")
	}
	p.mu.Lock()
	handle, ok := p.handles[reqID]
	delete(p.handles, reqID)
	p.mu.Unlock()
	if !ok && resp.Header() != nil {
		handle = resp.Header().RequestHandle
	}
	stampHeader(resp, handle, p.ch.srv.cfg.Clock.Now())
	return p.ch.send(reqID, resp)
}

// byteBudget bounds the encoded bytes of one channel's requests that are
// queued or being served. One goroutine (the channel's reader) acquires;
// the worker releases.
type byteBudget struct {
	max   int
	freed chan struct{} // signalled on release; capacity 1

	mu   sync.Mutex
	used int // mu must be held.
}

func newByteBudget(max int) *byteBudget {
	return &byteBudget{max: max, freed: make(chan struct{}, 1)}
}

// acquire waits until n bytes fit (a request arriving while nothing is
// held always fits) or ctx ends.
func (b *byteBudget) acquire(ctx context.Context, n int) error {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		b.mu.Unlock()
		select {
		case <-b.freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *byteBudget) release(n int) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	select {
	case b.freed <- struct{}{}:
	default:
	}
}
