package host

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/telemetry"
)

// levelPublisher forwards ServiceLevel values, suppressing repeats, and
// counts each change in otopcua.redundancy.service_level_change.
type levelPublisher struct {
	next    opcua.ServiceLevelPublisher
	metrics *telemetry.Metrics
	log     *slog.Logger

	mu   sync.Mutex
	last int // -1 before the first value; mu must be held.
}

func newLevelPublisher(next opcua.ServiceLevelPublisher, m *telemetry.Metrics, log *slog.Logger) *levelPublisher {
	return &levelPublisher{next: next, metrics: m, log: log, last: -1}
}

// Publish forwards level unless it repeats the last value.
func (p *levelPublisher) Publish(level byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == int(level) {
		return
	}
	p.log.Info("ServiceLevel changed", "from", p.last, "to", level)
	p.last = int(level)
	p.next.Publish(level)
	p.metrics.ServiceLevelChanged(level)
}

// debugHandler serves POST /debug/service-level?level=N (test hook).
func (p *levelPublisher) debugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("level"))
		if err != nil || n < 0 || n > 255 {
			http.Error(w, fmt.Sprintf("level=%q: want an integer 0-255", r.URL.Query().Get("level")), http.StatusBadRequest)
			return
		}
		p.Publish(byte(n))
		fmt.Fprintf(w, "ServiceLevel %d\n", n)
	})
}
