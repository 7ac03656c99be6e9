package host

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/internal/mutation"
	"github.com/otopcua/otopcua/redundancy/servicelevel"
	"github.com/otopcua/otopcua/telemetry"
)

type recorder struct {
	mu  sync.Mutex
	got []byte
}

func (r *recorder) Publish(l byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, l)
}

func (r *recorder) all() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// fakeRuntime stands for the publish actor: it computes servicelevel.Of
// from its health inputs and the pins, and publishes every result.
type fakeRuntime struct {
	mu   sync.Mutex
	in   servicelevel.Inputs // mu must be held.
	pins *levelPins
	to   interface{ Publish(byte) }
}

var levelsT0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// healthyPrimary is a healthy, licensed Primary: 250.
func healthyPrimary() servicelevel.Inputs {
	return servicelevel.Inputs{Now: levelsT0, Status: servicelevel.MemberUp, HasDriverRole: true,
		DbHealthKnown: true, DbReachable: true, DbAsOf: levelsT0, SnapshotAsOf: levelsT0,
		IsDriverPrimary: true, Role: gate.RolePrimary, OpcUaProbeOk: true, Licence: gate.Licensed}
}

// primaryLevel is the level of an otherwise healthy Primary with licence l.
func primaryLevel(l gate.Licence) byte {
	in := healthyPrimary()
	in.Licence = l
	return servicelevel.Of(in)
}

func (r *fakeRuntime) computeWith(pin servicelevel.Pin) {
	r.mu.Lock()
	in := r.in
	r.mu.Unlock()
	in.Pin = pin
	r.to.Publish(servicelevel.Of(in))
}

// set changes the health inputs and recomputes, as a snapshot or tick does.
func (r *fakeRuntime) set(in servicelevel.Inputs) {
	r.mu.Lock()
	r.in = in
	r.mu.Unlock()
	r.computeWith(r.pins.get())
}

func newFakeRuntime(in servicelevel.Inputs, pins *levelPins, to interface{ Publish(byte) }) *fakeRuntime {
	r := &fakeRuntime{in: in, pins: pins, to: to}
	pins.follow(r.computeWith)
	return r
}

// TestLevelPublisherSuppressesRepeats: the publisher in front of the
// server forwards, logs and counts only changes of what the server shows,
// which starts at 255 (Unset).
func TestLevelPublisherSuppressesRepeats(t *testing.T) {
	rec := &recorder{}
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	p := newLevelPublisher(rec, m, slog.New(slog.DiscardHandler))
	if _, ok := p.Last(); ok {
		t.Fatal("Last reports a level before any was forwarded")
	}
	p.Publish(servicelevel.Unset) // what the server shows at start
	if got := rec.all(); len(got) != 0 {
		t.Fatalf("the server's start value was forwarded: %v", got)
	}
	if _, ok := p.Last(); ok {
		t.Fatal("Last reports a level although none was forwarded")
	}
	for _, l := range []byte{0, 0, 240, 250, 250, 240, 250} {
		p.Publish(l)
	}
	if got := rec.all(); !slices.Equal(got, []byte{0, 240, 250, 240, 250}) {
		t.Fatalf("server got %v, want [0 240 250 240 250] (repeats suppressed)", got)
	}
	if l, ok := p.Last(); !ok || l != 250 {
		t.Fatalf("Last() = %d, %v; want 250, true", l, ok)
	}
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(w.Result().Body)
	for _, want := range []string{`service_level_change_total{level="0"} 1`, `service_level_change_total{level="240"} 2`,
		`service_level_change_total{level="250"} 2`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(body), `level="255"`) {
		t.Error("/metrics counts a change to 255, the server's start value")
	}
}

// TestRuntimeOwnsLevelWithoutHooks: without the test hooks the pins are
// empty and the runtime's levels reach the server.
func TestRuntimeOwnsLevelWithoutHooks(t *testing.T) {
	rec := &recorder{}
	pins := newLevelPins(false)
	rt := newFakeRuntime(servicelevel.Inputs{}, pins, newLevelPublisher(rec, telemetry.NopMetrics(), slog.New(slog.DiscardHandler)))
	rt.set(healthyPrimary())
	rt.set(healthyPrimary())
	if got := rec.all(); !slices.Equal(got, []byte{0, 250}) {
		t.Fatalf("server got %v, want [0 250]", got)
	}
}

