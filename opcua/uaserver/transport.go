package uaserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
)

// Transport limits announced in the Acknowledge (OPC UA Part 6 §7.1.2).
const (
	// bufSize is the largest chunk the server sends or receives; the
	// negotiated size is the smaller of this and the client's.
	bufSize = 0xffff
	// minBufSize is the smallest buffer Part 6 allows a peer to announce.
	minBufSize = 8192
	// maxMessageSize is the largest request the server accepts.
	maxMessageSize = 4 << 20
	// maxChunkCount is the number of chunks one request may take.
	maxChunkCount = maxMessageSize/minBufSize + 1
	// maxEndpointURL is the longest EndpointUrl a Hello may carry (Part 6).
	maxEndpointURL = 4096
	// helloFixedLen is the size of a Hello body without its URL bytes.
	helloFixedLen = 5*4 + 4
	// uacpHeaderLen is the size of a UACP message header.
	uacpHeaderLen = 8
	// acceptBackoff is the pause after a failed Accept (e.g. out of file
	// descriptors) before trying again.
	acceptBackoff = 50 * time.Millisecond
	// errLinger is how long the server reads and discards after sending ERR.
	errLinger = 500 * time.Millisecond
)

// acceptLoop accepts TCP connections until ln is closed and hands each to
// its own goroutine, so a slow or silent client never delays another.
func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	refusing := make(chan struct{}, maxRefusing)
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("uaserver: accept failed", "err", err)
			t := time.NewTimer(acceptBackoff)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			_ = c.Close() // unreachable: a "tcp" listener yields *net.TCPConn
			continue
		}
		addr := clientAddr(tc)
		if limit := s.admitConn(addr); limit != "" {
			s.counters.refuse(limit)
			s.refuseConn(tc, limit, refusing)
			continue
		}
		s.wg.Add(1)
		go s.serveConn(tc, addr)
	}
}

// maxRefusing bounds the goroutines that answer refused connections; past
// it a refused connection is closed without an answer.
const maxRefusing = 32

// refuseConn answers a connection over a connection limit with an ERR
// BadTcpNotEnoughResources and closes it. The answer is written on a
// goroutine of its own (at most maxRefusing at once) so that a flood of
// connections never slows the accept loop.
func (s *Server) refuseConn(tc *net.TCPConn, limit string, refusing chan struct{}) {
	select {
	case refusing <- struct{}{}:
	default:
		_ = tc.Close()
		return
	}
	s.log.Debug("uaserver: connection refused", "remote", tc.RemoteAddr().String(), "limit", limit)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-refusing }()
		_ = tc.SetDeadline(time.Now().Add(errLinger))
		_ = handshakeFail(tc, ua.StatusBadTCPNotEnoughResources, "too many connections ("+limit+")")
		_ = tc.Close()
	}()
}

// serveConn runs the Hello/Acknowledge handshake on tc and then serves it
// as one secure channel until it closes.
func (s *Server) serveConn(tc *net.TCPConn, addr string) {
	defer s.wg.Done()
	defer s.releaseConn(addr)
	remote := tc.RemoteAddr().String()

	// Close aborts a handshake in progress instead of waiting for its
	// deadline.
	stop := context.AfterFunc(s.ctx, func() { _ = tc.Close() })
	ack, hel, err := s.handshake(tc)
	if !stop() {
		return // Close won; it closed tc
	}
	if err != nil {
		if isTimeout(err) {
			s.counters.refuse(LimitHelloTimeout)
		}
		s.log.Debug("uaserver: handshake failed", "remote", remote, "err", err)
		_ = tc.Close()
		return
	}
	ch := newChannel(s, tc, addr, ack, hel)
	ch.ident = s.ids.forLocal(tc.LocalAddr())
	if !s.addChannel(ch) {
		_ = tc.Close()
		return
	}
	ch.run()
}

