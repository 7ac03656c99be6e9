package replication

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/otopcua/otopcua/internal/h2hostile"
)

// h2Client is the hostile HTTP/2 client of the served port
// (internal/h2hostile), with the names these tests use.
type h2Client struct {
	*h2hostile.Client
	conn net.Conn
}

// dialH2 connects from the loopback address from (e.g. 127.0.0.2) to addr,
// sends the preface and empty SETTINGS, and reads the server's frames
// until the connection ends. The connection is closed at the test's end.
func dialH2(t *testing.T, from, addr string) *h2Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := h2hostile.Dial(ctx, from, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Conn.Close() })
	return &h2Client{Client: c, conn: c.Conn}
}

func (c *h2Client) open(method string, extra ...string) (uint32, error) {
	return c.Open(method, extra...)
}
func (c *h2Client) announce(id uint32, length uint32, send int) error {
	return c.Announce(id, length, send)
}
func (c *h2Client) ping(n byte) error       { return c.Ping(n) }
func (c *h2Client) answer(id uint32) string { return c.Answer(id) }

func (c *h2Client) state() (map[http2.SettingID]uint32, string, bool) { return c.State() }

func (c *h2Client) wantAnswers(ids []uint32, want string) func() error {
	return c.WantAnswers(ids, want)
}

// statusCode is the answer of a stream ended with a gRPC status.
func statusCode(code int) string { return h2hostile.StatusCode(code) }
