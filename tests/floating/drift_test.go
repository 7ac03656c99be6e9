package floating

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// Drill 5: drift made by hand, repaired by the reconcile loop
// (ReconcileInterval 1 s), and a foreign holder reported, never fought
// over.
//
//  1. The address removed from the owner's lo → back within two reconcile
//     intervals.
//  2. The address added on the non-owner's eth0 → removed within two.
//  3. A fourth host (intruder) adds it on its eth0 → the non-owner, which
//     probes, reports a conflict (GET /api/floating, the conflict metric,
//     otopcua doctor exits 1 naming the intruder's MAC); nobody removes it
//     from the intruder.
//  4. While the intruder holds it, the address removed from the owner's lo
//     → the owner reports the conflict and waits: it does not take the
//     address again (no seize, the intruder keeps it). Once the intruder
//     lets it go, the owner takes it back.
//
// Outside the windows where a hand-made drift lets two hosts answer, the
// sampler never sees two MACs.
func TestFloatingDrift(t *testing.T) {
	t.Parallel()
	r := newRig(t, "intruder")
	r.healthy()
	a, b, in := r.net.Host("a"), r.net.Host("b"), r.net.Host("intruder")
	begin := time.Now()
	within := 2*reconcile + 250*time.Millisecond // two intervals and the poll's own step

	// 1. missing on the owner.
	removed := time.Now()
	sh(t, a, "ip", "addr", "del", floatIP+"/32", "dev", "lo")
	back := r.waitCarries("a", "lo", true, 10*time.Second)
	t.Logf("removed from a's lo → back after %v", back.Sub(removed).Round(time.Millisecond))
	if back.Sub(removed) > within {
		t.Errorf("the address came back to the owner's lo after %v, want within two reconcile intervals (%v)", back.Sub(removed).Round(time.Millisecond), 2*reconcile)
	}
	r.waitMetricAtLeast("a", `otopcua_floating_address_drift_total{cluster_id="`+clusterID+`",kind="missing"`, 1)
	r.waitOwner("a", 10*time.Second)

	// 2. extra on the non-owner.
	added := time.Now() // before: b's kernel answers as soon as the address is there
	sh(t, b, "ip", "addr", "add", floatAddress, "dev", "eth0")
	gone := r.waitCarries("b", "eth0", false, 10*time.Second)
	t.Logf("added on b's eth0 → removed after %v", gone.Sub(added).Round(time.Millisecond))
	if gone.Sub(added) > within {
		t.Errorf("the address stayed on the non-owner's eth0 for %v, want within two reconcile intervals (%v)", gone.Sub(added).Round(time.Millisecond), 2*reconcile)
	}
	r.waitMetricAtLeast("b", `otopcua_floating_address_drift_total{cluster_id="`+clusterID+`",kind="extra"`, 1)
	r.waitOwner("a", 10*time.Second)
	r.sampler.noDual(t, begin, added) // before the hand-made dual hold

	// 3. a foreign holder: reported, not fought over.
	seizes := r.metricInt("a", `otopcua_floating_address_seizes_total{cluster_id="`+clusterID+`"`)
	r.waitSilentSince(r.macs["b"], gone)
	intruded := time.Now()
	sh(t, in, "ip", "addr", "add", floatAddress, "dev", "eth0")
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		rep, err := r.floating("b")
		if err != nil {
			return err
		}
		if !rep.Conflict || rep.Observed == nil || !strings.Contains(rep.Observed.ID, r.macs["intruder"]) {
			return fmt.Errorf("b reports no conflict with the intruder's MAC %s yet: %+v", r.macs["intruder"], rep)
		}
		return nil
	})
	r.waitMetricAtLeast("b", `otopcua_floating_address_conflict{cluster_id="`+clusterID+`"`, 1)
	out, code := otopcua(t, "doctor", "--url", r.api["a"], "--url", r.api["b"])
	if code != 1 || !strings.Contains(out, r.macs["intruder"]) {
		t.Fatalf("otopcua doctor during the conflict exited %d, want 1 naming %s:\n%s", code, r.macs["intruder"], out)
	}
	t.Logf("conflict reported after %v; otopcua doctor:\n%s", time.Since(intruded).Round(time.Millisecond), out)

	// 4. the owner loses the address by hand while the intruder holds it:
	// it reports the conflict and waits.
	sh(t, a, "ip", "addr", "del", floatIP+"/32", "dev", "lo")
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		rep, err := r.floating("a")
		if err != nil {
			return err
		}
		if !rep.Conflict || rep.Holds {
			return fmt.Errorf("a (the owner) reports no conflict yet: %+v", rep)
		}
		return nil
	})
	procs.Holds(t, 3*reconcile, 100*time.Millisecond, func() error {
		if !r.carries(in, "eth0") {
			return fmt.Errorf("the intruder lost the address: someone fought over it")
		}
		if r.carries(a, "lo") {
			return fmt.Errorf("the owner took the address back from a foreign holder")
		}
		if n := r.metricInt("a", `otopcua_floating_address_seizes_total{cluster_id="`+clusterID+`"`); n != seizes {
			return fmt.Errorf("the owner's seizes went from %d to %d during the conflict", seizes, n)
		}
		return nil
	})
	out, code = otopcua(t, "doctor", "--url", r.api["a"], "--url", r.api["b"])
	if code != 1 || !strings.Contains(out, r.macs["intruder"]) {
		t.Fatalf("otopcua doctor while the owner waits exited %d, want 1 naming %s:\n%s", code, r.macs["intruder"], out)
	}
	if c := r.sampler.check(time.Now().Add(-time.Second), time.Now()); c.seen[r.macs["intruder"]] == 0 || c.seen[r.macs["a"]] > 0 {
		t.Fatalf("while the owner waits, the last second's answers were %v: want the intruder's only", c.seen)
	}

	// The intruder lets it go: the owner takes it back, the conflict clears.
	freed := time.Now()
	sh(t, in, "ip", "addr", "del", floatAddress, "dev", "eth0")
	r.waitCarries("a", "lo", true, 10*time.Second)
	t.Logf("intruder let go → back on a's lo after %v", time.Since(freed).Round(time.Millisecond))
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		for _, n := range []string{"a", "b"} {
			rep, err := r.floating(n)
			if err != nil {
				return err
			}
			if rep.Conflict {
				return fmt.Errorf("%s still reports a conflict: %+v", n, rep)
			}
		}
		return nil
	})
	r.waitOwner("a", 10*time.Second)
	settled := r.sampler.waitMAC(t, r.macs["a"], freed, 10*time.Second)
	r.waitSilentSince(r.macs["intruder"], settled.at)
	r.sampler.noDual(t, settled.at, time.Now())
	if out, code := otopcua(t, "doctor", "--url", r.api["a"], "--url", r.api["b"]); code != 0 {
		t.Fatalf("otopcua doctor after the conflict cleared exited %d, want 0:\n%s", code, out)
	}
}

