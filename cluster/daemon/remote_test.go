package daemon

// Tests over protoactor-go's real remote on loopback, one actor system per
// simulated process, pinning the seven measured remote behaviours of
// DESIGN.md ("Dependencies") against this runtime. A "kill" stops the
// daemon and the remote at once (the listener closes and the connections
// drop, as when a process dies); tests/clusterproc kills real processes.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otopcua/otopcua/actors"
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/cluster/wire"
	"github.com/otopcua/otopcua/internal/poll"
)

func needRemotes(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("several protoactor remotes in one process race on gRPC's global logger (remote.Start sets it); a real process starts one; scripts/test.sh runs this package again without -race")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is one simulated process: an actor system with its remote and a
// daemon.
type proc struct {
	name string
	port int // advertised cluster port (a proxy's when behind one)
	sys  *actors.System
	d    *Daemon
	log  *logSink
}

type procOpts struct {
	seeds     []int
	bindPort  int // default port
	configure func(*node.Config)
	connect   int // actors.Config.ConnectAttempts
}

func startProc(t *testing.T, name string, port int, o procOpts) *proc {
	t.Helper()
	needRemotes(t)
	sink := &logSink{}
	logger := slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bind := o.bindPort
	if bind == 0 {
		bind = port
	}
	sys, err := actors.Start(actors.Config{BindHost: "127.0.0.1", Port: bind, AdvertisePort: port, Logger: logger, ConnectAttempts: o.connect})
	if err != nil {
		t.Fatal(err)
	}
	var seeds []m.Address
	for _, s := range o.seeds {
		seeds = append(seeds, m.Address{Host: "127.0.0.1", Port: s})
	}
	cfg := node.DefaultConfig(m.UniqueAddress{Host: "127.0.0.1", Port: port, UID: NewUID()}, seeds)
	cfg.Roles = []string{"admin", "driver"}
	cfg.ClusterID = "site-a"
	if o.configure != nil {
		o.configure(&cfg)
	}
	d, err := Start(Options{Node: cfg, System: sys, Logger: logger, Linger: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, port: port, sys: sys, d: d, log: sink}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- log of %s ---\n%s", name, sink.String())
		}
	})
	return p
}

// kill stops the process's daemon and remote at once.
func (p *proc) kill() {
	p.d.Stop()
	p.sys.Shutdown(false)
}

func (p *proc) addr() m.Address { return m.Address{Host: "127.0.0.1", Port: p.port} }

func (p *proc) status(of *proc) m.Status {
	mb, ok := p.d.Snapshot().Gossip.MemberAt(of.addr())
	if !ok {
		return m.Removed
	}
	return mb.Status
}

func (p *proc) upWith(others ...*proc) bool {
	st := p.d.Snapshot()
	if len(st.Gossip.Members) != len(others)+1 || p.status(p) != m.Up {
		return false
	}
	for _, o := range others {
		if p.status(o) != m.Up {
			return false
		}
	}
	return true
}

func pair(t *testing.T, configure func(*node.Config)) (*proc, *proc) {
	t.Helper()
	pa, pb := freePort(t), freePort(t)
	seeds := []int{pa, pb}
	a := startProc(t, "a", pa, procOpts{seeds: seeds, configure: configure})
	b := startProc(t, "b", pb, procOpts{seeds: seeds, configure: configure})
	poll.CheckFor(t, 15*time.Second, 2*time.Millisecond, poll.True("a and b Up on both", func() bool { return a.upWith(b) && b.upWith(a) }))
	return a, b
}

func rawSystem(t *testing.T, connectAttempts int) *actors.System {
	t.Helper()
	needRemotes(t)
	s, err := actors.Start(actors.Config{BindHost: "127.0.0.1", Port: freePort(t), ConnectAttempts: connectAttempts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(false) })
	return s
}

func wua(u m.UniqueAddress) *wire.UniqueAddress {
	return &wire.UniqueAddress{Host: u.Host, Port: uint32(u.Port), Uid: u.UID}
}

func hb(from, to m.UniqueAddress, seq uint64) *wire.Heartbeat {
	return &wire.Heartbeat{From: wua(from), To: wua(to), Seq: seq}
}

// TestPinStaleMessageToNewIncarnationIsDropped pins behaviour (1): with
// protoactor's retrying writer (5 attempts, 2 s apart), a message sent to a
// dead process is queued and delivered to the next process at the same
// address; the daemon drops it because it names the old uid.
func TestPinStaleMessageToNewIncarnationIsDropped(t *testing.T) {
	port := freePort(t)
	b1 := startProc(t, "b1", port, procOpts{seeds: []int{port}})
	poll.CheckFor(t, 5*time.Second, 2*time.Millisecond, poll.True("b1 Up", func() bool { return b1.upWith() }))
	old := b1.d.Self()
	b1.kill()

	sender := rawSystem(t, 5) // protoactor's default schedule
	sender.Root().Send(actors.PID(b1.addr().String(), Name), hb(m.UniqueAddress{Host: "127.0.0.1", Port: 1, UID: 7}, old, 1))
	b2 := startProc(t, "b2", port, procOpts{seeds: []int{port}})
	start := time.Now()
	poll.CheckFor(t, 8*time.Second, 2*time.Millisecond, poll.True("stale heartbeat delivered to b2 and dropped", func() bool {
		return b2.d.Stats().WrongIncarnation >= 1
	}))
	took := time.Since(start)
	t.Logf("message queued for the dead incarnation reached the new one after %v and was dropped", took)
	if s := b2.d.Stats(); s.Received != s.WrongIncarnation {
		t.Fatalf("b2 received more than the stale message: %+v", s)
	}
	if !b2.upWith() {
		t.Fatalf("b2's membership disturbed: %v", b2.d.Snapshot().Gossip.Members)
	}
}

