package health

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/internal/testcert"
)

func get(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func start(t *testing.T, s *HTTPServer) string {
	t.Helper()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return "http://" + s.Addr()
}

func TestEndpoints(t *testing.T) {
	var notReady atomic.Pointer[error]
	reason := errors.New("config db unreachable")
	notReady.Store(&reason)
	var level atomic.Int32
	level.Store(100)
	probes := Probes{
		Live: []Check{{Name: "actors", Run: func() error { return nil }}},
		Ready: []Check{
			{Name: "opcua", Run: func() error { return nil }},
			{Name: "configdb", Run: func() error {
				if p := notReady.Load(); p != nil {
					return *p
				}
				return nil
			}},
			{Name: "service_level", HealthyOnly: true, Run: func() error {
				if l := level.Load(); l < 200 {
					return fmt.Errorf("ServiceLevel %d is below 200", l)
				}
				return nil
			}},
		},
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "m_total 1\n") })
	s := NewHTTPServer("127.0.0.1:0", HTTPOptions{}, probes, metrics, nil)
	s.Handle("GET /admin/", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "admin") }))
	base := start(t, s)
	if strings.HasSuffix(base, ":0") {
		t.Fatalf("Addr %s did not report the real port", base)
	}

	report := func(path string, wantCode int) Report {
		t.Helper()
		code, body := get(t, "GET", base+path)
		if code != wantCode {
			t.Fatalf("%s = %d %q, want %d", path, code, body, wantCode)
		}
		var r Report
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("%s: body %q is not a report: %v", path, body, err)
		}
		return r
	}
	if r := report("/healthz", 200); r.Status != "ok" || len(r.Checks) != 1 || !r.Checks[0].OK {
		t.Errorf("/healthz = %+v", r)
	}
	r := report("/readyz", 503)
	if r.Status != "not ready" || !slices.Equal(r.Failed, []string{"configdb"}) || len(r.Checks) != 2 ||
		r.Checks[1].Detail != "config db unreachable" {
		t.Errorf("/readyz while the DB is unreachable = %+v", r)
	}
	// A check can be left out by name.
	if r := report("/readyz?exclude=configdb", 200); r.Status != "ready" || len(r.Checks) != 1 {
		t.Errorf("/readyz?exclude=configdb = %+v", r)
	}
	notReady.Store(nil)
	if r := report("/readyz", 200); r.Status != "ready" || len(r.Checks) != 2 {
		t.Errorf("/readyz when ready = %+v", r)
	}
	// healthy=1 adds the HealthyOnly checks.
	if r := report("/readyz?healthy=1", 503); !slices.Equal(r.Failed, []string{"service_level"}) ||
		r.Checks[2].Detail != "ServiceLevel 100 is below 200" {
		t.Errorf("/readyz?healthy=1 at level 100 = %+v", r)
	}
	level.Store(240)
	if r := report("/readyz?healthy=true", 200); len(r.Checks) != 3 {
		t.Errorf("/readyz?healthy=true at level 240 = %+v", r)
	}
	// Bad queries are refused with what is accepted.
	for _, q := range []string{"?healthy=yes", "?exclude=nope", "?" + strings.Repeat("exclude=opcua&", 17)} {
		code, body := get(t, "GET", base+"/readyz"+q)
		if code != 400 || !strings.Contains(body, "accepted") {
			t.Errorf("/readyz%s = %d %q, want 400 naming what is accepted", q, code, body)
		}
	}
	if code, body := get(t, "GET", base+"/metrics"); code != 200 || body != "m_total 1\n" {
		t.Errorf("/metrics = %d %q", code, body)
	}
	if code, body := get(t, "GET", base+"/admin/x"); code != 200 || body != "admin" {
		t.Errorf("/admin/x = %d %q", code, body)
	}
	if code, _ := get(t, "HEAD", base+"/healthz"); code != 200 {
		t.Errorf("HEAD /healthz = %d", code)
	}
	if code, _ := get(t, "POST", base+"/healthz"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz = %d, want 405", code)
	}
	if code, _ := get(t, "GET", base+"/nope"); code != 404 {
		t.Errorf("/nope = %d, want 404", code)
	}
}

