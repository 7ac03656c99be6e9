package alarms

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/redundancy"
)

var (
	_ PubSub      = (*pubsub.Mediator)(nil)
	_ gate.Source = (*redundancy.RoleView)(nil)
	_ gate.Source = (*roles)(nil)
	_ PubSub      = (*busPort)(nil)
	_ Sink        = (*recSink)(nil)
)

// bus is an in-process pub/sub for several nodes: Publish delivers to the
// publisher's own subscribers and, unless drop says otherwise, to the other
// nodes' — synchronously, in publish order, as the mediator does per
// publisher.
type bus struct {
	mu    sync.Mutex
	ports []*busPort
	// drop, when set, loses a message on its way from one node to
	// another (never to the publisher's own subscribers).
	drop func(from, to string, topic string, msg proto.Message) bool
	// hold, when set, keeps a message on its way from one node to another
	// until release: it arrives late, after what the test does meanwhile.
	hold func(from, to string, topic string, msg proto.Message) bool
	held []heldMsg
}

type heldMsg struct {
	to    *busPort
	topic string
	msg   proto.Message
}

func (b *bus) setHold(f func(from, to, topic string, msg proto.Message) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hold = f
}

// release delivers the held messages, in the order they were published,
// and stops holding.
func (b *bus) release() {
	b.mu.Lock()
	held := b.held
	b.held, b.hold = nil, nil
	b.mu.Unlock()
	for _, h := range held {
		h.to.deliver(h.topic, h.msg)
	}
}

type busPort struct {
	b    *bus
	node string
	dead atomic.Bool
	mu   sync.Mutex
	subs map[string][]*busSub
}

type busSub struct {
	fn        pubsub.Handler
	cancelled atomic.Bool
}

func (b *bus) port(node string) *busPort {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := &busPort{b: b, node: node, subs: map[string][]*busSub{}}
	b.ports = append(b.ports, p)
	return p
}

func (b *bus) setDrop(f func(from, to, topic string, msg proto.Message) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drop = f
}

func (p *busPort) Publish(topic string, msg proto.Message) error {
	if p.dead.Load() {
		return nil
	}
	p.b.mu.Lock()
	ports, drop, hold := append([]*busPort(nil), p.b.ports...), p.b.drop, p.b.hold
	p.b.mu.Unlock()
	for _, to := range ports {
		if to.dead.Load() || to != p && drop != nil && drop(p.node, to.node, topic, msg) {
			continue
		}
		if to != p && hold != nil && hold(p.node, to.node, topic, msg) {
			p.b.mu.Lock()
			p.b.held = append(p.b.held, heldMsg{to, topic, proto.Clone(msg)})
			p.b.mu.Unlock()
			continue
		}
		to.deliver(topic, msg)
	}
	return nil
}

// deliver hands msg to the port's subscribers of topic.
func (p *busPort) deliver(topic string, msg proto.Message) {
	if p.dead.Load() {
		return
	}
	p.mu.Lock()
	subs := append([]*busSub(nil), p.subs[topic]...)
	p.mu.Unlock()
	for _, s := range subs {
		if !s.cancelled.Load() {
			s.fn(membership.UniqueAddress{}, proto.Clone(msg))
		}
	}
}

func (p *busPort) Subscribe(topic string, fn pubsub.Handler) func() {
	s := &busSub{fn: fn}
	p.mu.Lock()
	p.subs[topic] = append(p.subs[topic], s)
	p.mu.Unlock()
	return func() { s.cancelled.Store(true) }
}

// values is a fake ValueSource: readings set by the test.
type values struct {
	mu       sync.Mutex
	readings map[string]reading
	watchers map[string]map[int]func(any, ua.StatusCode, time.Time)
	next     int
	clock    clockwork.Clock
}

type reading struct {
	v  any
	st ua.StatusCode
}

func newValues(clock clockwork.Clock) *values {
	return &values{readings: map[string]reading{}, watchers: map[string]map[int]func(any, ua.StatusCode, time.Time){}, clock: clock}
}

func (v *values) Watch(device, tag string, fn func(any, ua.StatusCode, time.Time)) func() {
	key := device + "/" + tag
	v.mu.Lock()
	v.next++
	id := v.next
	if v.watchers[key] == nil {
		v.watchers[key] = map[int]func(any, ua.StatusCode, time.Time){}
	}
	v.watchers[key][id] = fn
	r, ok := v.readings[key]
	v.mu.Unlock()
	if !ok {
		r = reading{nil, ua.StatusBadWaitingForInitialData}
	}
	fn(r.v, r.st, v.clock.Now())
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		delete(v.watchers[key], id)
	}
}

// set stores a reading and tells the watchers.
func (v *values) set(key string, value any, st ua.StatusCode) {
	v.mu.Lock()
	v.readings[key] = reading{value, st}
	var fns []func(any, ua.StatusCode, time.Time)
	for _, fn := range v.watchers[key] {
		fns = append(fns, fn)
	}
	v.mu.Unlock()
	for _, fn := range fns {
		fn(value, st, v.clock.Now())
	}
}

func (v *values) watching(key string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.watchers[key])
}

// roles is a fake gate.Source: a node that is a cluster member once it
// counts a driver member.
type roles struct {
	role    atomic.Int32
	drivers atomic.Int32
	epoch   atomic.Uint64
}

func newRoles(r gate.Role, drivers int) *roles {
	x := &roles{}
	x.set(r, drivers)
	return x
}

