package netem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/otopcua/otopcua/internal/poll"
)

// echoServer echoes each line back and records when each line arrived.
type echoServer struct {
	ln       net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	arrivals map[string]time.Time
	wg       sync.WaitGroup
}

func newEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln, arrivals: map[string]time.Time{}}
	var conns sync.Map
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			conns.Store(c, true)
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					e.mu.Lock()
					e.arrivals[strings.TrimSpace(line)] = time.Now()
					e.mu.Unlock()
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		e.wg.Wait()
	})
	return e
}

func (e *echoServer) arrival(line string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.arrivals[line]
	return at, ok
}

type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *client) send(line string) {
	c.t.Helper()
	if _, err := c.c.Write([]byte(line + "\n")); err != nil {
		c.t.Fatalf("write %q: %v", line, err)
	}
}

// recv reads one line within d; it returns the error on timeout or reset.
func (c *client) recv(d time.Duration) (string, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(d))
	s, err := c.r.ReadString('\n')
	return strings.TrimSpace(s), err
}

func (c *client) roundTrip(line string, d time.Duration) {
	c.t.Helper()
	c.send(line)
	got, err := c.recv(d)
	if err != nil || got != line {
		c.t.Fatalf("echo of %q: got %q, %v", line, got, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goroutine leak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

func TestProxyPass(t *testing.T) {
	e := newEcho(t)
	p := NewProxy(t, "127.0.0.1:0", e.ln.Addr().String())
	c := dial(t, p.Addr())
	c.roundTrip("hello", 2*time.Second)
	c.roundTrip("again", 2*time.Second)

	// The counters move just after the bytes are written: poll.
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		st := p.Stats()
		if st.Accepted != 1 || st.Dialed != 1 || st.Open != 1 {
			return fmt.Errorf("stats %+v: want 1 accepted, 1 dialed, 1 open", st)
		}
		if st.Upstream != int64(len("hello\nagain\n")) || st.Downstream != st.Upstream {
			return fmt.Errorf("stats %+v: want %d bytes each way", st, len("hello\nagain\n"))
		}
		return nil
	})

	// A half-close travels through: the echo server ends the connection,
	// and the client reads EOF.
	if err := c.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.recv(2 * time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("after a half-close: %v, want EOF", err)
	}
}

func TestProxyBlackholeHoldsAndHealDelivers(t *testing.T) {
	e := newEcho(t)
	p := NewProxy(t, "127.0.0.1:0", e.ln.Addr().String())
	old := dial(t, p.Addr())
	old.roundTrip("before", 2*time.Second)

	if err := p.SetMode(Blackhole); err != nil {
		t.Fatal(err)
	}
	// An open connection forwards nothing and is not reset.
	old.send("during-old")
	if got, err := old.recv(300 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("open connection in blackhole: got %q, %v; want a read timeout", got, err)
	}
	// A new connection is accepted (no refusal, no reset) and held: the
	// target never sees it.
	fresh := dial(t, p.Addr())
	fresh.send("during-new")
	if got, err := fresh.recv(300 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("new connection in blackhole: got %q, %v; want a read timeout", got, err)
	}
	if n := e.accepted.Load(); n != 1 {
		t.Fatalf("target accepted %d connections during the blackhole, want only the first", n)
	}
	if _, ok := e.arrival("during-old"); ok {
		t.Fatal("a line sent during the blackhole reached the target")
	}

	// Heal: what was held is delivered, in order, on both connections.
	if err := p.SetMode(Pass); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c    *client
		line string
	}{{old, "during-old"}, {fresh, "during-new"}} {
		got, err := c.c.recv(2 * time.Second)
		if err != nil || got != c.line {
			t.Fatalf("after heal: got %q, %v; want %q", got, err, c.line)
		}
	}
	fresh.roundTrip("after", 2*time.Second)
}

func TestProxyResetLooksLikeADeadProcess(t *testing.T) {
	e := newEcho(t)
	p := NewProxy(t, "127.0.0.1:0", e.ln.Addr().String())
	old := dial(t, p.Addr())
	old.roundTrip("before", 2*time.Second)

	if err := p.SetMode(Reset); err != nil {
		t.Fatal(err)
	}
	// The open connection is reset.
	_, err := old.recv(2 * time.Second)
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Fatalf("open connection after Reset: %v, want a reset", err)
	}
	// New connects are refused at once.
	start := time.Now()
	_, err = net.DialTimeout("tcp", p.Addr(), 2*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial in Reset mode: %v, want connection refused", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("refusal took %v", d)
	}

	// Back to Pass: same address, forwarding again.
	if err := p.SetMode(Pass); err != nil {
		t.Fatal(err)
	}
	dial(t, p.Addr()).roundTrip("after", 2*time.Second)
}

func TestProxyResetsClientWhenTargetIsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p := NewProxy(t, "127.0.0.1:0", dead)
	// The reset may beat the end of the client's connect on loopback.
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err == nil {
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = c.Read(make([]byte, 1))
	}
	if err == nil || isTimeout(err) {
		t.Fatalf("client of a proxy whose target is down: %v, want reset or EOF", err)
	}
	poll.CheckFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		if st := p.Stats(); st.DialFailed != 1 {
			return fmt.Errorf("stats %+v: want one failed dial", st)
		}
		return nil
	})
}

func TestProxyDelayPerDirection(t *testing.T) {
	e := newEcho(t)
	p := NewProxy(t, "127.0.0.1:0", e.ln.Addr().String())
	c := dial(t, p.Addr())
	c.roundTrip("warm", 2*time.Second)

	const up, down = 200 * time.Millisecond, 300 * time.Millisecond

	// Upstream only: the line reaches the target late; the reply is quick.
	p.SetDelay(Upstream, up)
	sent := time.Now()
	c.roundTrip("up", 2*time.Second)
	rtt := time.Since(sent)
	at, _ := e.arrival("up")
	if a := at.Sub(sent); a < up {
		t.Fatalf("upstream delay %v: line arrived after %v", up, a)
	}
	if back := time.Since(at); back > up {
		t.Fatalf("no downstream delay set, but the reply took %v", back)
	}
	if rtt < up {
		t.Fatalf("round trip %v < upstream delay %v", rtt, up)
	}

	// Downstream only: the line arrives quickly; the reply is late.
	p.SetDelay(Upstream, 0)
	p.SetDelay(Downstream, down)
	sent = time.Now()
	c.send("down")
	got, err := c.recv(2 * time.Second)
	rtt = time.Since(sent)
	if err != nil || got != "down" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	at, _ = e.arrival("down")
	if a := at.Sub(sent); a > down/2 {
		t.Fatalf("no upstream delay set, but the line arrived after %v", a)
	}
	if rtt < down {
		t.Fatalf("downstream delay %v: round trip %v", down, rtt)
	}

	// Order is kept under delay: many small writes come back in order.
	p.SetDelay(Upstream, 20*time.Millisecond)
	var want []string
	for i := range 50 {
		s := strings.Repeat("x", i+1)
		want = append(want, s)
		c.send(s)
	}
	for _, w := range want {
		got, err := c.recv(5 * time.Second)
		if err != nil || got != w {
			t.Fatalf("got %q, %v; want %q", got, err, w)
		}
	}
}

func TestProxyCloseResetsEverything(t *testing.T) {
	e := newEcho(t)
	p, err := Listen("127.0.0.1:0", e.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	c.roundTrip("x", 2*time.Second)
	if err := p.SetMode(Blackhole); err != nil {
		t.Fatal(err)
	}
	held := dial(t, p.Addr())
	held.send("held")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*client{c, held} {
		if _, err := cl.recv(2 * time.Second); err == nil || isTimeout(err) {
			t.Fatalf("after Close: %v, want the connection ended", err)
		}
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("proxy still accepts after Close")
	}
	if err := p.SetMode(Pass); err == nil {
		t.Fatal("SetMode after Close succeeded")
	}
}

// TestProxySourceTellsItsConnectionsApart: two proxies to one target,
// each dialling from its own loopback address; the target sees each
// proxy's connection come from that proxy's address.
func TestProxySourceTellsItsConnectionsApart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			seen <- host
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	for _, src := range []string{"127.0.0.21", "127.0.0.22"} {
		p := NewProxy(t, "127.0.0.1:0", ln.Addr().String())
		p.SetSource(net.ParseIP(src))
		c := dial(t, p.Addr())
		select {
		case got := <-seen:
			if got != src {
				t.Fatalf("the target saw the proxy dialling from %s connect from %s", src, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the proxy dialling from %s never reached the target", src)
		}
		c.c.Close()
	}
}
