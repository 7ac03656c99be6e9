// Package h2hostile is a hostile HTTP/2 client of a gRPC port: it speaks
// just enough gRPC to open streams, announce messages and hold them,
// without gRPC's client (which would neither hold a stream half-sent nor
// exceed the server's stream limit), and records what the server answers.
// The replication tests and bench/soak drive LocalDb's sync port with it.
//
// A Client is safe for concurrent use: writes are serialized, and one
// goroutine (started by Dial) reads the server's frames until the
// connection ends.
package h2hostile

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Client is one HTTP/2 connection driven by hand.
type Client struct {
	// Conn is the connection; closing it ends the client.
	Conn net.Conn
	fr   *http2.Framer

	wmu  sync.Mutex // guards fr's writes, enc, hbuf and next
	enc  *hpack.Encoder
	hbuf bytes.Buffer
	next uint32

	mu       sync.Mutex
	answers  map[uint32]string // "grpc-status N" from a stream's end, or "rst CODE"; mu must be held.
	settings map[http2.SettingID]uint32
	goAway   string        // the GOAWAY's code and debug data, "" until one arrives; mu must be held.
	closed   bool          // the server closed the connection; mu must be held.
	done     chan struct{} // closed when the reader ends
}

// Dial connects from the local address from ("" lets the kernel choose;
// e.g. 127.0.0.2 to appear as another machine) to addr, sends the
// preface and empty SETTINGS, and starts reading the server's frames.
// The caller closes Conn.
func Dial(ctx context.Context, from, addr string) (*Client, error) {
	d := net.Dialer{}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &Client{Conn: conn, fr: http2.NewFramer(conn, conn), next: 1,
		answers: map[uint32]string{}, settings: map[http2.SettingID]uint32{}, done: make(chan struct{})}
	c.enc = hpack.NewEncoder(&c.hbuf)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if err := c.write(func() error { return c.fr.WriteSettings() }); err != nil {
		_ = conn.Close()
		return nil, err
	}
	go c.read()
	return c, nil
}

func (c *Client) write(f func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return f()
}

// read records the server's answers and acknowledges its SETTINGS and
// PINGs (a graceful GOAWAY waits for a PING's ack); it ends when the
// connection does.
func (c *Client) read() {
	defer func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.done)
	}()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return
		}
		c.mu.Lock()
		c.recordLocked(f)
		c.mu.Unlock()
	}
}

// recordLocked accounts for one frame of the server. c.mu must be held.
func (c *Client) recordLocked(f http2.Frame) {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			_ = f.ForeachSetting(func(s http2.Setting) error { c.settings[s.ID] = s.Val; return nil })
			go func() { _ = c.write(c.fr.WriteSettingsAck) }()
		}
	case *http2.MetaHeadersFrame:
		if f.StreamEnded() {
			c.answers[f.StreamID] = "ended without grpc-status"
			for _, h := range f.Fields {
				if h.Name == "grpc-status" {
					c.answers[f.StreamID] = "grpc-status " + h.Value
				}
			}
		}
	case *http2.RSTStreamFrame:
		if _, ok := c.answers[f.StreamID]; !ok {
			c.answers[f.StreamID] = "rst " + f.ErrCode.String()
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			go func(data [8]byte) { _ = c.write(func() error { return c.fr.WritePing(true, data) }) }(f.Data)
		}
	case *http2.GoAwayFrame:
		c.goAway = f.ErrCode.String() + " " + string(f.DebugData())
	}
}

// Open starts a stream of method (e.g. "/pkg.Service/Method") with extra
// header name, value pairs (e.g. a key) and returns its id; the stream is
// left open for Announce.
func (c *Client) Open(method string, extra ...string) (uint32, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	id := c.next
	c.next += 2
	c.hbuf.Reset()
	fields := append([]string{":method", "POST", ":scheme", "http", ":path", method, ":authority", "replication",
		"content-type", "application/grpc", "te", "trailers", "grpc-timeout", "1H"}, extra...)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := c.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}); err != nil {
			return 0, err
		}
	}
	return id, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true})
}

// Announce sends a gRPC message prefix announcing length bytes and the
// first send of them, and leaves the stream open: the rest never comes.
func (c *Client) Announce(id uint32, length uint32, send int) error {
	b := make([]byte, 5+send)
	binary.BigEndian.PutUint32(b[1:], length)
	return c.write(func() error { return c.fr.WriteData(id, false, b) })
}

// Ping sends one PING.
func (c *Client) Ping(n byte) error {
	return c.write(func() error { return c.fr.WritePing(false, [8]byte{n}) })
}

// Answer is what the server answered stream id, "" while it has not.
func (c *Client) Answer(id uint32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answers[id]
}

// State is the settings received, the GOAWAY and whether the server
// closed the connection.
func (c *Client) State() (settings map[http2.SettingID]uint32, goAway string, closed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := make(map[http2.SettingID]uint32, len(c.settings))
	for k, v := range c.settings {
		s[k] = v
	}
	return s, c.goAway, c.closed
}

// Done is closed when the connection has ended (closed by either side).
func (c *Client) Done() <-chan struct{} { return c.done }

// WantAnswers is a poll function: every stream of ids answered want.
func (c *Client) WantAnswers(ids []uint32, want string) func() error {
	return func() error {
		for _, id := range ids {
			if got := c.Answer(id); got != want {
				return fmt.Errorf("stream %d: answer %q, want %q", id, got, want)
			}
		}
		return nil
	}
}

// StatusCode is the answer of a stream ended with a gRPC status.
func StatusCode(code int) string { return "grpc-status " + strconv.Itoa(code) }
