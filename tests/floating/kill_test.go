package floating

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/tests/procs"
)

// Drill 1: SIGKILL of the Primary. Per trial: the survivor's MAC answers
// for the floating address (the sampler's first round with it), the
// client's neighbour entry names it, the client receives a value the dead
// node never saw, and the killed node, restarted at the same address,
// comes back as Secondary and never answers for the address. The figures
// (kill → address, kill → first new value) are logged as median and p99
// over -floating.trials trials.
func TestFloatingKillPrimary(t *testing.T) {
	t.Parallel()
	killDrill(t, newRig(t), *trials)
}

// The same drill with an IPv6 floating address (unsolicited neighbour
// advertisements, neighbour solicitations answered by the process), one
// trial.
func TestFloatingKillPrimaryIPv6(t *testing.T) {
	t.Parallel()
	killDrill(t, newRigAt(t, "fd00:18::100/64"), 1)
}

// killDrill runs n SIGKILL trials on r and logs their figures.
func killDrill(t *testing.T, r *rig, n int) {
	r.healthy()
	r.checkOwned("a")
	r.checkStatus("a")
	c := startClient(t, r.client, r.ip)
	c.waitValueAbove(t, 0, time.Time{}, 90*time.Second)
	begin := time.Now()

	p, s := "a", "b"
	var toAddr, toValue []time.Duration
	for i := 1; i <= n; i++ {
		r.ready(p, s)
		c.waitValueAbove(t, r.counter.Load(), time.Now(), 30*time.Second)
		// Once more right before the kill: under load the Primary can
		// take the lease for a moment while its peer's heartbeats are
		// late (CI: the IPv6 drill's kill found it held, 6.3 s).
		r.waitLeaseFree(30 * time.Second)
		killed := time.Now()
		r.nodes[p].Signal(syscall.SIGKILL)
		// Every value the device held before the kill is at most v: a
		// value above it reached the client through the survivor.
		v := r.counter.Load()
		answered := r.sampler.waitMAC(t, r.macs[s], killed, 30*time.Second)
		got := c.waitValueAbove(t, v, killed, 60*time.Second)
		toAddr, toValue = append(toAddr, answered.at.Sub(killed)), append(toValue, got.At.Sub(killed))
		t.Logf("trial %d: SIGKILL of %s → %s's MAC answers after %v, the client's first new value (%d) after %v",
			i, p, s, answered.at.Sub(killed).Round(time.Millisecond), got.Value, got.At.Sub(killed).Round(time.Millisecond))
		r.checkNeighbour(s)
		r.waitOwner(s, 30*time.Second)
		r.checkOwned(s)

		r.nodes[p].Restart()
		r.nodes[p].WaitReady(90 * time.Second)
		r.ready(s, p)
		r.waitOwner(s, 30*time.Second)
		r.neverAnswered(p, answered.at, time.Now())
		r.sampler.noDual(t, killed, time.Now())
		p, s = s, p
	}
	r.waitOwner(p, 30*time.Second) // p: the last trial's survivor
	c.waitValueAbove(t, r.counter.Load(), time.Now(), 30*time.Second)
	chk := r.sampler.noDual(t, begin, time.Now())
	t.Logf("sampler: %d rounds over %v, %d answered, none with two MACs; MACs seen %v", chk.rounds,
		time.Since(begin).Round(time.Second), chk.answered, chk.seen)
	t.Logf("kill → address answered by the survivor over %d trials: median %v, p99 %v (all %v)", len(toAddr),
		percentile(toAddr, 50), percentile(toAddr, 99), rounded(toAddr))
	t.Logf("kill → first new value at the client over %d trials: median %v, p99 %v (all %v)", len(toValue),
		percentile(toValue, 50), percentile(toValue, 99), rounded(toValue))
	// The goal (median ≤ 300 ms) is asserted on a measuring run (10
	// trials or more); a CI run of 2 trials on a shared machine asserts the
	// crash fast path's order of magnitude.
	bound := time.Second
	if len(toAddr) >= 10 {
		bound = 300 * time.Millisecond
	}
	if m := percentile(toAddr, 50); m > bound {
		t.Errorf("kill → address answered by the survivor: median %v over %d trials, want at most %v (the goal: 300ms)", m, len(toAddr), bound)
	}
}

