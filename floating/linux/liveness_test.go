package linux

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otopcua/otopcua/floating"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/netem"
)

// sampleEvery is the sampler's round: one ARP/ND probe every 20 ms.
const sampleEvery = 20 * time.Millisecond

// round is one probe of the sampler: when it started and every MAC that
// answered it.
type round struct {
	start time.Time
	macs  []net.HardwareAddr
}

// sampler probes the address from the client's namespace back to back,
// one 20 ms probe per round, for the whole test: an observer of its own,
// not the code under test.
type sampler struct {
	mu     sync.Mutex
	rounds []round // mu must be held.
	err    error   // mu must be held.
	stopc  chan struct{}
	done   chan struct{}
}

func startSampler(t *testing.T, h *netem.Host, addr netip.Addr) *sampler {
	t.Helper()
	s := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stopc:
				return
			default:
			}
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), sampleEvery)
			macs, err := Probe(ctx, link(h), addr)
			cancel()
			s.mu.Lock()
			s.rounds = append(s.rounds, round{start: start, macs: macs})
			if err != nil && s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *sampler) stop() {
	select {
	case <-s.stopc:
	default:
		close(s.stopc)
	}
	<-s.done
}

// results stops the sampler and returns its rounds; a probe error fails t.
func (s *sampler) results(t *testing.T) []round {
	t.Helper()
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		t.Fatalf("sampler: %v", s.err)
	}
	return s.rounds
}

// seen: some round that started at or after from saw mac.
func (s *sampler) seen(mac net.HardwareAddr, from time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rounds {
		if !r.start.Before(from) && hasMAC(r.macs, mac) {
			return true
		}
	}
	return false
}

// waitSeen waits until a round that started at or after from saw mac.
func (s *sampler) waitSeen(t *testing.T, who string, mac net.HardwareAddr, from time.Time) {
	t.Helper()
	poll.CheckFor(t, 10*time.Second, sampleEvery, func() error {
		if !s.seen(mac, from) {
			return fmt.Errorf("the sampler has not seen %s (%s) answer yet", who, mac)
		}
		return nil
	})
}

// waitSilent waits until n rounds in a row that started at or after from
// saw nobody.
func (s *sampler) waitSilent(t *testing.T, from time.Time, n int) {
	t.Helper()
	poll.CheckFor(t, 10*time.Second, sampleEvery, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		quiet := 0
		for _, r := range s.rounds {
			switch {
			case r.start.Before(from):
			case len(r.macs) == 0:
				quiet++
			default:
				quiet = 0
			}
		}
		if quiet < n {
			return fmt.Errorf("%d silent rounds in a row since %v, want %d", quiet, from.Format("15:04:05.000"), n)
		}
		return nil
	})
}

func hasMAC(macs []net.HardwareAddr, m net.HardwareAddr) bool {
	for _, x := range macs {
		if x.String() == m.String() {
			return true
		}
	}
	return false
}

// verdict is what the sampler's rounds show about two holders a then b.
type verdict struct {
	rounds, dual, answered int
	firstA, firstB         int // index of the first round that saw it, -1 none
	aAfter                 int // rounds that started at or after aSilentFrom and saw a
}

func judge(rounds []round, a, b net.HardwareAddr, aSilentFrom time.Time) verdict {
	v := verdict{rounds: len(rounds), firstA: -1, firstB: -1}
	for i, r := range rounds {
		if len(r.macs) >= 2 {
			v.dual++
		}
		if len(r.macs) > 0 {
			v.answered++
		}
		if hasMAC(r.macs, a) && v.firstA < 0 {
			v.firstA = i
		}
		if hasMAC(r.macs, b) && v.firstB < 0 {
			v.firstB = i
		}
		if !r.start.Before(aSilentFrom) && hasMAC(r.macs, a) {
			v.aAfter++
		}
	}
	return v
}

