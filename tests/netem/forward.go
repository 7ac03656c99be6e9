package netem

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// ForwardFrom listens inside h's namespace at addr and forwards every
// connection to target, dialled from the root namespace (the machine's
// loopback). Closed at cleanup, open connections with it.
func ForwardFrom(t testing.TB, h *Host, addr, target string) {
	t.Helper()
	l, err := h.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen in %s at %s: %v", h.Name, addr, err)
	}
	Serve(t, l, func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", target)
	})
}

// Forward listens on the root namespace's 127.0.0.1 and forwards
// every connection to target dialled from inside h: the test's OPC UA
// clients reach the nodes as a SCADA machine on the test network would.
func Forward(t testing.TB, h *Host, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	Serve(t, l, func(ctx context.Context) (net.Conn, error) { return h.DialContext(ctx, "tcp", target) })
	return l.Addr().String()
}

// Serve accepts on l until cleanup and pipes every connection to one
// that dial opens (within 2 s), both ways; cleanup closes l and every open
// connection and waits for the goroutines.
func Serve(t testing.TB, l net.Listener, dial func(context.Context) (net.Conn, error)) {
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	closed := false
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if add {
			if closed {
				return false
			}
			conns[c] = true
		} else {
			delete(conns, c)
		}
		return true
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				u, err := dial(ctx)
				cancel()
				if err != nil {
					c.Close()
					return
				}
				if !track(c, true) || !track(u, true) {
					c.Close()
					u.Close()
					return
				}
				done := make(chan struct{}, 2)
				pipe := func(dst, src net.Conn) {
					_, _ = io.Copy(dst, src)
					dst.Close()
					src.Close()
					done <- struct{}{}
				}
				go pipe(u, c)
				go pipe(c, u)
				<-done
				<-done
				track(c, false)
				track(u, false)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}