// ready waits until primary is the Primary holding the address and
// secondary is an Up member that has loaded the deployment, so that a
// kill of primary is a failover to secondary.
func (r *rig) ready(primary, secondary string) {
	r.t.Helper()
	r.waitOwner(primary, 60*time.Second)
	procs.CheckFor(r.t, 90*time.Second, 100*time.Millisecond, func() error {
		for _, n := range []string{primary, secondary} {
			v, err := r.nodes[n].Members()
			if err != nil {
				return err
			}
			if up := v.UpAddresses(); !slices.Contains(up, r.nodeID(primary)) || !slices.Contains(up, r.nodeID(secondary)) {
				return fmt.Errorf("%s: Up members %v, want %s and %s", n, up, r.nodeID(primary), r.nodeID(secondary))
			}
		}
		// A Primary that took the lease while its set looked split (a
		// peer slow to start or to rejoin) keeps it until the set is whole
		// again; the crash fast path never takes a held lease, so a kill
		// then costs up to a lease TTL (docs/redundancy.md). The drill
		// measures a healthy pair's crash: it kills once the lease is free.
		if err := r.leaseFree(); err != nil {
			return err
		}
		body, err := r.nodes[secondary].Get("/api/deployment")
		if err != nil {
			return err
		}
		var dep struct {
			Version int64 `json:"version"`
		}
		if err := json.Unmarshal([]byte(body), &dep); err != nil || dep.Version != 1 {
			return fmt.Errorf("%s: deployment %s, want version 1", secondary, body)
		}
		return nil
	})
}

// checkNeighbour asserts the client namespace's neighbour entry for the
// floating address names holder's MAC.
func (r *rig) checkNeighbour(holder string) {
	r.t.Helper()
	procs.CheckFor(r.t, 5*time.Second, 50*time.Millisecond, func() error {
		out, err := r.client.Output("ip", "neigh", "show", r.ip.String(), "dev", "eth0")
		if err != nil {
			return fmt.Errorf("ip neigh: %v: %s", err, out)
		}
		if !strings.Contains(string(out), r.macs[holder]) {
			return fmt.Errorf("the client's neighbour entry for %s is %q, want %s's MAC %s", r.ip, strings.TrimSpace(string(out)), holder, r.macs[holder])
		}
		return nil
	})
}

// neverAnswered fails when name's MAC answered for the address in a round
// within [from, to).
func (r *rig) neverAnswered(name string, from, to time.Time) {
	r.t.Helper()
	if n := r.sampler.check(from, to).seen[r.macs[name]]; n > 0 {
		r.t.Fatalf("%s's MAC answered for the floating address in %d rounds between %s and %s, while it was not the owner\n%s",
			name, n, from.Format("15:04:05.000"), to.Format("15:04:05.000"), r.floatingLines(name))
	}
}

// checkStatus asserts `otopcua status` of both nodes shows the floating
// address section, holder holding it.
func (r *rig) checkStatus(holder string) {
	r.t.Helper()
	for _, name := range []string{"a", "b"} {
		out, code := otopcua(r.t, "status", "--url", r.api[name])
		if code != 0 {
			r.t.Fatalf("otopcua status of %s exited %d:\n%s", name, code, out)
		}
		want := fmt.Sprintf("floating address %s (linux): holds=%v owner=%s", r.cidr, name == holder, r.nodeID(holder))
		if !strings.Contains(out, want) {
			r.t.Fatalf("otopcua status of %s: no line %q in\n%s", name, want, out)
		}
	}
}

// leaseFree reports an error while the pair's lease is held.
func (r *rig) leaseFree() error {
	if st, err := r.lease(); err != nil || st.Holder != "" {
		return fmt.Errorf("lease held by %q (%v), want it free", st.Holder, err)
	}
	return nil
}

// waitLeaseFree waits until the pair's lease is free.
func (r *rig) waitLeaseFree(total time.Duration) {
	r.t.Helper()
	procs.CheckFor(r.t, total, 20*time.Millisecond, r.leaseFree)
}

// lease reads the pair's Config DB lease.
func (r *rig) lease() (configdb.LeaseState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	db, err := configdb.Open(ctx, configdb.ProviderPostgres, r.db.DSN())
	if err != nil {
		return configdb.LeaseState{}, err
	}
	defer db.Close()
	return db.LeaseHolder(ctx, clusterID)
}
