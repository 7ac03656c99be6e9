package uaserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uasc"

	"github.com/otopcua/otopcua/opcua/subscription"
)

// channel is one secure channel (one TCP connection). Its reader goroutine
// decodes requests and queues them; its worker goroutine handles them in
// order. Responses are written by the worker and, for Publish, by the
// subscription engine's goroutines; sendMu serialises the writes.
type channel struct {
	srv      *Server
	id       uint32 // SecureChannelId, set by Server.addChannel before run
	tokenID  uint32 // TokenId, set by Server.addChannel before run
	conn     *uacp.Conn
	helloURL string // EndpointUrl of the client's Hello
	log      *slog.Logger

	// scfg is the uasc configuration; sc.Receive rewrites its security
	// fields on every OpenSecureChannel. Only the reader goroutine reads it.
	scfg *uasc.Config
	sc   *uasc.SecureChannel // set by run before any request is queued

	ctx    context.Context // cancelled when the channel closes
	cancel context.CancelFunc
	queue  chan *call
	pub    *publishSender

	sendMu    sync.Mutex // serialises response writes and their deadlines
	closeOnce sync.Once
}

func newChannel(s *Server, conn *uacp.Conn, helloURL string) *channel {
	ctx, cancel := context.WithCancel(s.ctx)
	ch := &channel{
		srv:      s,
		conn:     conn,
		helloURL: helloURL,
		log:      s.log.With("remote", conn.RemoteAddr().String()),
		scfg: &uasc.Config{
			SecurityPolicyURI: ua.SecurityPolicyURINone,
			SecurityMode:      ua.MessageSecurityModeNone,
			RequestTimeout:    s.cfg.WriteTimeout,
		},
		ctx:    ctx,
		cancel: cancel,
		queue:  make(chan *call, max(s.cfg.MaxRequestsInFlightPerChannel-1, 0)),
	}
	ch.pub = &publishSender{ch: ch, handles: make(map[uint32]uint32)}
	return ch
}

// run serves the channel until the client closes it, an unrecoverable
// error occurs, or the server closes. It returns after the worker has
// returned.
func (ch *channel) run() {
	defer ch.srv.removeChannel(ch)
	defer ch.close()
	ch.log = ch.log.With("channel", ch.id)

	seq := uint32(rand.IntN(1023) + 1)
	sc, err := uasc.NewServerSecureChannel(ch.helloURL, ch.conn, ch.scfg, make(chan error, 1), ch.id, seq, ch.tokenID)
	if err != nil {
		ch.log.Warn("uaserver: secure channel setup failed", "err", err)
		return
	}
	ch.sc = sc
	ch.log.Debug("uaserver: channel open")

	done := make(chan struct{})
	go func() {
		defer close(done)
		ch.work()
	}()
	ch.readLoop()
	ch.close()
	<-done
	ch.log.Debug("uaserver: channel closed")
}

// readLoop decodes requests and queues them for the worker.
func (ch *channel) readLoop() {
	for {
		msg, err := ch.receive()
		if err != nil {
			ch.log.Error("uaserver: closing channel", "err", err)
			return
		}
		if msg.Err != nil {
			if !ch.receiveFailed(msg) {
				return
			}
			continue
		}
		if ch.scfg.SecurityPolicyURI != ua.SecurityPolicyURINone || ch.scfg.SecurityMode != ua.MessageSecurityModeNone {
			ch.log.Warn("uaserver: closing channel: only security policy None / mode None is offered",
				"policy", ch.scfg.SecurityPolicyURI, "mode", ch.scfg.SecurityMode)
			return
		}
		req := msg.Request()
		if req == nil {
			continue // OpenSecureChannel (answered inside uasc) or a stray response
		}
		if _, ok := req.(*ua.CloseSecureChannelRequest); ok {
			return
		}
		c := &call{ch: ch, reqID: msg.RequestID, req: req, typeID: ua.ServiceTypeID(req), hdr: requestHeader(req)}
		select {
		case ch.queue <- c:
		case <-ch.ctx.Done():
			return
		}
	}
}

// receive reads the next message; a panic while decoding hostile bytes
// becomes an error that closes this channel only.
func (ch *channel) receive() (msg *uasc.MessageBody, err error) {
	defer func() {
		if r := recover(); r != nil {
			ch.log.Error("uaserver: panic while decoding a message", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic while decoding: %v", r)
		}
	}()
	return ch.sc.Receive(ch.ctx), nil
}

// receiveFailed handles a message uasc could not deliver. It reports
// whether the channel can go on: a request that was read completely but
// could not be decoded is answered with a ServiceFault; transport and
// security errors end the channel.
func (ch *channel) receiveFailed(msg *uasc.MessageBody) bool {
	err := msg.Err
	if errors.Is(err, io.EOF) || ch.ctx.Err() != nil {
		return false
	}
	if msg.RequestID == 0 {
		ch.log.Info("uaserver: closing channel", "err", err)
		return false
	}
	var code ua.StatusCode
	switch {
	case errors.As(err, &code) && code == ua.StatusBadServiceUnsupported:
		// A service type gopcua does not know.
	case errors.As(err, &code):
		return true // the client aborted the request (MSGA)
	default:
		code = ua.StatusBadDecodingError
	}
	ch.log.Debug("uaserver: undecodable request", "request_id", msg.RequestID, "err", err)
	_ = ch.send(msg.RequestID, &ua.ServiceFault{ResponseHeader: newResponseHeader(0, code, ch.srv.cfg.Clock.Now())})
	return true
}

// work handles queued requests in arrival order.
func (ch *channel) work() {
	for {
		select {
		case <-ch.ctx.Done():
			return
		case c := <-ch.queue:
			ch.srv.dispatch(c)
		}
	}
}

// send writes resp as the answer to reqID within WriteTimeout. A response
// that cannot be encoded is replaced by a ServiceFault BadInternalError; a
// failed write closes the channel. It returns ErrClosed once the channel
// is closed. Safe for concurrent use.
func (ch *channel) send(reqID uint32, resp ua.Response) error {
	ch.sendMu.Lock()
	defer ch.sendMu.Unlock()
	if ch.ctx.Err() != nil {
		return ErrClosed
	}
	err := ch.write(reqID, resp)
	if err == nil {
		return nil
	}
	if ch.connFailed(err) {
		ch.close()
		return err
	}
	ch.log.Error("uaserver: response could not be encoded", "response", fmt.Sprintf("%T", resp), "err", err)
	handle := uint32(0)
	if h := resp.Header(); h != nil {
		handle = h.RequestHandle
	}
	f := &ua.ServiceFault{ResponseHeader: newResponseHeader(handle, ua.StatusBadInternalError, ch.srv.cfg.Clock.Now())}
	if err2 := ch.write(reqID, f); err2 != nil {
		ch.close()
		return err2
	}
	return err
}

// write encodes and writes one response. sendMu must be held.
func (ch *channel) write(reqID uint32, resp ua.Response) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while encoding: %v", r)
		}
	}()
	_ = ch.conn.SetWriteDeadline(time.Now().Add(ch.srv.cfg.WriteTimeout))
	defer func() { _ = ch.conn.SetWriteDeadline(time.Time{}) }()
	return ch.sc.SendResponseWithContext(ch.ctx, reqID, resp)
}

// connFailed reports whether err from write means the byte stream is
// broken (as opposed to a response that could not be encoded).
func (ch *channel) connFailed(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || ch.ctx.Err() != nil
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
	if resp == nil {
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