// handshake reads the client's Hello within HelloTimeout and answers
// with the negotiated Acknowledge. Garbage is answered with an ERR message.
func (s *Server) handshake(tc net.Conn) (*uacp.Acknowledge, *uacp.Hello, error) {
	_ = tc.SetDeadline(time.Now().Add(s.cfg.HelloTimeout))
	defer func() { _ = tc.SetDeadline(time.Time{}) }()

	var hb [uacpHeaderLen]byte
	if _, err := io.ReadFull(tc, hb[:]); err != nil {
		return nil, nil, fmt.Errorf("read hello header: %w", err)
	}
	var h uacp.Header
	if _, err := h.Decode(hb[:]); err != nil {
		return nil, nil, handshakeFail(tc, ua.StatusBadTCPMessageTypeInvalid, "undecodable header")
	}
	if h.MessageType != uacp.MessageTypeHello || h.ChunkType != uacp.ChunkTypeFinal {
		return nil, nil, handshakeFail(tc, ua.StatusBadTCPMessageTypeInvalid, fmt.Sprintf("expected HELF, got %q", string(hb[:4])))
	}
	if h.MessageSize < uacpHeaderLen+helloFixedLen {
		return nil, nil, handshakeFail(tc, ua.StatusBadTCPMessageTypeInvalid, "hello too short")
	}
	if h.MessageSize > uacpHeaderLen+helloFixedLen+maxEndpointURL {
		return nil, nil, handshakeFail(tc, ua.StatusBadTCPMessageTooLarge, "hello too large")
	}
	body := make([]byte, h.MessageSize-uacpHeaderLen)
	if _, err := io.ReadFull(tc, body); err != nil {
		return nil, nil, fmt.Errorf("read hello body: %w", err)
	}
	hel := new(uacp.Hello)
	if _, err := hel.Decode(body); err != nil {
		return nil, nil, handshakeFail(tc, ua.StatusBadTCPInternalError, "undecodable hello")
	}
	if hel.ReceiveBufSize < minBufSize || hel.SendBufSize < minBufSize {
		return nil, nil, handshakeFail(tc, ua.StatusBadTCPInternalError,
			fmt.Sprintf("buffer sizes %d/%d below %d", hel.ReceiveBufSize, hel.SendBufSize, minBufSize))
	}
	ack := &uacp.Acknowledge{
		Version:        0,
		ReceiveBufSize: min(bufSize, hel.SendBufSize),
		SendBufSize:    min(bufSize, hel.ReceiveBufSize),
		MaxMessageSize: maxMessageSize,
		MaxChunkCount:  maxChunkCount,
	}
	if err := writeUACP(tc, "ACKF", ack); err != nil {
		return nil, nil, fmt.Errorf("write acknowledge: %w", err)
	}
	return ack, hel, nil
}

// isTimeout reports whether err is a socket deadline expiring.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// handshakeFail answers the client with an ERR message carrying code and
// returns an error describing why.
func handshakeFail(tc net.Conn, code ua.StatusCode, reason string) error {
	if writeUACP(tc, "ERRF", &uacp.Error{ErrorCode: uint32(code), Reason: reason}) == nil {
		linger(tc)
	}
	return fmt.Errorf("%s: %s", reason, code)
}

// linger half-closes c and discards what the peer still sends for up to
// errLinger, so that closing c with unread bytes does not reset the
// connection before the peer has read our last message.
func linger(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(errLinger))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 4*bufSize))
}

// writeUACP writes one UACP message of type typ ("ACKF", "ERRF").
func writeUACP(w io.Writer, typ string, body interface{ Encode() ([]byte, error) }) error {
	b, err := body.Encode()
	if err != nil {
		return err
	}
	h := uacp.Header{MessageType: typ[:3], ChunkType: typ[3], MessageSize: uint32(uacpHeaderLen + len(b))}
	hb, err := h.Encode()
	if err != nil {
		return err
	}
	_, err = w.Write(append(hb, b...))
	return err
}
