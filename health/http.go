package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// ErrAddrInUse is wrapped by Start when another process holds the port.
var ErrAddrInUse = errors.New("address already in use")

// ErrAlreadyStarted is returned by a second Start.
var ErrAlreadyStarted = errors.New("health: HTTP server already started")

// HTTPServer serves /healthz, /readyz, /metrics and handlers the host adds.
type HTTPServer struct {
	addr   string
	ready  func() error
	logger *slog.Logger
	mux    *http.ServeMux

	mu   sync.Mutex // guards ln, srv and done
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed when Serve has returned
}

// NewHTTPServer prepares the server; nothing listens until Start.
//
// addr is host:port ("0.0.0.0:8080"; port 0 picks a free port, see Addr).
// ready reports readiness: nil means ready, an error is the reason for a
// 503; it is called on request goroutines, concurrently, and must return
// quickly. A nil ready means always ready. metrics serves /metrics; nil
// leaves /metrics unmounted (404). A nil logger discards server errors.
func NewHTTPServer(addr string, ready func() error, metrics http.Handler, logger *slog.Logger) *HTTPServer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if ready == nil {
		ready = func() error { return nil }
	}
	s := &HTTPServer{addr: addr, ready: ready, logger: logger, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if metrics != nil {
		s.mux.Handle("GET /metrics", metrics)
	}
	return s
}

// Handle mounts h on pattern (http.ServeMux syntax, e.g. "GET /admin/").
// It may be called before or after Start. Like http.ServeMux, it panics
// when pattern conflicts with one already mounted.
func (s *HTTPServer) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
}

// Start listens on the address and serves in the background. A port held by
// another process gives an error naming the address and wrapping
// ErrAddrInUse.
func (s *HTTPServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return ErrAlreadyStarted
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("health: HTTP address %s is already in use by another process (set a free Http:Port): %w", s.addr, ErrAddrInUse)
		}
		return fmt.Errorf("health: HTTP listen on %s: %w", s.addr, err)
	}
	// No WriteTimeout: admin pages may stream live updates.
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	s.ln, s.srv, s.done = ln, srv, done
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("health: HTTP server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.logger.Info("health: HTTP listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the address being listened on once started (with the real port
// when the configured port was 0), else the configured address.
func (s *HTTPServer) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.addr
}

// Shutdown stops accepting connections, waits for in-flight requests until
// ctx ends, and returns once the server goroutine has exited. It is a no-op
// before Start.
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	<-done
	return err
}

func (s *HTTPServer) healthz(w http.ResponseWriter, _ *http.Request) {
	plain(w, http.StatusOK, "ok")
}

func (s *HTTPServer) readyz(w http.ResponseWriter, _ *http.Request) {
	if err := s.ready(); err != nil {
		plain(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
		return
	}
	plain(w, http.StatusOK, "ready")
}

func plain(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, body)
}
