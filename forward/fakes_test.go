package forward

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/gate"
)

// fakeGate answers every site with one decision, changed by set.
type fakeGate struct{ d atomic.Pointer[gate.Decision] }

func newGate(allow bool, epoch uint64) *fakeGate {
	g := &fakeGate{}
	g.set(allow, epoch)
	return g
}

func (g *fakeGate) set(allow bool, epoch uint64) {
	d := gate.Decision{Allow: allow, Reason: gate.DeniedSecondary}
	if allow {
		d.Reason, d.Epoch = gate.Allowed, epoch
	}
	g.d.Store(&d)
}

func (g *fakeGate) Check(gate.Site) gate.Decision { return *g.d.Load() }

// device counts the executions per key, like a device logging each write.
type device struct {
	mu    sync.Mutex
	runs  map[Key]int
	block chan struct{} // non-nil: Execute waits for it
	st    ua.StatusCode
}

func newDevice() *device { return &device{runs: make(map[Key]int)} }

func (d *device) Execute(ctx context.Context, req Request, _ uint64) (ua.StatusCode, []byte) {
	d.mu.Lock()
	d.runs[req.Key]++
	b := d.block
	d.mu.Unlock()
	if b != nil {
		select {
		case <-b:
		case <-ctx.Done():
			return ua.StatusBadTimeout, nil
		}
	}
	return d.st, []byte(req.Op)
}

func (d *device) count(k Key) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs[k]
}

func operatorsOnly(role string, right Right) bool { return role == "Operator" }

type node struct {
	name string
	gate *fakeGate
	dev  *device
	h    *Handler
	logs *bytes.Buffer
}

func newNode(name string, primary bool, epoch uint64, clk clockwork.Clock) *node {
	n := &node{name: name, gate: newGate(primary, epoch), dev: newDevice(), logs: &bytes.Buffer{}}
	n.h = NewHandler(HandlerOptions{Node: name, Gate: n.gate, Authorize: operatorsOnly, Exec: n.dev,
		PerSender: 2, Clock: clk, Logger: slog.New(slog.NewTextHandler(&syncWriter{w: n.logs}, nil))})
	return n
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// primaryView is a PrimaryOf whose answer the test changes.
type primaryView struct {
	mu    sync.Mutex
	node  string
	epoch uint64
}

func (p *primaryView) set(node string, epoch uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.node, p.epoch = node, epoch
}

func (p *primaryView) get() (string, uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.node, p.epoch, p.node != ""
}

// drive runs Forward on its own goroutine and advances the fake clock by
// backoff whenever the Sender waits (its deadline's timer and its backoff
// timer), until Forward returns; between advances it calls step with the
// number of waits so far, where a test changes the world.
func drive(t *testing.T, clk *clockwork.FakeClock, s *Sender, req Request, step func(waits int)) Response {
	t.Helper()
	done := make(chan Response, 1)
	go func() { done <- s.Forward(context.Background(), req) }()
	deadline := time.Now().Add(20 * time.Second)
	for waits := 0; time.Now().Before(deadline); {
		select {
		case r := <-done:
			return r
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := clk.BlockUntilContext(ctx, 2)
		cancel()
		if err != nil {
			continue
		}
		waits++
		if step != nil {
			step(waits)
		}
		clk.Advance(s.o.Backoff)
	}
	t.Fatal("Forward did not return within 20 s")
	return Response{}
}
