package health

import (
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkReadyzHandler is the cost of one /readyz answer with four cheap
// checks and one cached slow one, as a node serves it.
func BenchmarkReadyzHandler(b *testing.B) {
	ok := func() error { return nil }
	s := NewHTTPServer("127.0.0.1:0", HTTPOptions{}, Probes{
		Live: []Check{{Name: "actors", Run: Cached(500*time.Millisecond, func() error { time.Sleep(time.Millisecond); return nil })}},
		Ready: []Check{{Name: "opcua", Run: ok}, {Name: "cluster", Run: ok}, {Name: "configdb", Run: ok},
			{Name: "service_level", HealthyOnly: true, Run: ok}},
	}, nil, nil)
	for _, path := range []string{"/readyz?healthy=1", "/healthz"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			req := httptest.NewRequest("GET", path, nil)
			for b.Loop() {
				w := httptest.NewRecorder()
				s.mux.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
