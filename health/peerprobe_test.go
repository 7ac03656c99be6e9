package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/pubsub"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHelloProbeAgainstOtopcua probes a real otopcua OPC UA server on
// loopback: Hello answered by Acknowledge, and the probe's closing ERR
// ends the connection quietly (no Info line per probe on the server).
func TestHelloProbeAgainstOtopcua(t *testing.T) {
	var logs lockedBuf
	srv, err := opcua.New(opcua.Config{
		ListenHost: "127.0.0.1", Port: opcua.AnyPort, PublicHostname: "127.0.0.1", ApplicationURI: "urn:probe:test",
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		pctx, pcancel := context.WithTimeout(context.Background(), ProbeTimeout)
		err := HelloProbe(pctx, srv.EndpointURL())
		pcancel()
		if err != nil {
			t.Fatalf("probe of %s: %v", srv.EndpointURL(), err)
		}
	}
	_ = srv.Close()
	if strings.Contains(logs.String(), "channel closed") {
		t.Fatalf("the server logged the probes' connections:\n%s", logs.String())
	}
}

func TestHelloProbeFailures(t *testing.T) {
	// A closed port: refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	// A silent listener: accepts, never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	// Something else on the port: an HTTP server.
	web := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	wl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = web.Serve(wl) }()
	defer web.Close()

	tests := []struct {
		name, addr string
		budget     time.Duration
	}{
		{"closed port", closed, 100 * time.Millisecond},
		{"silent listener", silent.Addr().String(), 600 * time.Millisecond},
		{"HTTP server", wl.Addr().String(), 600 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := HelloProbe(ctx, "opc.tcp://"+tt.addr)
			if err == nil {
				t.Fatal("the probe succeeded")
			}
			if d := time.Since(start); d > tt.budget {
				t.Fatalf("the probe took %v (budget %v): %v", d, tt.budget, err)
			}
		})
	}
}

func entry(id string, uid uint64, role redundancy.Role, endpoint string) redundancy.Entry {
	return redundancy.Entry{NodeID: id, UID: uid, Role: role, IsDriverPrimary: role == redundancy.RolePrimary,
		ClusterID: "pair", OpcUaEndpoint: endpoint, Status: m.Up}
}

func snap(es ...redundancy.Entry) redundancy.Snapshot {
	s := redundancy.Snapshot{Entries: map[string]redundancy.Entry{}, Epochs: redundancy.EpochBook{}}
	for _, e := range es {
		s.Entries[e.NodeID] = e
		if e.Role == redundancy.RolePrimary {
			s.Epochs[e.ClusterID] = redundancy.EpochState{Epoch: 1, Primary: e.NodeID, PrimaryUID: e.UID}
		}
	}
	return s
}

func upMember(host string, port int, uid uint64, st m.Status) m.Member {
	mb := m.NewMember(m.UniqueAddress{Host: host, Port: port, UID: uid}, []string{"driver"}, "pair")
	mb.Status, mb.UpNumber = st, int(uid)
	return mb
}

func TestDesiredPeers(t *testing.T) {
	self := m.UniqueAddress{Host: "h", Port: 1, UID: 1}
	s := snap(
		entry("h:1", 1, redundancy.RolePrimary, "opc.tcp://h:4841"),
		entry("h:2", 2, redundancy.RoleSecondary, "opc.tcp://h:4842"),
		entry("h:3", 3, redundancy.RoleSecondary, ""),
		entry("h:4", 4, redundancy.RoleDetached, "opc.tcp://h:4844"),
		entry("h:5", 5, redundancy.RoleSecondary, "opc.tcp://h:4845"),
	)
	all := m.State{Self: self, Gossip: m.NewGossip(upMember("h", 1, 1, m.Up), upMember("h", 2, 2, m.Up),
		upMember("h", 3, 3, m.Up), upMember("h", 4, 4, m.Up), upMember("h", 5, 5, m.Up))}
	tests := []struct {
		name    string
		members m.State
		want    []string
	}{
		{"other driver peers with an endpoint", all, []string{"h:2", "h:5"}},
		{"empty membership view: the snapshot decides", m.State{Self: self}, []string{"h:2", "h:5"}},
		{"a Down peer is not probed", m.State{Self: self, Gossip: m.NewGossip(upMember("h", 1, 1, m.Up),
			upMember("h", 2, 2, m.Down), upMember("h", 5, 5, m.Up))}, []string{"h:5"}},
		{"a peer gone from membership is not probed", m.State{Self: self, Gossip: m.NewGossip(upMember("h", 1, 1, m.Up),
			upMember("h", 2, 2, m.Up))}, []string{"h:2"}},
		{"a new incarnation the snapshot does not know yet is not probed", m.State{Self: self, Gossip: m.NewGossip(upMember("h", 1, 1, m.Up),
			upMember("h", 2, 22, m.Up), upMember("h", 5, 5, m.Leaving))}, []string{"h:5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DesiredPeers(s, self, tt.members)
			var ids []string
			for id, p := range got {
				ids = append(ids, id)
				if p.Endpoint != s.Entries[id].OpcUaEndpoint || p.NodeID != id {
					t.Fatalf("peer %s = %+v", id, p)
				}
			}
			slices.Sort(ids)
			if !slices.Equal(ids, tt.want) {
				t.Fatalf("probed %v, want %v", ids, tt.want)
			}
		})
	}
}

