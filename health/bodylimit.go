package health

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// limitBody bounds the request body of every request next serves to max
// bytes. A declared Content-Length above max is answered 413 at once,
// without calling next and without reading the body, and the connection is
// closed. Any other body is cut at max (http.MaxBytesReader): next's read
// fails with *http.MaxBytesError, and from then on the response status is
// 413 unless next had already sent its header; a next that writes nothing
// after the cut gets a plain 413 written for it.
func limitBody(next http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			// Connection: close stops net/http from draining the body
			// before it sends the response.
			w.Header().Set("Connection", "close")
			plain(w, http.StatusRequestEntityTooLarge, tooLarge(max))
			return
		}
		lw := &limitWriter{ResponseWriter: w}
		r.Body = &limitReader{ReadCloser: http.MaxBytesReader(w, r.Body, max), overrun: &lw.overrun}
		next.ServeHTTP(lw, r)
		if lw.overrun.Load() && !lw.wroteHeader {
			plain(lw, http.StatusRequestEntityTooLarge, tooLarge(max))
		}
	})
}

func tooLarge(max int64) string {
	return fmt.Sprintf("request body larger than %d bytes (Http:MaxBodyBytes)", max)
}

// limitReader records in overrun that a read went past the limit.
type limitReader struct {
	io.ReadCloser
	overrun *atomic.Bool // set from whichever goroutine reads the body
}

func (r *limitReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		r.overrun.Store(true)
	}
	return n, err
}

// limitWriter turns the response status into 413 once the body has
// overrun the limit. Like any http.ResponseWriter it is used from the
// handler's goroutine only. It keeps http.Flusher, and Unwrap lets
// http.ResponseController reach the connection (SetWriteDeadline, Hijack).
type limitWriter struct {
	http.ResponseWriter
	overrun     atomic.Bool
	wroteHeader bool // a final (non-1xx) status has been sent
}

func (w *limitWriter) WriteHeader(code int) {
	if w.wroteHeader {
		w.ResponseWriter.WriteHeader(code) // let net/http log the superfluous call
		return
	}
	if code >= 200 {
		if w.overrun.Load() {
			code = http.StatusRequestEntityTooLarge
		}
		w.wroteHeader = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *limitWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *limitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