// check fails t unless the rounds show a, then b, never two MACs in one
// round, and a never after aSilentFrom.
func (v verdict) check(t *testing.T, rounds []round) {
	t.Helper()
	t.Logf("sampler: %d rounds of %v, %d answered, %d with two MACs, first A at round %d, first B at %d, A after it fell silent in %d",
		v.rounds, sampleEvery, v.answered, v.dual, v.firstA, v.firstB, v.aAfter)
	if v.dual != 0 || v.aAfter != 0 {
		var lines []string
		for _, r := range rounds {
			if len(r.macs) > 0 {
				lines = append(lines, r.start.Format("15:04:05.000")+" "+macsString(r.macs))
			}
		}
		t.Fatalf("%d rounds saw two MACs, %d saw A after it fell silent; the rounds that saw anyone:\n%s", v.dual, v.aAfter, strings.Join(lines, "\n"))
	}
	if v.firstA < 0 || v.firstB < 0 || v.firstA > v.firstB {
		t.Fatalf("the sampler saw A first at round %d and B first at round %d; want A, then B", v.firstA, v.firstB)
	}
}

// serveName listens on 0.0.0.0 (or ::) port 7000 in h and tells every
// client h's name: which host took the connection.
func serveName(t *testing.T, h *netem.Host, v6 bool) {
	t.Helper()
	at := "0.0.0.0:7000"
	if v6 {
		at = "[::]:7000"
	}
	l, err := h.Listen("tcp", at)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, h.Name)
			c.Close()
		}
	}()
}

// whoServes dials addr:7000 from the client and reads the name of the host
// that took the connection.
func whoServes(t *testing.T, client *netem.Host, addr netip.Addr) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, "tcp", netip.AddrPortFrom(addr, 7000).String())
	if err != nil {
		t.Fatalf("the client cannot connect to %s:7000: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFrozenHolderFallsSilentIPv4: A seizes with a short hold and is then
// "frozen" (its loop never renews): its responder falls silent when the
// hold ends although the address stays on its lo, B takes the address, and
// A "wakes" to a release. A sampler in the client's namespace probes every
// 20 ms for the whole test and never sees two MACs in one round, nor A
// after its hold ended; it sees A, then B. The client really connects: to
// A after the seize, to B after the takeover.
func TestFrozenHolderFallsSilentIPv4(t *testing.T) { frozenHolder(t, float4) }

// TestFrozenHolderFallsSilentIPv6 is the same over IPv6: neighbour
// solicitations answered by the responder (joined to the solicited-node
// group), the kernel silent for an address on lo.
func TestFrozenHolderFallsSilentIPv6(t *testing.T) { frozenHolder(t, float6) }

func frozenHolder(t *testing.T, float netip.Prefix) {
	s := newSegment(t)
	v6 := float.Addr().Is6()
	if v6 {
		s.withIPv6(t)
	}
	macA, macB := macOf(t, s.a), macOf(t, s.b)
	const hold = 1500 * time.Millisecond
	ea := executorHold(t, s.a, float, nil, hold)
	eb := executor(t, s.b, float, nil)
	cl := handleIn(t, s.client)
	addr := float.Addr()
	serveName(t, s.a, v6)
	serveName(t, s.b, v6)
	smp := startSampler(t, s.client, addr)
	ctx := context.Background()

	seized := time.Now()
	apply(t, ea, takePlan(floating.VerbSeize, float, 1, 3, 20*time.Millisecond))
	// The hold began inside Apply: it ends by the time Apply returned + hold.
	silentFrom := time.Now().Add(hold)
	smp.waitSeen(t, "A", macA, seized)
	if got := whoServes(t, s.client, addr); got != "a" {
		t.Fatalf("after A's seize the client reached %q, want a", got)
	}
	waitNeighbour(t, cl, "client", addr, macA)

	// Frozen: nobody renews.
	poll.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		l, err := ea.Look(ctx)
		if err != nil {
			return err
		}
		if l.Answering || !l.OnLoopback {
			return fmt.Errorf("A: %+v; want the address on lo, not answered for", l)
		}
		return nil
	})
	smp.waitSilent(t, silentFrom, 10)

	took := time.Now()
	apply(t, eb, takePlan(floating.VerbReassign, float, 2, 3, 20*time.Millisecond))
	smp.waitSeen(t, "B", macB, took)
	waitNeighbour(t, cl, "client", addr, macB)
	if got := whoServes(t, s.client, addr); got != "b" {
		t.Fatalf("after B's takeover the client reached %q, want b", got)
	}

	// A wakes: its loop sees the newer epoch and releases.
	apply(t, ea, releasePlan(float, 2))
	// (No MAC is known to A's executor: B's answer is "foreign".)
	if l, err := ea.Look(ctx); err != nil || l.OnLoopback || l.Present || l.Kind != floating.HolderForeign || l.ID != macB.String() {
		t.Fatalf("after its release A sees %+v, %v; want the address gone from A and B's MAC answering", l, err)
	}
	woke := time.Now()
	poll.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := smp.roundsSince(woke); n < 10 {
			return fmt.Errorf("%d rounds since A woke, want 10", n)
		}
		return nil
	})
	rounds := smp.results(t)
	judge(rounds, macA, macB, silentFrom).check(t, rounds)
}