// fakeMembers and fakeBus stand in for the membership daemon and the
// pub/sub mediator.
type fakeMembers struct {
	mu   sync.Mutex
	st   m.State
	subs map[int]func(m.Event)
	next int
}

func (f *fakeMembers) Self() m.UniqueAddress { return f.st.Self }
func (f *fakeMembers) Snapshot() m.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}
func (f *fakeMembers) Subscribe(fn func(m.Event)) (m.State, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.subs[id] = fn
	return f.st, func() { f.mu.Lock(); delete(f.subs, id); f.mu.Unlock() }
}
func (f *fakeMembers) set(ms ...m.Member) {
	f.mu.Lock()
	f.st.Gossip = m.NewGossip(ms...)
	var fns []func(m.Event)
	for _, fn := range f.subs {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(m.Event{Kind: m.MemberDowned})
	}
}

type fakeBus struct {
	mu        sync.Mutex
	subs      map[int]func(m.UniqueAddress, proto.Message)
	next      int
	published []*wire.OpcUaProbeResult
}

func (b *fakeBus) Publish(_ string, msg proto.Message) error {
	b.mu.Lock()
	if r, ok := msg.(*wire.OpcUaProbeResult); ok {
		b.published = append(b.published, r)
	}
	var fns []func(m.UniqueAddress, proto.Message)
	for _, fn := range b.subs {
		fns = append(fns, fn)
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(m.UniqueAddress{}, msg)
	}
	return nil
}
func (b *fakeBus) Subscribe(_ string, fn pubsub.Handler) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.subs[id] = fn
	return func() { b.mu.Lock(); delete(b.subs, id); b.mu.Unlock() }
}
func (b *fakeBus) results() []*wire.OpcUaProbeResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.published)
}

// fakeProber counts probes per endpoint and fails the endpoints in bad.
type fakeProber struct {
	mu    sync.Mutex
	calls map[string]int
	bad   map[string]bool
}

func (p *fakeProber) probe(_ context.Context, endpoint string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[endpoint]++
	if p.bad[endpoint] {
		return errors.New("refused")
	}
	return nil
}

func (p *fakeProber) count(endpoint string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[endpoint]
}