// TestPinLossAfterKillDoesNotBreakLiveness pins behaviour (2): messages sent
// in the first milliseconds after a peer died vanish without a trace;
// nothing waits for them — the survivor's connection event, probes and
// heartbeats decide, the dead member is removed, and its restarted
// successor joins as the youngest. It also measures the crash fast path.
func TestPinLossAfterKillDoesNotBreakLiveness(t *testing.T) {
	a, b := pair(t, nil)
	old := a.d.Self()
	a.kill()
	killed := time.Now()
	for i := range 3 { // lost: the connection is gone
		b.sys.Root().Send(actors.PID(a.addr().String(), Name), hb(b.d.Self(), old, uint64(100+i)))
	}
	poll.CheckFor(t, 5*time.Second, 2*time.Millisecond, poll.True("b oldest", func() bool {
		o, ok := b.d.Snapshot().Oldest("driver")
		return ok && o.Address == b.d.Self()
	}))
	oldest := time.Since(killed)
	poll.CheckFor(t, 5*time.Second, 2*time.Millisecond, poll.True("b alone", func() bool { return b.upWith() }))
	t.Logf("crash fast path: survivor oldest %v after the kill, dead member removed after %v",
		oldest.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	if !strings.Contains(b.log.String(), "cluster crash fast path: downing") {
		t.Fatalf("the crash was not handled by the fast path:\n%s", b.log.String())
	}
	a2 := startProc(t, "a2", a.port, procOpts{seeds: []int{a.port, b.port}})
	poll.CheckFor(t, 15*time.Second, 2*time.Millisecond, poll.True("a2 joined", func() bool { return a2.upWith(b) && b.upWith(a2) }))
	if o, _ := b.d.Snapshot().Oldest("driver"); o.Address != b.d.Self() {
		t.Fatalf("the restarted node must join as the youngest: oldest %v", o.Address)
	}
	if s := a2.d.Stats(); s.WrongIncarnation != 0 {
		t.Fatalf("messages for the dead incarnation reached its successor: %+v", s)
	}
}

// TestPinReconnectToRestartedPeerIsFast pins behaviour (3): while a peer is
// dead the survivor keeps sending to its address (heartbeats; the fast path
// is off here so that it stays a member); the dial gate keeps those sends
// away from protoactor, so when a new process listens at the address the
// survivor reaches it at once instead of after protoactor's 2 s retry
// sleep, and nothing queued for the dead process is delivered to it.
func TestPinReconnectToRestartedPeerIsFast(t *testing.T) {
	a, b := pair(t, func(c *node.Config) { c.CrashFastPath = false })
	// The gate may already have dropped sends while b was starting (a's
	// first InitJoin can reach b's port before it listens): count from here.
	before := a.d.Stats().Transport.GateDropped
	b.kill()
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("a's sends to the dead peer held back by the gate", func() bool {
		return a.d.Stats().Transport.GateDropped >= before+2
	}))
	if dead := a.d.DeadPeers(); len(dead) != 1 || dead[0] != b.addr() {
		t.Fatalf("DeadPeers = %v, want [%v]", dead, b.addr())
	}
	b2 := startProc(t, "b2", b.port, procOpts{seeds: []int{a.port, b.port}})
	start := time.Now()
	poll.CheckFor(t, 3*time.Second, 2*time.Millisecond, poll.True("b2 hears from a", func() bool { return b2.d.Stats().Received >= 1 }))
	took := time.Since(start)
	t.Logf("restarted peer reached %v after it started listening (the gate had dropped %d sends before the kill)", took.Round(time.Millisecond), before)
	if took > 500*time.Millisecond {
		t.Fatalf("reconnect took %v; protoactor's retry sleep was not avoided", took)
	}
	if s := b2.d.Stats(); s.WrongIncarnation != 0 {
		t.Fatalf("stale messages delivered to the new incarnation: %+v", s)
	}
}

// blackhole is a TCP proxy that can stop forwarding without closing any
// connection: a silent partition (no RST, no FIN).
type blackhole struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newBlackhole(t *testing.T, target int) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackhole{ln: ln, target: fmt.Sprintf("127.0.0.1:%d", target)}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	return p
}

func (p *blackhole) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *blackhole) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *blackhole) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				dst.Close()
			}
			dst.Close()
			return
		}
		if p.cut.Load() {
			continue // swallowed
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			return
		}
	}
}