func TestNilReadyAndNilMetrics(t *testing.T) {
	base := start(t, NewHTTPServer("127.0.0.1:0", HTTPOptions{}, Probes{}, nil, nil))
	if code, body := get(t, "GET", base+"/readyz"); code != 200 || !strings.Contains(body, `"status":"ready"`) {
		t.Errorf("/readyz = %d %q, want 200 with no checks", code, body)
	}
	if code, _ := get(t, "GET", base+"/metrics"); code != 404 {
		t.Errorf("/metrics = %d, want 404 when no handler is given", code)
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := NewHTTPServer(ln.Addr().String(), HTTPOptions{}, Probes{}, nil, nil)
	err = s.Start()
	if !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("Start = %v, want ErrAddrInUse", err)
	}
	if !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "Http:Port") {
		t.Fatalf("message %q does not name the address and the key", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown of a server that never started = %v", err)
	}
}

func TestStartTwiceAndShutdown(t *testing.T) {
	s := NewHTTPServer("127.0.0.1:0", HTTPOptions{}, Probes{}, nil, nil)
	base := start(t, s)
	if err := s.Start(); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("second Start = %v", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("server still answers after Shutdown")
	}
}

func TestShutdownWaitsForInFlightRequest(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	s := NewHTTPServer("127.0.0.1:0", HTTPOptions{},
		Probes{Ready: []Check{{Name: "slow", Run: func() error { close(entered); <-release; return nil }}}}, nil, nil)
	base := start(t, s)
	codes := make(chan int, 1)
	go func() {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			codes <- -1
			return
		}
		resp.Body.Close()
		codes <- resp.StatusCode
	}()
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a request was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if code := <-codes; code != 200 {
		t.Fatalf("in-flight request got %d", code)
	}
}

// dripInterval paces the body of a drip: one chunk this often.
const dripInterval = 100 * time.Millisecond

// drip is a raw client whose request has a chunked body that never ends:
// after the request line and headers it writes a 1-byte chunk every
// dripInterval until the server closes the connection.
type drip struct {
	conn   net.Conn
	sent   time.Time     // when the request line and headers were written
	closed chan struct{} // closed once a read sees the server end the connection
	cutAt  time.Time     // when closed was closed; read it after <-closed
	last   time.Time     // last chunk written before cutAt; valid after join
	done   sync.WaitGroup
}

func startDrip(t *testing.T, addr, method, path string) *drip {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	d := &drip{conn: conn, closed: make(chan struct{})}
	t.Cleanup(func() { conn.Close(); d.done.Wait() })
	head := method + " " + path + " HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	d.sent = time.Now()
	d.done.Add(2)
	go func() { // reader: anything the server sends, then its close
		defer d.done.Done()
		_, _ = io.Copy(io.Discard, conn)
		d.cutAt = time.Now()
		close(d.closed)
	}()
	go d.writeChunks()
	return d
}

func (d *drip) writeChunks() {
	defer d.done.Done()
	tick := time.NewTicker(dripInterval)
	defer tick.Stop()
	for {
		if _, err := io.WriteString(d.conn, "1\r\nx\r\n"); err != nil {
			return
		}
		at := time.Now()
		select {
		case <-d.closed:
			return
		default:
		}
		d.last = at
		select {
		case <-d.closed:
			return
		case <-tick.C:
		}
	}
}

// waitCut fails t unless the server closes d's connection within limit of
// the request being sent. It returns how long after the request was sent,
// and after the last chunk written, the connection was cut.
func (d *drip) waitCut(t *testing.T, limit time.Duration) (age, sinceLast time.Duration) {
	t.Helper()
	timer := time.NewTimer(time.Until(d.sent.Add(limit)))
	defer timer.Stop()
	select {
	case <-d.closed:
	case <-timer.C:
		t.Fatalf("connection still open %v after the request was sent", limit)
	}
	d.conn.Close()
	d.done.Wait()
	return d.cutAt.Sub(d.sent), d.cutAt.Sub(d.last)
}

