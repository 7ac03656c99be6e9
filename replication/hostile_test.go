package replication

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Client is a hostile HTTP/2 client of the served port: it speaks just
// enough gRPC to open streams, announce messages and hold them, without
// gRPC's client (which would neither hold a stream half-sent nor exceed
// the server's stream limit), and records what the server answers.
type h2Client struct {
	conn net.Conn
	fr   *http2.Framer

	wmu  sync.Mutex // guards fr's writes, enc, hbuf and next
	enc  *hpack.Encoder
	hbuf bytes.Buffer
	next uint32

	mu       sync.Mutex
	answers  map[uint32]string // "grpc-status N" from a stream's end, or "rst CODE"
	settings map[http2.SettingID]uint32
	goAway   string // the GOAWAY's code and debug data, "" until one arrives
	closed   bool   // the server closed the connection
}

// dialH2 connects from the loopback address from (e.g. 127.0.0.2) to addr,
// sends the preface and empty SETTINGS, and reads the server's frames
// until the connection ends. The connection is closed at the test's end.
func dialH2(t *testing.T, from, addr string) *h2Client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &h2Client{conn: conn, fr: http2.NewFramer(conn, conn), next: 1,
		answers: map[uint32]string{}, settings: map[http2.SettingID]uint32{}}
	c.enc = hpack.NewEncoder(&c.hbuf)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := c.write(func() error { return c.fr.WriteSettings() }); err != nil {
		t.Fatal(err)
	}
	go c.read()
	return c
}

func (c *h2Client) write(f func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return f()
}

// read records the server's answers and acknowledges its SETTINGS and
// PINGs (a graceful GOAWAY waits for a PING's ack); it ends when the
// connection does.
func (c *h2Client) read() {
	defer func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	}()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return
		}
		c.mu.Lock()
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
		c.mu.Unlock()
	}
}

// open starts a stream of method with extra headers (e.g. the key) and
// returns its id; the stream is left open for announce.
func (c *h2Client) open(method string, extra ...string) (uint32, error) {
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

// announce sends a gRPC message prefix announcing length bytes and the
// first send of them, and leaves the stream open: the rest never comes.
func (c *h2Client) announce(id uint32, length uint32, send int) error {
	b := make([]byte, 5+send)
	binary.BigEndian.PutUint32(b[1:], length)
	return c.write(func() error { return c.fr.WriteData(id, false, b) })
}

// ping sends one PING.
func (c *h2Client) ping(n byte) error {
	return c.write(func() error { return c.fr.WritePing(false, [8]byte{n}) })
}

// answer is what the server answered stream id, "" while it has not.
func (c *h2Client) answer(id uint32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answers[id]
}

// state is the settings received, the GOAWAY and whether the server closed.
func (c *h2Client) state() (settings map[http2.SettingID]uint32, goAway string, closed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := make(map[http2.SettingID]uint32, len(c.settings))
	for k, v := range c.settings {
		s[k] = v
	}
	return s, c.goAway, c.closed
}

// wantAnswers is a poll function: every stream of ids answered want.
func (c *h2Client) wantAnswers(ids []uint32, want string) func() error {
	return func() error {
		for _, id := range ids {
			if got := c.answer(id); got != want {
				return fmt.Errorf("stream %d: answer %q, want %q", id, got, want)
			}
		}
		return nil
	}
}

// statusCode is the answer of a stream ended with a gRPC status.
func statusCode(code int) string { return "grpc-status " + strconv.Itoa(code) }
