package health

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
	ready := func() error {
		if p := notReady.Load(); p != nil {
			return *p
		}
		return nil
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "m_total 1\n") })
	s := NewHTTPServer("127.0.0.1:0", ready, metrics, nil)
	s.Handle("GET /admin/", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "admin") }))
	base := start(t, s)
	if strings.HasSuffix(base, ":0") {
		t.Fatalf("Addr %s did not report the real port", base)
	}

	if code, body := get(t, "GET", base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, "GET", base+"/readyz"); code != 503 || !strings.Contains(body, "config db unreachable") {
		t.Errorf("/readyz while not ready = %d %q", code, body)
	}
	notReady.Store(nil)
	if code, body := get(t, "GET", base+"/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz when ready = %d %q", code, body)
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
	base := start(t, NewHTTPServer("127.0.0.1:0", nil, nil, nil))
	if code, _ := get(t, "GET", base+"/readyz"); code != 200 {
		t.Errorf("/readyz = %d, want 200 with no readiness function", code)
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
	s := NewHTTPServer(ln.Addr().String(), nil, nil, nil)
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
	s := NewHTTPServer("127.0.0.1:0", nil, nil, nil)
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
	s := NewHTTPServer("127.0.0.1:0", func() error { close(entered); <-release; return nil }, nil, nil)
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