// drainHandler reads the whole body, reports the read's outcome on reads
// and answers 400 when the read failed.
func drainHandler(reads chan<- error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		select {
		case reads <- err:
		default:
		}
		if err != nil {
			http.Error(w, "read: "+err.Error(), http.StatusBadRequest)
		}
	})
}

func TestNeverEndingBodyIsCut(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	const margin = time.Second
	for _, tc := range []struct {
		name, method, path string
		readsBody          bool
	}{
		{"handler reads the body", "POST", "/drain", true},
		{"handler ignores the body", "GET", "/healthz", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := make(chan error, 1)
			s := NewHTTPServer("127.0.0.1:0", HTTPOptions{ReadTimeout: readTimeout}, Probes{}, nil, nil)
			s.Handle("POST /drain", drainHandler(reads))
			start(t, s)
			d := startDrip(t, s.Addr(), tc.method, tc.path)
			age, sinceLast := d.waitCut(t, readTimeout+margin)
			t.Logf("cut %v after the request line, %v after the last chunk", age, sinceLast)
			if age < readTimeout-dripInterval {
				t.Errorf("cut after %v, before ReadTimeout %v: cut for another reason", age, readTimeout)
			}
			if !tc.readsBody {
				return
			}
			select {
			case err := <-reads:
				if err == nil {
					t.Error("handler read the never-ending body to EOF")
				}
			default:
				t.Error("handler had not returned when the connection was cut")
			}
		})
	}
}

func TestNeverEndingBodiesDoNotHoldHealthz(t *testing.T) {
	const readTimeout = time.Second
	const clients = 100
	var reading, active atomic.Int32
	s := NewHTTPServer("127.0.0.1:0", HTTPOptions{ReadTimeout: readTimeout}, Probes{}, nil, nil)
	s.Handle("POST /drain", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		var b [1]byte
		if _, err := io.ReadFull(r.Body, b[:]); err == nil {
			reading.Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	base := start(t, s)
	drips := make([]*drip, clients)
	for i := range drips {
		drips[i] = startDrip(t, s.Addr(), "POST", "/drain")
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("every dripping request to reach its handler", func() bool { return reading.Load() == clients }))

	client := &http.Client{Timeout: readTimeout / 4}
	t0 := time.Now()
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz while %d bodies drip: %v", clients, err)
	}
	resp.Body.Close()
	took := time.Since(t0)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /healthz = %d", resp.StatusCode)
	}
	if n := active.Load(); n != clients {
		t.Fatalf("only %d of %d dripping requests still held after GET /healthz; the test did not overlap them", n, clients)
	}
	t.Logf("GET /healthz answered in %v with %d never-ending bodies open", took, clients)

	var slowest time.Duration
	for _, d := range drips {
		age, _ := d.waitCut(t, readTimeout+time.Second)
		slowest = max(slowest, age)
	}
	t.Logf("all %d cut, the last %v after its request line", clients, slowest)
}

// rawRequest writes req on a fresh connection and reads the response,
// which must start within wait.
func rawRequest(t *testing.T, addr, req string, wait time.Duration) (*http.Response, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() { _, _ = io.WriteString(conn, req) }() // may exceed the socket buffer
	if err := conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response within %v: %v", wait, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, conn
}

func chunk(n int) string {
	return fmt.Sprintf("%x\r\n%s\r\n", n, strings.Repeat("x", n))
}

