package procs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
)

// ErrNoSession is a Session call made while it has no session (being
// dialled again, or closed).
var ErrNoSession = errors.New("no session")

// Session is a gopcua session (security None) to one endpoint that is
// dialled again after an error, at most every 500 ms; a call without a
// session fails at once with ErrNoSession. Safe for concurrent use (mu).
type Session struct {
	endpoint string
	mu       sync.Mutex
	c        *gopcua.Client // mu must be held.
	tried    time.Time      // mu must be held.
	closed   bool           // mu must be held.
}

// NewSession returns a Session to endpoint; it dials on first use.
func NewSession(endpoint string) *Session { return &Session{endpoint: endpoint} }

func (u *Session) client() (*gopcua.Client, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, ErrNoSession
	}
	if u.c != nil {
		return u.c, nil
	}
	if time.Since(u.tried) < 500*time.Millisecond {
		return nil, ErrNoSession
	}
	u.tried = time.Now()
	c, err := gopcua.NewClient(u.endpoint, gopcua.SecurityMode(ua.MessageSecurityModeNone), gopcua.AutoReconnect(false),
		gopcua.DialTimeout(time.Second), gopcua.RequestTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		_ = c.Close(context.Background())
		return nil, err
	}
	u.c = c
	return c, nil
}

// drop closes c after a transport error, so the next call dials again.
func (u *Session) drop(c *gopcua.Client) {
	u.mu.Lock()
	if u.c == c {
		u.c = nil
	}
	u.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Close(ctx)
	}()
}

// Close closes the session; later calls fail with ErrNoSession.
func (u *Session) Close() {
	u.mu.Lock()
	c := u.c
	u.c, u.closed = nil, true
	u.mu.Unlock()
	if c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Close(ctx)
	}
}

// Read reads one value; a failed call drops the session.
func (u *Session) Read(ctx context.Context, n *ua.NodeID) (any, error) {
	c, err := u.client()
	if err != nil {
		return nil, err
	}
	resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: n, AttributeID: ua.AttributeIDValue}}})
	if err != nil {
		u.drop(c)
		return nil, err
	}
	if len(resp.Results) != 1 || resp.Results[0].Status != ua.StatusOK || resp.Results[0].Value == nil {
		return nil, fmt.Errorf("read %v: %+v", n, resp.Results)
	}
	return resp.Results[0].Value.Value(), nil
}

// WriteInt16 writes an int16; it returns the status or a transport error.
func (u *Session) WriteInt16(ctx context.Context, n *ua.NodeID, v int16) (ua.StatusCode, error) {
	return u.Write(ctx, n, v)
}

// Write writes v (a Go value a Variant holds: uint16 for a UInt16 node,
// …); it returns the status or a transport error. A failed call drops
// the session.
func (u *Session) Write(ctx context.Context, n *ua.NodeID, v any) (ua.StatusCode, error) {
	variant, err := ua.NewVariant(v)
	if err != nil {
		return 0, err
	}
	c, err := u.client()
	if err != nil {
		return 0, err
	}
	resp, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: n, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: variant}}}})
	if err != nil {
		u.drop(c)
		return 0, err
	}
	if len(resp.Results) != 1 {
		return 0, fmt.Errorf("write: %d results", len(resp.Results))
	}
	return resp.Results[0], nil
}
