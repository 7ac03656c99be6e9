package host

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/otopcua/otopcua/internal/mutation"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/servicelevel"
	"github.com/otopcua/otopcua/telemetry"
)

// levelPublisher stands in front of the OPC UA server's Server.ServiceLevel
// and is the one place that suppresses ServiceLevel repeats: it forwards a
// level only when it differs from what the server shows
// (opcua.InitialServiceLevel, 255, before the first), and logs and counts
// each change in otopcua.redundancy.service_level_change. Every level it
// gets comes from servicelevel.Of.
type levelPublisher struct {
	next    opcua.ServiceLevelPublisher
	metrics *telemetry.Metrics
	log     *slog.Logger

	// claimPrimary is the secondary-claims-primary mutation: 240 shows as
	// 250. Set before the first Publish.
	claimPrimary bool
	// stuckLow is the secondary-stuck-low mutation: 240 shows as
	// mutation.StuckLowLevel. Set before the first Publish.
	stuckLow bool

	mu    sync.Mutex
	shows byte // what Server.ServiceLevel shows; mu must be held.
	has   bool // a level was forwarded; mu must be held.
}

func newLevelPublisher(next opcua.ServiceLevelPublisher, m *telemetry.Metrics, log *slog.Logger) *levelPublisher {
	return &levelPublisher{next: next, metrics: m, log: log, shows: opcua.InitialServiceLevel}
}

// Last returns the last level forwarded (what Server.ServiceLevel shows);
// false before the first.
func (p *levelPublisher) Last() (byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shows, p.has
}

// Publish forwards level unless the server already shows it.
func (p *levelPublisher) Publish(level byte) {
	if p.claimPrimary && level == servicelevel.Follower {
		level = servicelevel.Primary
	}
	if p.stuckLow && level == servicelevel.Follower {
		level = mutation.StuckLowLevel
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shows == level {
		return
	}
	from := -1
	if p.has {
		from = int(p.shows)
	}
	p.log.Info("ServiceLevel changed", "from", from, "to", level)
	p.shows, p.has = level, true
	p.next.Publish(level)
	p.metrics.ServiceLevelChanged(level)
}

// levelPins holds the ServiceLevel's two pins, servicelevel.Inputs.Pin:
// the manual failover's drain and the test hook's level. It only stores
// them; what they do to the level is servicelevel.Of's table.
type levelPins struct {
	mu      sync.Mutex
	pin     servicelevel.Pin       // mu must be held.
	changed func(servicelevel.Pin) // mu must be held.
}

// newLevelPins returns the pins of a node. With the test hooks on
// (EnvTestHooks), the hook owns Server.ServiceLevel from start-up and holds
// it at servicelevel.Unset until POST /debug/service-level names a level or
// hands it to the runtime.
func newLevelPins(testHooks bool) *levelPins {
	return &levelPins{pin: servicelevel.Pin{Hooked: testHooks, Hook: servicelevel.Unset}}
}

// get returns the current pins (PublishActorOptions.Pin).
func (p *levelPins) get() servicelevel.Pin {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pin
}

// follow calls fn with the pins at once and after every change, with the
// pins' lock held (so the calls come in the order of the changes): fn must
// not block and must not call back into p. It replaces an earlier fn.
func (p *levelPins) follow(fn func(servicelevel.Pin)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.changed = fn
	fn(p.pin)
}

// onChange calls fn after every change (see follow): a publish actor
// reads the pins itself (PublishActorOptions.Pin).
func (p *levelPins) onChange(fn func()) { p.follow(func(servicelevel.Pin) { fn() }) }

func (p *levelPins) set(edit func(*servicelevel.Pin)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	edit(&p.pin)
	if p.changed != nil {
		p.changed(p.pin)
	}
}

// drain sets the manual failover's pin for the rest of the process
// (drainer).
func (p *levelPins) drain() { p.set(func(pin *servicelevel.Pin) { pin.Drain = true }) }

// hook makes the test hook show level.
func (p *levelPins) hook(level byte) {
	p.set(func(pin *servicelevel.Pin) { pin.Hooked, pin.Hook = true, level })
}

// release hands the level back from the test hook to the runtime.
func (p *levelPins) release() { p.set(func(pin *servicelevel.Pin) { pin.Hooked = false }) }

// debugHandler serves the test hook POST /debug/service-level:
// level=0..255 makes the node show that level, whatever the runtime
// computes; level=runtime hands Server.ServiceLevel back to the runtime.
func (p *levelPins) debugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("level")
		if q == "runtime" {
			p.release()
			fmt.Fprintln(w, "ServiceLevel from the runtime")
			return
		}
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 || n > 255 {
			http.Error(w, fmt.Sprintf("level=%q: want an integer 0-255, or runtime", q), http.StatusBadRequest)
			return
		}
		p.hook(byte(n))
		fmt.Fprintf(w, "ServiceLevel %d\n", n)
	})
}

// detachedLevels publishes the ServiceLevel of a node without the driver
// role, where no publish actor gathers health inputs: servicelevel.Of of
// its pins alone (0 unless the test hook names a level), at once and on
// every pin change.
func detachedLevels(pins *levelPins, to redundancy.LevelPublisher) {
	pins.follow(func(pin servicelevel.Pin) { to.Publish(servicelevel.Of(servicelevel.Inputs{Pin: pin})) })
}
