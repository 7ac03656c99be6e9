package floating

import (
	"flag"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

var mirroredTrials = flag.Int("floating.mirrored-trials", 2, "SIGKILL trials of TestFloatingTransparentSession (the documented figures come from 10)")

// Transparent on the floating address (OpcUa:RedundancySupport
// HotAndMirrored): node-opcua, subscribed to the counter through the
// floating URL with its default reconnection, loses its connection when
// the Primary is killed, reconnects to the same URL — now answered by the
// survivor — and finds its session and subscription there. Per trial: the
// same session id and subscription id go on, and every counter value
// arrives, once, in order: no gap. The interruption (the last value
// before the kill → the first after) is logged as median and p99.
func TestFloatingTransparentSession(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.poll = "00:00:00.020" // every node sees every value of a counter bumped every 100 ms
	for _, name := range []string{"a", "b"} {
		r.cfgs[name] = r.config(name)
		r.cfgs[name]["OpcUa"].(map[string]any)["RedundancySupport"] = "HotAndMirrored"
	}
	r.healthy()
	c := startClient(t, r.client, r.ip, "0")
	first := c.waitValueAbove(t, 0, time.Time{}, 90*time.Second)

	p, s := "a", "b"
	var gaps []time.Duration
	for i := 1; i <= *mirroredTrials; i++ {
		r.ready(p, s)
		r.mirrorReady(s)
		c.waitValueAbove(t, r.counter.Load(), time.Now(), 30*time.Second)
		killed := time.Now()
		r.nodes[p].Signal(syscall.SIGKILL)
		v := r.counter.Load()
		got := c.waitValueAbove(t, v, killed, 60*time.Second)
		c.waitValueAbove(t, got.Value+5, time.Now(), 30*time.Second)
		last, next := c.around(killed)
		gaps = append(gaps, next.At.Sub(last.At))
		t.Logf("trial %d: SIGKILL of %s: last value before %d, first after %d, %v apart; session %s subscription %d",
			i, p, last.Value, next.Value, next.At.Sub(last.At).Round(time.Millisecond), next.Session, next.Subscription)
		c.checkUnbroken(t, first)

		r.nodes[p].Restart()
		r.nodes[p].WaitReady(90 * time.Second)
		p, s = s, p
	}
	t.Logf("interruption at the client (last value before the kill → first after) over %d trials: median %v, p99 %v (all %v)",
		len(gaps), percentile(gaps, 50), percentile(gaps, 99), rounded(gaps))
}

// mirrorReady waits until name holds the mirror of its peer's sessions
// whole (otopcua_mirror_ready 1) and at least one session of it.
func (r *rig) mirrorReady(name string) {
	r.t.Helper()
	procs.CheckFor(r.t, 60*time.Second, 100*time.Millisecond, func() error {
		body, err := r.nodes[name].Get("/metrics")
		if err != nil {
			return err
		}
		ready, held := false, false
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "otopcua_mirror_ready{") && strings.HasSuffix(l, " 1") {
				ready = true
			}
			if strings.HasPrefix(l, `otopcua_mirror_sessions{role="replica"}`) && !strings.HasSuffix(l, " 0") {
				held = true
			}
		}
		if !ready || !held {
			return fmt.Errorf("%s: mirror ready %v, replica sessions held %v", name, ready, held)
		}
		return nil
	})
}

// around returns the last value read before at and the first at or after.
func (c *uaClient) around(at time.Time) (last, next event) {
	for _, e := range c.since(time.Time{}) {
		if e.Event != "value" {
			continue
		}
		if e.At.Before(at) {
			last = e
		} else if next.At.IsZero() {
			next = e
		}
	}
	return last, next
}

// checkUnbroken asserts that every value from first on arrived once and
// in order (the counter's next value each time) on first's session and
// subscription.
func (c *uaClient) checkUnbroken(t *testing.T, first event) {
	t.Helper()
	prev := uint32(0)
	for _, e := range c.since(first.At) {
		if e.Event != "value" {
			continue
		}
		if e.Session != first.Session || e.Subscription != first.Subscription {
			t.Fatalf("value %d arrived on session %s subscription %d, want session %s subscription %d (the ones the client created)",
				e.Value, e.Session, e.Subscription, first.Session, first.Subscription)
		}
		if prev != 0 && e.Value != prev+1 {
			t.Fatalf("value %d after %d: %s", e.Value, prev, c.summary(first.At))
		}
		prev = e.Value
	}
}