// TestPinSilentPartitionSeenByHeartbeats pins behaviour (5): gRPC has no
// keepalive and protoactor no deadline, so a link that silently stops
// carrying bytes raises no transport event at all; only the daemon's
// heartbeats (phi detector) notice it.
func TestPinSilentPartitionSeenByHeartbeats(t *testing.T) {
	ra, rb := freePort(t), freePort(t)
	pa, pb := newBlackhole(t, ra), newBlackhole(t, rb)
	seeds := []int{pa.port(), pb.port()}
	fast := func(c *node.Config) {
		c.HeartbeatInterval = 500
		c.FailureDetector.FirstHeartbeatEstimate = 500
		c.FailureDetector.AcceptableHeartbeatPause = 1500
	}
	a := startProc(t, "a", pa.port(), procOpts{seeds: seeds, bindPort: ra, configure: fast})
	b := startProc(t, "b", pb.port(), procOpts{seeds: seeds, bindPort: rb, configure: fast})
	poll.CheckFor(t, 15*time.Second, 2*time.Millisecond, poll.True("a and b Up through the proxies", func() bool { return a.upWith(b) && b.upWith(a) }))

	pa.cut.Store(true)
	pb.cut.Store(true)
	cut := time.Now()
	poll.CheckFor(t, 10*time.Second, 2*time.Millisecond, poll.True("a holds b unreachable", func() bool {
		return !a.d.Snapshot().Gossip.Reachability.IsReachableFrom(a.d.Self(), b.d.Self())
	}))
	took := time.Since(cut)
	t.Logf("silent partition detected by heartbeats after %v", took.Round(time.Millisecond))
	if took < time.Second {
		t.Fatalf("detected after %v: faster than the detector allows, so not by heartbeats", took)
	}
	if strings.Contains(a.log.String(), `"msg":"cluster connection lost"`) {
		t.Fatalf("the transport reported the silent link broken; the pin is stale:\n%s", a.log.String())
	}
	if a.status(b) != m.Up || time.Since(cut) > 10*time.Second {
		t.Fatalf("silent peer must not be downed before auto-down's window: %v", a.status(b))
	}
}

// TestPinStrangersCannotCorruptMembership pins behaviour (7): protoactor's
// block list is not enforced, so the daemon itself refuses what a
// non-member, a removed incarnation or a corrupt sender sends.
func TestPinStrangersCannotCorruptMembership(t *testing.T) {
	a, b := pair(t, nil)
	rogue := rawSystem(t, 1)
	a.sys.Remote.BlockList().Block(rogue.Actor.ID) // not enforced: everything below still arrives
	stranger := m.UniqueAddress{Host: "127.0.0.1", Port: 1, UID: 4242}
	to := a.d.Self()
	w := func(msg node.Message) any {
		x, err := wire.ToWire(msg)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	target := actors.PID(a.addr().String(), Name)
	evil := m.NewGossip(m.NewMember(stranger, nil, "").WithUp(1), m.NewMember(a.d.Self(), nil, "").WithUp(2),
		m.NewMember(b.d.Self(), nil, "").WithStatus(m.Down))
	corrupt := wire.GossipToWire(evil)
	corrupt.Members = append(corrupt.Members, corrupt.Members[0])
	before := a.d.Stats()
	sends := []any{
		w(node.Down{Header: node.Header{From: stranger, To: to}, Node: b.addr()}),
		w(node.Leave{Header: node.Header{From: stranger, To: to}, Node: a.addr()}),
		w(node.GossipEnvelope{Header: node.Header{From: stranger, To: to}, Gossip: evil}),
		&wire.GossipEnvelope{From: wua(b.d.Self()), To: wua(to), Gossip: corrupt}, // spoofs b
		w(node.Down{Header: node.Header{From: stranger, To: m.UniqueAddress{Host: to.Host, Port: to.Port, UID: to.UID + 1}}, Node: b.addr()}),
	}
	for _, msg := range sends {
		rogue.Root().Send(target, msg)
	}
	poll.CheckFor(t, 5*time.Second, 2*time.Millisecond, poll.True("all rogue messages received", func() bool {
		return a.d.Stats().Received-before.Received >= uint64(len(sends))
	}))
	s := a.d.Stats()
	if s.UnknownSender-before.UnknownSender != 2 || s.Invalid-before.Invalid != 1 || s.WrongIncarnation-before.WrongIncarnation != 1 {
		t.Fatalf("refusals %+v (before %+v)", s, before)
	}
	// the gossip from a stranger reached the core, which ignores it
	if !a.upWith(b) || !b.upWith(a) || a.d.Info().Finished {
		t.Fatalf("membership corrupted: %v", a.d.Snapshot().Gossip.Members)
	}

	// a removed incarnation is quarantined
	oldB := b.d.Self()
	b.kill()
	poll.CheckFor(t, 5*time.Second, 2*time.Millisecond, poll.True("b removed", func() bool { return a.status(b) == m.Removed }))
	rogue.Root().Send(target, hb(oldB, to, 1))
	poll.CheckFor(t, 5*time.Second, 2*time.Millisecond, poll.True("quarantined", func() bool { return a.d.Stats().Quarantined >= 1 }))
}
