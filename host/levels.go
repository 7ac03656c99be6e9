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

// Last returns the last level forwarded (what Server.ServiceLevel shows);
// false before the first.
func (p *levelPublisher) Last() (byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return byte(p.last), p.last >= 0
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

// levelSwitch sits between the redundancy runtime and levelPublisher.
// With the test hooks on, POST /debug/service-level owns Server.ServiceLevel
// from start-up: the runtime keeps computing (its latest level is kept and
// logged) but nothing it computes reaches the server until the hook hands
// control back with level=runtime. Without the hooks the runtime owns it
// and the hook does not exist.
type levelSwitch struct {
	next opcua.ServiceLevelPublisher

	mu     sync.Mutex
	manual bool // the hook owns the level; mu must be held.
	pinned bool // a manual failover fixed the level for good; mu must be held.
	latest byte // the runtime's latest level; mu must be held.
	has    bool // latest is set; mu must be held.
}

func newLevelSwitch(next opcua.ServiceLevelPublisher, manual bool) *levelSwitch {
	return &levelSwitch{next: next, manual: manual}
}

// Publish takes a level from the runtime.
func (s *levelSwitch) Publish(level byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latest, s.has = level, true
	if !s.manual && !s.pinned {
		s.next.Publish(level)
	}
}

// pin publishes level and keeps it until the process ends: neither the
// runtime nor the test hook changes it again. A manual failover pins 0
// while this node drains and leaves.
func (s *levelSwitch) pin(level byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pinned = true
	s.next.Publish(level)
}

// set publishes a level from the hook; the runtime stays out until release.
// It does nothing once the level is pinned.
func (s *levelSwitch) set(level byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.manual = true
	if !s.pinned {
		s.next.Publish(level)
	}
}

// release gives the level back to the runtime, whose latest level is
// published at once.
func (s *levelSwitch) release() (byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.manual = false
	if s.has && !s.pinned {
		s.next.Publish(s.latest)
	}
	return s.latest, s.has
}

// debugHandler serves the test hook POST /debug/service-level:
// level=0..255 publishes that level and keeps the runtime out;
// level=runtime hands Server.ServiceLevel back to the runtime.
func (s *levelSwitch) debugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("level")
		if q == "runtime" {
			if l, ok := s.release(); ok {
				fmt.Fprintf(w, "ServiceLevel %d (runtime)\n", l)
			} else {
				fmt.Fprintln(w, "ServiceLevel from the runtime (nothing computed yet)")
			}
			return
		}
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 || n > 255 {
			http.Error(w, fmt.Sprintf("level=%q: want an integer 0-255, or runtime", q), http.StatusBadRequest)
			return
		}
		s.set(byte(n))
		fmt.Fprintf(w, "ServiceLevel %d\n", n)
	})
}
