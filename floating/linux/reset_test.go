package linux

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/floating"
)

// TestReleaseResetsConnections: a client connected to the floating address
// (a server on the holder listening on every address, as the OPC UA
// endpoint does) is reset when the holder releases the address, so it
// reconnects at once instead of waiting for its own timeout; the listener
// itself stays open.
func TestReleaseResetsConnections(t *testing.T) {
	s := newSegment(t)
	ea := executor(t, s.a, float4, nil)
	apply(t, ea, takePlan(floating.VerbSeize, float4, 1, 1, 0))

	ln, err := s.a.Listen("tcp", "0.0.0.0:4840")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := s.client.DialContext(ctx, "tcp", netip.AddrPortFrom(float4.Addr(), 4840).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	server := <-accepted
	defer server.Close()

	apply(t, ea, releasePlan(float4, 1))
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the client's read after the release: %v, want a reset (ECONNRESET)", err)
	}

	// The listener still accepts: seized again, a new client connects.
	apply(t, ea, takePlan(floating.VerbSeize, float4, 2, 1, 0))
	c2, err := s.client.DialContext(ctx, "tcp", netip.AddrPortFrom(float4.Addr(), 4840).String())
	if err != nil {
		t.Fatalf("after the next seize the client cannot connect: %v", err)
	}
	c2.Close()
}