// TestLevelPinsTestHook: with the hooks on, the hook owns the level from
// start-up (the server keeps 255), shows the level it names whatever the
// runtime computes, and level=runtime hands back at once.
func TestLevelPinsTestHook(t *testing.T) {
	rec := &recorder{}
	pins := newLevelPins(true)
	rt := newFakeRuntime(healthyPrimary(), pins, newLevelPublisher(rec, telemetry.NopMetrics(), slog.New(slog.DiscardHandler)))
	h := pins.debugHandler()
	post := func(q string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/debug/service-level?level="+q, nil))
		return w.Code, w.Body.String()
	}
	// The hook owns the level from start-up: runtime levels wait.
	rt.set(healthyPrimary())
	if got := rec.all(); len(got) != 0 {
		t.Fatalf("runtime level reached the server while the hook owns it: %v", got)
	}
	if code, _ := post("240"); code != http.StatusOK {
		t.Fatalf("level=240: %d", code)
	}
	stale := healthyPrimary()
	stale.OpcUaProbeOk = false // 200
	rt.set(stale)
	if got := rec.all(); !slices.Equal(got, []byte{240}) {
		t.Fatalf("server got %v, want [240]", got)
	}
	for _, bad := range []string{"256", "-1", "x", ""} {
		if code, body := post(bad); code != http.StatusBadRequest || !strings.Contains(body, "runtime") {
			t.Fatalf("level=%q: %d %q", bad, code, body)
		}
	}
	// Back to the runtime: its level at once, then every change.
	if code, body := post("runtime"); code != http.StatusOK || !strings.Contains(body, "runtime") {
		t.Fatalf("level=runtime: %d %q", code, body)
	}
	rt.set(healthyPrimary())
	if got := rec.all(); !slices.Equal(got, []byte{240, 200, 250}) {
		t.Fatalf("server got %v, want [240 200 250]", got)
	}
}

// TestDetachedLevels: a node without the driver role shows 0 at once, the
// test hook's level while it names one, and 0 for good once it drains.
func TestDetachedLevels(t *testing.T) {
	rec := &recorder{}
	pins := newLevelPins(false)
	detachedLevels(pins, newLevelPublisher(rec, telemetry.NopMetrics(), slog.New(slog.DiscardHandler)))
	pins.hook(123)
	pins.hook(123)
	pins.release()
	pins.hook(77)
	pins.drain()
	pins.hook(250)
	if got := rec.all(); !slices.Equal(got, []byte{0, 123, 0, 77, 0}) {
		t.Fatalf("server got %v, want [0 123 0 77 0]", got)
	}
}

// TestSecondaryClaimsPrimaryMutation: the test-only mutation shows a
// Secondary's 240 as 250 and leaves every other level alone.
func TestSecondaryClaimsPrimaryMutation(t *testing.T) {
	rec := &recorder{}
	p := newLevelPublisher(rec, telemetry.NopMetrics(), slog.New(slog.DiscardHandler))
	p.claimPrimary = true
	for _, l := range []byte{0, 240, 200, 250} {
		p.Publish(l)
	}
	if got := rec.all(); !slices.Equal(got, []byte{0, 250, 200, 250}) {
		t.Fatalf("shown %v, want [0 250 200 250]", got)
	}
}

// TestMutationsNeedTheTestHooks: a node told to run a mutation without
// the test hooks refuses to start, naming both variables.
func TestMutationsNeedTheTestHooks(t *testing.T) {
	err := Run(context.Background(), nil, slog.New(slog.DiscardHandler), Options{Mutations: mutation.Set{SecondaryWrites: true}})
	if err == nil || !strings.Contains(err.Error(), "OTOPCUA_TEST_MUTATION=secondary-writes is a test-only switch and needs OTOPCUA_TEST_HOOKS=1") {
		t.Fatalf("Run: %v", err)
	}
}