// sh runs a command inside h as a human at its shell would.
func sh(t *testing.T, h *netem.Host, args ...string) {
	t.Helper()
	if out, err := h.Output(args...); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

// carries reports whether h shows the floating address on dev.
func (r *rig) carries(h *netem.Host, dev string) bool {
	out, err := h.Output("ip", "-o", "addr", "show", "dev", dev)
	if err != nil {
		r.t.Fatalf("ip addr show dev %s: %v: %s", dev, err, out)
	}
	return strings.Contains(string(out), " "+r.ip.String()+"/")
}

// waitCarries waits until name's dev carries the address (want) or not,
// and returns when it saw it.
func (r *rig) waitCarries(name, dev string, want bool, total time.Duration) time.Time {
	r.t.Helper()
	var at time.Time
	h := r.net.Host(name)
	procs.CheckFor(r.t, total, 20*time.Millisecond, func() error {
		if r.carries(h, dev) != want {
			return fmt.Errorf("%s's %s: carries %s is not %v yet", name, dev, r.ip, want)
		}
		at = time.Now()
		return nil
	})
	return at
}

// waitSilentSince waits until mac has not answered in the last 200 ms of
// rounds after from.
func (r *rig) waitSilentSince(mac string, from time.Time) {
	r.t.Helper()
	procs.CheckFor(r.t, 10*time.Second, 50*time.Millisecond, func() error {
		since := time.Now().Add(-200 * time.Millisecond)
		if since.Before(from) {
			since = from
		}
		if c := r.sampler.check(since, time.Now()); c.rounds < 5 || c.seen[mac] > 0 {
			return fmt.Errorf("%s answered in %d of the last %d rounds", mac, c.seen[mac], c.rounds)
		}
		return nil
	})
}

// metricInt is the integer value of name's /metrics sample at prefix.
func (r *rig) metricInt(name, prefix string) int {
	r.t.Helper()
	v, err := r.metric(name, prefix)
	if err != nil {
		r.t.Fatal(err)
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		r.t.Fatalf("%s: %s %q: %v", name, prefix, v, err)
	}
	return int(n)
}

// waitMetricAtLeast waits until name's sample at prefix is at least min.
func (r *rig) waitMetricAtLeast(name, prefix string, min float64) {
	r.t.Helper()
	procs.CheckFor(r.t, 10*time.Second, 100*time.Millisecond, func() error {
		v, err := r.metric(name, prefix)
		if err != nil {
			return err
		}
		if n, err := strconv.ParseFloat(v, 64); err != nil || n < min {
			return fmt.Errorf("%s: %s is %s, want at least %v", name, prefix, v, min)
		}
		return nil
	})
}