func TestPeerProbeSupervisorSpawnsAndStops(t *testing.T) {
	self := m.UniqueAddress{Host: "127.0.0.1", Port: 4001, UID: 1}
	members := &fakeMembers{st: m.State{Self: self}, subs: map[int]func(m.Event){}}
	members.set(upMember("127.0.0.1", 4001, 1, m.Up), upMember("127.0.0.1", 4002, 2, m.Up))
	bus := &fakeBus{subs: map[int]func(m.UniqueAddress, proto.Message){}}
	prober := &fakeProber{calls: map[string]int{}, bad: map[string]bool{"opc.tcp://127.0.0.1:4900": true}}
	clock := clockwork.NewFakeClockAt(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	sup := NewPeerProbeSupervisor(PeerProbeOptions{Membership: members, PubSub: bus, Probe: prober.probe, Clock: clock})
	sup.Start(context.Background())
	defer sup.Stop()
	publish := func(s redundancy.Snapshot) { bus.Publish(wire.Topic, s.ToWire()) }
	const epB = "opc.tcp://127.0.0.1:4842"

	// The peer appears: probed at once, result published about it.
	publish(snap(entry("127.0.0.1:4001", 1, redundancy.RolePrimary, "opc.tcp://127.0.0.1:4841"),
		entry("127.0.0.1:4002", 2, redundancy.RoleSecondary, epB)))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the first probe", func() bool { return len(bus.results()) == 1 }))
	r := bus.results()[0]
	if r.GetTarget() != "127.0.0.1:4002" || !r.GetOk() || r.GetProber() != "127.0.0.1:4001" || r.GetEndpoint() != epB ||
		r.GetAtUnixMs() != clock.Now().UnixMilli() {
		t.Fatalf("result %v", r)
	}
	if got := sup.Probing(); len(got) != 1 || got["127.0.0.1:4002"] != epB {
		t.Fatalf("probing %v: only the other driver", got)
	}
	if prober.count("opc.tcp://127.0.0.1:4841") != 0 {
		t.Fatal("the node probed itself")
	}
	// Every ProbeInterval: another probe.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := 2; i <= 3; i++ {
		if err := clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(ProbeInterval)
		poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True(fmt.Sprintf("probe %d", i), func() bool { return prober.count(epB) == i }))
	}

	// The peer restarts with another endpoint: the probe is replaced,
	// and a failing endpoint publishes ok=false with the reason.
	members.set(upMember("127.0.0.1", 4001, 1, m.Up), upMember("127.0.0.1", 4002, 3, m.Up))
	publish(snap(entry("127.0.0.1:4001", 1, redundancy.RolePrimary, ""),
		entry("127.0.0.1:4002", 3, redundancy.RoleSecondary, "opc.tcp://127.0.0.1:4900")))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the failing probe", func() bool {
		rs := bus.results()
		return !rs[len(rs)-1].GetOk() && rs[len(rs)-1].GetError() != ""
	}))
	if got := sup.Probing(); got["127.0.0.1:4002"] != "opc.tcp://127.0.0.1:4900" {
		t.Fatalf("probing %v after the restart", got)
	}

	// The peer departs (Down in membership, still in the last snapshot):
	// the probe stops and nothing more is probed however many periods
	// pass. A third driver, c, joins and stays: its probe of each period,
	// counted after the advance, is the event the departed one's absence
	// is read after.
	members.set(upMember("127.0.0.1", 4001, 1, m.Up), upMember("127.0.0.1", 4002, 3, m.Down))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the probe stops", func() bool { return len(sup.Probing()) == 0 }))
	const epC = "opc.tcp://127.0.0.1:4843"
	members.set(upMember("127.0.0.1", 4001, 1, m.Up), upMember("127.0.0.1", 4002, 3, m.Down), upMember("127.0.0.1", 4003, 4, m.Up))
	publish(snap(entry("127.0.0.1:4001", 1, redundancy.RolePrimary, ""),
		entry("127.0.0.1:4002", 3, redundancy.RoleSecondary, "opc.tcp://127.0.0.1:4900"),
		entry("127.0.0.1:4003", 4, redundancy.RoleSecondary, epC)))
	resultsOf := func(target string) int {
		n := 0
		for _, r := range bus.results() {
			if r.GetTarget() == target {
				n++
			}
		}
		return n
	}
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("c probed", func() bool { return resultsOf("127.0.0.1:4003") == 1 }))
	if got := sup.Probing(); len(got) != 1 || got["127.0.0.1:4003"] != epC {
		t.Fatalf("probing %v: only c, not the departed peer", got)
	}
	n, probedB := len(bus.results()), prober.count("opc.tcp://127.0.0.1:4900")
	for i := 1; i <= 5; i++ {
		if err := clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(ProbeInterval)
		// c's result is published after its probe ends, so its next tick
		// finds it idle.
		poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True(fmt.Sprintf("c's probe %d", i+1), func() bool { return resultsOf("127.0.0.1:4003") == 1+i }))
	}
	if got := len(bus.results()); got != n+5 {
		t.Fatalf("%d results after the peer departed", got-n-5)
	}
	if got := prober.count("opc.tcp://127.0.0.1:4900"); got != probedB {
		t.Fatalf("the departed peer was probed %d more times", got-probedB)
	}

	// Stop with a probe running: it ends too.
	members.set(upMember("127.0.0.1", 4001, 1, m.Up), upMember("127.0.0.1", 4002, 3, m.Up))
	poll.CheckFor(t, 5*time.Second, time.Millisecond, poll.True("the probe restarts", func() bool {
		got := sup.Probing()
		return len(got) == 1 && got["127.0.0.1:4002"] != ""
	}))
	sup.Stop()
	if len(sup.Probing()) != 0 {
		t.Fatal("Stop left a probe")
	}
}