func (r *roles) set(role gate.Role, drivers int) {
	r.role.Store(int32(role))
	r.drivers.Store(int32(drivers))
}

func (r *roles) Input() gate.Input {
	drivers := int(r.drivers.Load())
	return gate.Input{Role: gate.Role(r.role.Load()), Drivers: drivers, Member: drivers > 0, Epoch: r.epoch.Load()}
}

// recSink records what the Sink is told.
type recSink struct {
	mu     sync.Mutex
	calls  []string
	states map[string]State
}

func (s *recSink) Define(d Definition) { s.add("define " + d.Name) }
func (s *recSink) Remove(name string) {
	s.add("remove " + name)
	s.mu.Lock()
	delete(s.states, name)
	s.mu.Unlock()
}
func (s *recSink) Update(name string, st State) {
	s.add(fmt.Sprintf("update %s %s", name, st.Change))
	s.mu.Lock()
	if s.states == nil {
		s.states = map[string]State{}
	}
	s.states[name] = st
	s.mu.Unlock()
}

func (s *recSink) add(c string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

func (s *recSink) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// logBuf is a concurrency-safe log destination.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// node is one engine with its fakes.
type node struct {
	name   string
	e      *Engine
	sys    *actors.System
	vals   *values
	roles  *roles
	port   *busPort
	sink   *recSink
	log    *logBuf
	denied *denials

	mu   sync.Mutex
	seen []Transition // OnTransition
}

type denials struct {
	mu sync.Mutex
	n  map[string]int // "site/reason"
}

func (d *denials) PrimaryGateDenied(site, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n[site+"/"+reason]++
}

func (d *denials) get(k string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[k]
}

var uidSeq atomic.Uint64

func startNode(t testing.TB, name string, b *bus, clock clockwork.Clock, r *roles, tune func(*Options)) *node {
	t.Helper()
	n := &node{name: name, vals: newValues(clock), roles: r, port: b.port(name), sink: &recSink{}, log: &logBuf{},
		denied: &denials{n: map[string]int{}}}
	n.sys = actors.NewLocal(nil)
	logger := slog.New(slog.NewJSONHandler(n.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o := Options{
		ClusterID: "site-a", NodeID: name + ":4053", UID: 0x1000 + uidSeq.Add(1), Root: n.sys.Root(),
		Values: n.vals, Gate: gate.NewGuard(r, n.denied, logger), PubSub: n.port, Sink: n.sink, Clock: clock,
		Logger: logger,
	}
	if tune != nil {
		tune(&o)
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	n.e = e
	e.OnTransition(func(tr Transition) {
		n.mu.Lock()
		n.seen = append(n.seen, tr)
		n.mu.Unlock()
	})
	t.Cleanup(func() {
		n.stop()
		n.sys.Shutdown(false)
	})
	return n
}

// stop kills the node: its engine stops and its bus port goes dead.
func (n *node) stop() {
	n.port.dead.Store(true)
	n.e.Stop()
}

func (n *node) transitions() []Transition {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Transition(nil), n.seen...)
}

// settle waits until every node handled everything sent to it, twice over
// (a message one node handles may send another to a peer).
func settle(t testing.TB, nodes ...*node) {
	t.Helper()
	for round := 0; round < 3; round++ {
		for _, n := range nodes {
			if n.port.dead.Load() {
				continue
			}
			if err := n.e.sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// tick advances the clock by d in role-check steps. After each step it
// waits until every live node's engine handled its timers — each re-arms
// its two timers (role check, snapshot) at the end of handling one, and
// the fake clock runs timer functions on goroutines of their own — and
// then settles. nodes must be every live node on clock.
func tick(t testing.TB, clock *clockwork.FakeClock, d time.Duration, nodes ...*node) {
	t.Helper()
	live := 0
	for _, n := range nodes {
		if !n.port.dead.Load() {
			live++
		}
	}
	for step := time.Duration(0); step < d; step += DefaultRoleCheckInterval {
		clock.Advance(DefaultRoleCheckInterval)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := clock.BlockUntilContext(ctx, 2*live)
		cancel()
		if err != nil {
			t.Fatalf("the engines did not re-arm their timers: %v", err)
		}
		settle(t, nodes...)
	}
}

// pressDoc is a document with press1 (Temperature, Setpoint, Zero, Run)
// and the given alarms as name → condition, each at severity 700, source
// press1/Temperature.
func pressDoc(t testing.TB, alarms ...string) *deployment.Document {
	t.Helper()
	var parts []string
	for i := 0; i+1 < len(alarms); i += 2 {
		parts = append(parts, fmt.Sprintf(`{"name": %q, "source": "press1/Temperature", "condition": %q, "severity": 700, "message": "hot"}`, alarms[i], alarms[i+1]))
	}
	src := `{"clusterId": "site-a", "devices": [{"name": "press1", "driver": "modbus-tcp", "address": "127.0.0.1:502", "pollInterval": "100ms", "tags": [
		{"name": "Temperature", "table": "input", "address": 0, "type": "int16", "scale": 0.1},
		{"name": "Setpoint", "table": "holding", "address": 0, "type": "int16"},
		{"name": "Zero", "table": "holding", "address": 1, "type": "int16"},
		{"name": "Run", "table": "coil", "address": 0, "type": "bool"}]}],
		"alarms": [` + strings.Join(parts, ", ") + `]}`
	doc, err := deployment.Decode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