func TestBodyLimit(t *testing.T) {
	const limit = 1024
	const wait = 2 * time.Second
	head := func(path, framing string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: test\r\n" + framing + "\r\n\r\n"
	}
	for _, tc := range []struct {
		name, path, req string
		code            int
		tooLarge        bool // the handler's read fails with *http.MaxBytesError
		handlerCalled   bool
	}{
		{"declared at the limit", "/drain",
			head("/drain", "Content-Length: 1024") + strings.Repeat("x", limit), 200, false, true},
		{"declared over the limit, body never sent", "/drain",
			head("/drain", "Content-Length: 1025"), 413, false, false},
		{"chunked at the limit", "/drain",
			head("/drain", "Transfer-Encoding: chunked") + chunk(800) + chunk(224) + "0\r\n\r\n", 200, false, true},
		{"chunked over the limit, handler answers 400", "/drain",
			head("/drain", "Transfer-Encoding: chunked") + chunk(800) + chunk(800), 413, true, true},
		{"chunked over the limit, handler answers nothing", "/silent",
			head("/silent", "Transfer-Encoding: chunked") + chunk(800) + chunk(800), 413, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := make(chan error, 1)
			s := NewHTTPServer("127.0.0.1:0", HTTPOptions{MaxBodyBytes: limit}, Probes{}, nil, nil)
			s.Handle("POST /drain", drainHandler(reads))
			s.Handle("POST /silent", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				_, err := io.Copy(io.Discard, r.Body)
				reads <- err
			}))
			start(t, s)
			t0 := time.Now()
			resp, _ := rawRequest(t, s.Addr(), tc.req, wait)
			t.Logf("answered in %v", time.Since(t0))
			if resp.StatusCode != tc.code {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.code)
			}
			if tc.code == http.StatusRequestEntityTooLarge && !resp.Close {
				t.Error("413 without Connection: close; the rest of the body would be read as the next request")
			}
			var err error
			select {
			case err = <-reads:
				if !tc.handlerCalled {
					t.Fatalf("handler called (read: %v) for a body declared over the limit", err)
				}
			default:
				if tc.handlerCalled {
					t.Fatal("handler not called")
				}
				return
			}
			mbe, ok := errors.AsType[*http.MaxBytesError](err)
			switch {
			case tc.tooLarge && !ok:
				t.Errorf("handler's read = %v, want *http.MaxBytesError", err)
			case tc.tooLarge && mbe.Limit != limit:
				t.Errorf("MaxBytesError.Limit = %d, want %d", mbe.Limit, limit)
			case !tc.tooLarge && err != nil:
				t.Errorf("handler's read = %v, want the whole body", err)
			}
		})
	}
}

func TestSlowHeaderIsCut(t *testing.T) {
	const readTimeout = 500 * time.Millisecond // ReadHeaderTimeout = min(5 s, this)
	s := NewHTTPServer("127.0.0.1:0", HTTPOptions{ReadTimeout: readTimeout}, Probes{}, nil, nil)
	start(t, s)
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	if err := conn.SetReadDeadline(sent.Add(readTimeout + time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, conn)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("connection still open %v after a request line with no headers", readTimeout+time.Second)
	}
	t.Logf("cut %v after the request line", time.Since(sent))
}

func TestLargeHeaderIsRefused(t *testing.T) {
	s := NewHTTPServer("127.0.0.1:0", HTTPOptions{}, Probes{}, nil, nil)
	start(t, s)
	req := "GET /healthz HTTP/1.1\r\nHost: test\r\nX-Big: " + strings.Repeat("x", 100<<10) + "\r\n\r\n"
	resp, _ := rawRequest(t, s.Addr(), req, 2*time.Second)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB header: status %d, want 431", resp.StatusCode)
	}
}

func TestHTTPOptionsDefaults(t *testing.T) {
	for _, tc := range []struct {
		in     HTTPOptions
		want   HTTPOptions
		header time.Duration
	}{
		{HTTPOptions{}, HTTPOptions{10 * time.Second, 30 * time.Second, 1 << 20, nil}, 5 * time.Second},
		{HTTPOptions{-1, -1, -1, nil}, HTTPOptions{10 * time.Second, 30 * time.Second, 1 << 20, nil}, 5 * time.Second},
		{HTTPOptions{2 * time.Second, time.Minute, 4096, nil}, HTTPOptions{2 * time.Second, time.Minute, 4096, nil}, 2 * time.Second},
		{HTTPOptions{time.Minute, 0, 0, nil}, HTTPOptions{time.Minute, 30 * time.Second, 1 << 20, nil}, 5 * time.Second},
	} {
		got := tc.in.withDefaults()
		if got != tc.want {
			t.Errorf("%+v.withDefaults() = %+v, want %+v", tc.in, got, tc.want)
		}
		if h := got.headerTimeout(); h != tc.header {
			t.Errorf("%+v: header timeout %v, want %v", tc.in, h, tc.header)
		}
	}
}