func (s *sampler) roundsSince(from time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.rounds {
		if !r.start.Before(from) {
			n++
		}
	}
	return n
}

// TestDeadHolderIsSilent: A seizes and its process "dies" (the executor is
// closed without a release, so the address stays on A's lo, as after a
// SIGKILL): from then on nobody answers for the address — not A's kernel
// either — until B seizes it, and the sampler never sees A again.
func TestDeadHolderIsSilent(t *testing.T) {
	s := newSegment(t)
	macA, macB := macOf(t, s.a), macOf(t, s.b)
	ea := executor(t, s.a, float4, nil)
	eb := executor(t, s.b, float4, nil)
	addr := float4.Addr()
	smp := startSampler(t, s.client, addr)

	seized := time.Now()
	apply(t, ea, takePlan(floating.VerbSeize, float4, 1, 3, 20*time.Millisecond))
	smp.waitSeen(t, "A", macA, seized)

	ea.Close()
	dead := time.Now()
	if out, err := s.a.Output("ip", "-4", "addr", "show", "dev", "lo"); err != nil || !strings.Contains(string(out), addr.String()+"/32") {
		t.Fatalf("the dead A's lo does not carry the address (%v):\n%s", err, out)
	}
	smp.waitSilent(t, dead, 10)

	took := time.Now()
	apply(t, eb, takePlan(floating.VerbSeize, float4, 2, 3, 20*time.Millisecond))
	smp.waitSeen(t, "B", macB, took)
	poll.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := smp.roundsSince(took); n < 20 {
			return fmt.Errorf("%d rounds since B seized, want 20", n)
		}
		return nil
	})
	rounds := smp.results(t)
	judge(rounds, macA, macB, dead).check(t, rounds)
}

// TestKernelARPSettings: New sets arp_ignore 1 and arp_announce 2 on the
// interface of the host's namespace (and nowhere else), and refuses, naming
// the key, when net.ipv4.conf.all.arp_ignore would make the kernel answer
// for the address on lo whatever the interface says.
func TestKernelARPSettings(t *testing.T) {
	s := newSegment(t)
	read := func(h *netem.Host, key string) string {
		t.Helper()
		out, err := h.Output("cat", "/proc/sys/net/ipv4/conf/"+key)
		if err != nil {
			t.Fatalf("%s: %v: %s", key, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	executor(t, s.a, float4, nil)
	for key, want := range map[string]string{"eth0/arp_ignore": "1", "eth0/arp_announce": "2", "all/arp_ignore": "0", "all/arp_announce": "0"} {
		if got := read(s.a, key); got != want {
			t.Errorf("A's net.ipv4.conf.%s = %s, want %s", strings.ReplaceAll(key, "/", "."), got, want)
		}
		if got := read(s.b, key); got != "0" {
			t.Errorf("B (no executor) has net.ipv4.conf.%s = %s, want the kernel's 0", strings.ReplaceAll(key, "/", "."), got)
		}
	}

	sh(t, s.b, "sysctl", "-qw", "net.ipv4.conf.all.arp_ignore=3")
	fence, err := floating.OpenFileFence(t.TempDir() + "/fence")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Interface: "eth0", Address: float4, Fence: fence, Namespace: nsPath(s.b)})
	if err == nil || !strings.Contains(err.Error(), "net.ipv4.conf.all.arp_ignore is 3") {
		t.Fatalf("New under all.arp_ignore=3 = %v; want a refusal that names the key", err)
	}
}
