package configdb

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net"
	"sync"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"
)

// go-mssqldb reads the server's pre-login answer without looking at the
// context: a server that accepts TCP but does not answer (hung, or behind a
// half-open link) holds the connection attempt — and with it Ping — for as
// long as the TCP connection lives, whatever the caller's deadline. The
// connector below closes that gap the way pgx does: while a connection is
// being established, the context's end sets a past deadline on its socket,
// so the pending read fails at once.

// sqlServerConnector is go-mssqldb's connector with connection
// establishment bounded by the Connect context.
type sqlServerConnector struct {
	inner *mssql.Connector
}

// dialSlotKey carries the *dialSlot of one Connect call to the dialer.
type dialSlotKey struct{}

// dialSlot collects the sockets one Connect call dials.
type dialSlot struct {
	mu      sync.Mutex // guards conns and aborted
	conns   []net.Conn
	aborted bool
}

// add records a dialed socket; after abort it is expired at once.
func (s *dialSlot) add(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns = append(s.conns, c)
	if s.aborted {
		_ = c.SetDeadline(time.Unix(1, 0))
	}
}

// abort expires every socket dialed so far and any dialed later.
func (s *dialSlot) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = true
	for _, c := range s.conns {
		_ = c.SetDeadline(time.Unix(1, 0))
	}
}

func newSQLServerConnector(dsn string) (*sqlServerConnector, error) {
	cfg, err := msdsn.Parse(dsn)
	if err != nil {
		return nil, err
	}
	inner, err := mssql.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	ka := cfg.KeepAlive // go-mssqldb's own dialer defaults this to 30 s
	if ka == 0 {
		ka = 30 * time.Second
	}
	inner.Dialer = slotDialer{nd: &net.Dialer{KeepAlive: ka}}
	return &sqlServerConnector{inner: inner}, nil
}

// Connect establishes a connection, giving up when ctx ends.
func (c *sqlServerConnector) Connect(ctx context.Context) (driver.Conn, error) {
	slot := &dialSlot{}
	stop := context.AfterFunc(ctx, slot.abort)
	conn, err := c.inner.Connect(context.WithValue(ctx, dialSlotKey{}, slot))
	if !stop() { // ctx ended while connecting: the sockets are expired
		if err == nil { // connected just as ctx ended: the socket is expired
			_ = conn.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("connect: %w (%v)", ctx.Err(), err)
		}
		return nil, fmt.Errorf("connect: %w", ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return conn, nil
}

// Driver returns go-mssqldb's driver.
func (c *sqlServerConnector) Driver() driver.Driver { return c.inner.Driver() }

// slotDialer dials like go-mssqldb's default dialer and records each socket
// in the Connect call's slot.
type slotDialer struct{ nd *net.Dialer }

func (d slotDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := d.nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if slot, ok := ctx.Value(dialSlotKey{}).(*dialSlot); ok {
		slot.add(conn)
	}
	return conn, nil
}