func TestStreamingHandlerExtendsWriteDeadline(t *testing.T) {
	const writeTimeout = 200 * time.Millisecond
	const lines = 4 // written 100 ms apart: the stream outlives writeTimeout
	read := make(chan struct{})
	errs := make(chan error, 2*lines)
	s := NewHTTPServer("127.0.0.1:0", HTTPOptions{WriteTimeout: writeTimeout}, Probes{}, nil, nil)
	s.Handle("GET /stream", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rc := http.NewResponseController(w)
		for i := range lines {
			time.Sleep(writeTimeout / 2)
			if err := rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
				errs <- fmt.Errorf("SetWriteDeadline: %w", err)
			}
			fmt.Fprintf(w, "line %d\n", i)
			if err := rc.Flush(); err != nil {
				errs <- fmt.Errorf("Flush: %w", err)
			}
			select { // the client has the line before the next is written
			case <-read:
			case <-time.After(2 * time.Second):
				errs <- fmt.Errorf("client never read line %d", i)
				return
			}
		}
	}))
	base := start(t, s)
	t0 := time.Now()
	resp, err := http.Get(base + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range lines {
		line, err := br.ReadString('\n')
		if want := fmt.Sprintf("line %d\n", i); err != nil || line != want {
			t.Fatalf("after %v: read %q, %v; want %q", time.Since(t0), line, err, want)
		}
		read <- struct{}{}
	}
	if took := time.Since(t0); took <= writeTimeout {
		t.Fatalf("stream took %v, not longer than WriteTimeout %v", took, writeTimeout)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

func TestCachedCheckRunsOncePerPeriod(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	slow := Cached(time.Hour, func() error {
		calls.Add(1)
		<-release
		return errors.New("wedged")
	})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- slow() }()
	}
	// End the run only once every caller is parked inside the cached call:
	// the one running it on release, the 99 others on the run in flight.
	parked := func() int {
		buf := make([]byte, 4<<20)
		n := 0
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, " [chan receive") && strings.Contains(g, "health.(*cachedCheck).call(") {
				n++
			}
		}
		return n
	}
	poll.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if n := parked(); n < 100 {
			return fmt.Errorf("%d of 100 callers parked in the cached call", n)
		}
		return nil
	})
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil || err.Error() != "wedged" {
			t.Fatalf("a caller got %v, want the run's error", err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("100 concurrent callers ran the check %d times, want 1", n)
	}
	// Within the period the result is reused; with no period each call
	// after the last one ends runs again.
	_ = slow()
	if n := calls.Load(); n != 1 {
		t.Fatalf("a call within the period ran the check again (%d runs)", n)
	}
	var fresh atomic.Int32
	each := Cached(0, func() error { fresh.Add(1); return nil })
	_, _ = each(), each()
	if n := fresh.Load(); n != 2 {
		t.Fatalf("Cached(0) ran %d times for two sequential calls, want 2", n)
	}
}

func TestTLSServesHTTPSOnly(t *testing.T) {
	certFile, keyFile := testcert.Write(t)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := NewHTTPServer("127.0.0.1:0", HTTPOptions{TLS: &tls.Config{Certificates: []tls.Certificate{pair}}}, Probes{}, nil, nil)
	base := strings.Replace(start(t, s), "http://", "https://", 1)

	pool := x509.NewCertPool()
	pool.AddCert(pair.Leaf)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("GET /healthz over TLS: %d, TLS %+v", resp.StatusCode, resp.TLS)
	}

	old := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}}}
	if resp, err := old.Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("a TLS 1.1 client was served: %d", resp.StatusCode)
	}
	code, body := get(t, http.MethodGet, strings.Replace(base, "https://", "http://", 1)+"/healthz")
	if code == http.StatusOK {
		t.Fatalf("plain HTTP to the TLS port was served: %d %s", code, body)
	}
}
