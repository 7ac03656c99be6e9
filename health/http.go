package health

import (
	"context"
	"crypto/tls"
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

// Defaults for the zero fields of HTTPOptions; they match the config
// defaults of Http:ReadTimeout, Http:WriteTimeout and Http:MaxBodyBytes.
const (
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultMaxBodyBytes = 1 << 20
)

// maxHeaderTimeout caps ReadHeaderTimeout; a shorter ReadTimeout lowers it.
const maxHeaderTimeout = 5 * time.Second

// maxHeaderBytes bounds the request line and headers of one request.
const maxHeaderBytes = 64 << 10

// HTTPOptions bounds what one HTTP client may hold. A zero or negative field
// takes its default.
type HTTPOptions struct {
	// ReadTimeout bounds reading one request, headers and body, counted
	// from its first byte; a client that sends slower (a chunked body that
	// never ends) is cut off and its connection closed. The header alone
	// must arrive within min(5 s, ReadTimeout). Default 10 s.
	ReadTimeout time.Duration

	// WriteTimeout bounds writing one response, counted from the end of
	// the request headers. Default 30 s.
	WriteTimeout time.Duration

	// MaxBodyBytes is the largest request body accepted on any endpoint.
	// Bytes. Default 1048576 (1 MiB).
	MaxBodyBytes int

	// TLS, when set, serves HTTPS only (a plain HTTP request is answered
	// 400); a zero MinVersion means TLS 1.2. Nil serves plain HTTP.
	TLS *tls.Config
}

// withDefaults returns o with every zero or negative field set to its
// default.
func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return o
}

// headerTimeout is the ReadHeaderTimeout for o: never longer than the
// whole-request ReadTimeout, never longer than 5 s.
func (o HTTPOptions) headerTimeout() time.Duration {
	return min(maxHeaderTimeout, o.ReadTimeout)
}

// HTTPServer serves /healthz, /readyz, /metrics and handlers the host adds.
type HTTPServer struct {
	addr   string
	opts   HTTPOptions // defaults applied
	probes Probes
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
// opts bounds every connection (see HTTPOptions; the zero value takes the
// defaults). probes are the checks of /healthz (Live) and /readyz (Ready):
// each endpoint answers 200 when every check it ran passed, else 503, with
// a JSON Report naming each check and why it failed. /readyz?healthy=1
// also runs the HealthyOnly checks; ?exclude=NAME (repeatable) leaves a
// check out; an unknown name or value is a 400. No checks: always 200.
// metrics serves /metrics; nil leaves /metrics unmounted (404). A nil
// logger discards server errors.
//
// Limits, applied to every endpoint including those mounted with Handle:
//
//   - a request whose headers have not arrived within min(5 s, ReadTimeout),
//     or whose headers and body have not arrived within ReadTimeout, is cut
//     off and its connection closed, whether or not the handler reads the
//     body; request line and headers are limited to 64 KiB (431 beyond);
//   - a declared Content-Length above MaxBodyBytes is answered 413 without
//     calling the handler; a chunked body is cut at MaxBodyBytes: the
//     handler's read fails with *http.MaxBytesError, and unless the handler
//     had already sent its response header, the response status becomes
//     413 whatever status the handler writes;
//   - a response must be written within WriteTimeout of the end of the
//     request headers. A handler that streams (a live admin page) must
//     extend its own deadline as it goes with http.ResponseController's
//     SetWriteDeadline; the ResponseWriter it gets is wrapped, implements
//     http.Flusher and Unwrap, so http.ResponseController reaches the
//     connection.
func NewHTTPServer(addr string, opts HTTPOptions, probes Probes, metrics http.Handler, logger *slog.Logger) *HTTPServer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &HTTPServer{addr: addr, opts: opts.withDefaults(), probes: probes, logger: logger, mux: http.NewServeMux()}
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
	if s.opts.TLS != nil {
		c := s.opts.TLS.Clone()
		if c.MinVersion == 0 {
			c.MinVersion = tls.VersionTLS12
		}
		ln = tls.NewListener(ln, c)
	}
	srv := &http.Server{
		Handler:           limitBody(s.mux, int64(s.opts.MaxBodyBytes)),
		ReadTimeout:       s.opts.ReadTimeout,
		ReadHeaderTimeout: s.opts.headerTimeout(),
		WriteTimeout:      s.opts.WriteTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
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

func (s *HTTPServer) healthz(w http.ResponseWriter, r *http.Request) {
	s.serveProbe(w, r, s.probes.Live, "ok", "unhealthy")
}

func (s *HTTPServer) readyz(w http.ResponseWriter, r *http.Request) {
	s.serveProbe(w, r, s.probes.Ready, "ready", "not ready")
}

func plain(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, body)
}
