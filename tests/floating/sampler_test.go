package floating

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	floatlinux "github.com/otopcua/otopcua/floating/linux"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/netem"
)

// probeEvery is the sampler's period, probeWindow how long one round
// collects answers (ARP answers on one bridge take well under 1 ms).
const (
	probeEvery  = 20 * time.Millisecond
	probeWindow = 15 * time.Millisecond
)

// sampleRound is one probe of the floating address from the client
// namespace: when it was sent and every MAC that answered.
type sampleRound struct {
	at   time.Time
	macs []string
	err  error
}

// sampler asks the client namespace's segment who holds the floating
// address every 20 ms for the whole drill (floating/linux.Probe: an ARP
// probe that no cache learns from, every answering MAC kept), independent
// of the nodes under test.
type sampler struct {
	addr   netip.Addr
	mu     sync.Mutex
	rounds []sampleRound // mu must be held.
}

func startSampler(t *testing.T, client *netem.Host, addr netip.Addr) *sampler {
	s := &sampler{addr: addr}
	l := floatlinux.Link{Namespace: "/var/run/netns/" + client.NS, Interface: "eth0"}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		for {
			at := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), probeWindow)
			macs, err := floatlinux.Probe(ctx, l, addr)
			cancel()
			rd := sampleRound{at: at, err: err}
			for _, m := range macs {
				rd.macs = append(rd.macs, m.String())
			}
			s.mu.Lock()
			s.rounds = append(s.rounds, rd)
			s.mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return s
}

// since returns the rounds sent at or after from.
func (s *sampler) since(from time.Time) []sampleRound {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearchFunc(s.rounds, from, func(r sampleRound, t time.Time) int { return r.at.Compare(t) })
	return slices.Clone(s.rounds[i:])
}

// between returns the rounds sent within [from, to).
func (s *sampler) between(from, to time.Time) []sampleRound {
	var out []sampleRound
	for _, rd := range s.since(from) {
		if !rd.at.Before(to) {
			break
		}
		out = append(out, rd)
	}
	return out
}

// firstWith is the first round at or after from where mac answered.
func (s *sampler) firstWith(mac string, from time.Time) (sampleRound, bool) {
	for _, rd := range s.since(from) {
		if slices.Contains(rd.macs, mac) {
			return rd, true
		}
	}
	return sampleRound{}, false
}

// waitMAC waits until a round at or after from saw mac answer, and returns
// that round.
func (s *sampler) waitMAC(t *testing.T, mac string, from time.Time, total time.Duration) sampleRound {
	t.Helper()
	var got sampleRound
	poll.CheckFor(t, total, probeEvery, func() error {
		rd, ok := s.firstWith(mac, from)
		if !ok {
			return fmt.Errorf("no round since %s saw %s answer for the floating address; last: %s", from.Format("15:04:05.000"), mac, s.last())
		}
		got = rd
		return nil
	})
	return got
}

func (s *sampler) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rounds) == 0 {
		return "(no round yet)"
	}
	return s.rounds[len(s.rounds)-1].String()
}

func (rd sampleRound) String() string {
	if rd.err != nil {
		return rd.at.Format("15:04:05.000") + " error " + rd.err.Error()
	}
	return rd.at.Format("15:04:05.000") + " [" + strings.Join(rd.macs, " ") + "]"
}

// check is what a stretch of rounds shows.
type check struct {
	rounds, answered, errors int
	dual                     []sampleRound  // rounds where two MACs answered
	seen                     map[string]int // MAC → rounds it answered in
}

func (s *sampler) check(from, to time.Time) check {
	c := check{seen: map[string]int{}}
	for _, rd := range s.between(from, to) {
		c.rounds++
		if rd.err != nil {
			c.errors++
			continue
		}
		if len(rd.macs) > 0 {
			c.answered++
		}
		if len(rd.macs) > 1 {
			c.dual = append(c.dual, rd)
		}
		for _, m := range rd.macs {
			c.seen[m]++
		}
	}
	return c
}

// noDual fails t when a round within [from, to) saw two MACs answer, when
// a probe failed, or when too few rounds were made for the check to mean
// anything (a round every 20 ms: at least a third of the stretch's).
func (s *sampler) noDual(t *testing.T, from, to time.Time) check {
	t.Helper()
	// A round sent just before to listens for probeWindow after it: what a
	// second host that may answer from to on says then is not a dual hold
	// before to. Twice the window, for a prober the machine ran late.
	c := s.check(from, to.Add(-2*probeWindow))
	if len(c.dual) > 0 {
		t.Fatalf("sampler: %d rounds with two MACs answering for %s, the first %s", len(c.dual), s.addr, c.dual[0])
	}
	if c.errors > 0 {
		t.Fatalf("sampler: %d of %d probes failed", c.errors, c.rounds)
	}
	if want := int(to.Sub(from) / probeEvery / 3); c.rounds < want {
		t.Fatalf("sampler: only %d rounds in %v (want at least %d): the invariant was not checked", c.rounds, to.Sub(from).Round(time.Millisecond), want)
	}
	return c
}
