package floating

import (
	"fmt"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// Drill 4: a planned failover (an Administrator's POST
// /api/clusters/site/failover). The Primary drains, hands the floating
// address over and leaves: the sampler sees the new Primary's MAC answer
// while the old Primary's process still runs; the node-opcua client,
// whose connection the release reset, receives values through the new
// Primary without waiting for its own timeout; the old Primary exits 0
// and, restarted as its supervisor would, comes back as Secondary and
// never claims the address.
func TestFloatingPlannedFailover(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.healthy()
	begin := time.Now()
	token := procs.AddUser(t, r.cfgs["a"], "ops", "Administrator", "correct horse battery staple")
	c := startClient(t, r.client, r.ip)
	c.waitValueAbove(t, 0, time.Time{}, 90*time.Second)
	exited := r.watchExit("a")

	asked := time.Now()
	r.nodes["a"].Token = token
	if body, err := r.nodes["a"].Post("/api/clusters/" + clusterID + "/failover"); err != nil {
		t.Fatalf("manual failover: %v: %s", err, body)
	}
	answered := r.sampler.waitMAC(t, r.macs["b"], asked, 30*time.Second)
	code := r.nodes["a"].WaitExit(60 * time.Second)
	gone := <-exited
	t.Logf("failover asked → b's MAC answers after %v; a exited %d after %v", answered.at.Sub(asked).Round(time.Millisecond),
		code, gone.Sub(asked).Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("the old Primary exited with code %d after the manual failover, want 0", code)
	}
	if !answered.at.Before(gone) {
		t.Fatalf("b's MAC first answered at %s, after a exited at %s: the address did not move before the old Primary left",
			answered.at.Format("15:04:05.000"), gone.Format("15:04:05.000"))
	}
	r.neverAnswered("a", answered.at, time.Now())
	// The client follows: a value the device took after a exited reaches
	// it through b.
	v := r.counter.Load()
	got := c.waitValueAbove(t, v, gone, 60*time.Second)
	t.Logf("the node-opcua client's first value after a exited (%d) %v after the failover was asked; its events: %s", got.Value,
		got.At.Sub(asked).Round(time.Millisecond), c.summary(asked.Add(-time.Second)))
	if d := got.At.Sub(gone); d > 5*time.Second {
		t.Fatalf("the client's first value after a exited came %v later: it did not move with the address (its connection to a was not reset)", d.Round(time.Millisecond))
	}
	r.checkNeighbour("b")

	r.nodes["a"].Token = ""
	r.nodes["a"].Restart()
	r.nodes["a"].WaitReady(90 * time.Second)
	r.ready("b", "a")
	procs.Holds(t, 3*time.Second, 100*time.Millisecond, func() error {
		rep, err := r.floating("a")
		if err != nil {
			return err
		}
		if rep.Holds || rep.Verb == "seize" || rep.Verb == "reassign" {
			return fmt.Errorf("the restarted Secondary a claims the address: %+v", rep)
		}
		return nil
	})
	r.waitOwner("b", 30*time.Second)
	r.checkOwned("b")
	r.neverAnswered("a", answered.at, time.Now())
	chk := r.sampler.noDual(t, begin, time.Now())
	t.Logf("sampler: %d rounds over %v, none with two MACs; MACs seen %v", chk.rounds, time.Since(begin).Round(time.Second), chk.seen)
}

// watchExit returns a channel that receives when name's current process
// exits (polled every 5 ms).
func (r *rig) watchExit(name string) <-chan time.Time {
	out := make(chan time.Time, 1)
	n := r.nodes[name]
	stop := make(chan struct{})
	r.t.Cleanup(func() { close(stop) })
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, done := n.Exited(); done {
				out <- time.Now()
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return out
}
