package failover

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// leaseStableAfter is lease-majority's default stable-after: with the
// shared lease deciding, a wrong decision costs an unneeded failover,
// never dual-active, so a pair under lease-majority decides much sooner
// than auto-down's 15 s (docs/redundancy.md).
const leaseStableAfter = config.DefaultStableAfterLeaseMajority

// leaseMajority configures every node of r for lease-majority on the
// Config DB lease (the rig's shared Config DB).
func leaseMajority(r *rig) {
	r.configure("", func(cfg map[string]any) {
		c := cfg["Cluster"].(map[string]any)
		c["SplitBrainResolverStrategy"] = "lease-majority"  // stable-after: its default
		c["Lease"] = map[string]any{"Provider": "configdb"} // TTL, pause, hold: the defaults
	})
}

// leasePair configures r's pair for lease-majority, waits until it is
// healthy and returns its Primary and Secondary.
func leasePair(t *testing.T, r *rig) (primary, secondary string) {
	t.Helper()
	leaseMajority(r)
	return pairRoles(t, healthyRig(t, r))
}

// Lease drill (a): SIGKILL of the Primary under lease-majority → the crash
// fast path takes the lease (evicting nobody: it was free) and downs the
// dead node at once; the survivor is Primary without a promotion hold.
func TestLeaseDrillKillPrimary(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	p, s := leasePair(t, r)
	if body, err := r.node(p).Get("/api/cluster/config"); err != nil ||
		!strings.Contains(body, "# Cluster:Lease (the shared lease of lease-majority): provider = configdb (sqlite), ttl = 2s") ||
		!strings.Contains(body, "stable-after = 500ms") || !strings.Contains(body, "heartbeat-interval = 500ms") ||
		!strings.Contains(body, "acceptable-heartbeat-pause = 1s") {
		t.Fatalf("/api/cluster/config does not show the installed lease and lease-majority's defaults (TTL 2 s, stable-after 500 ms, heartbeat 500 ms, pause 1 s): %v\n%s", err, body)
	}
	killed := kill(t, r.node(p), syscall.SIGKILL)
	rd := r.waitFirst(20*time.Second, s, killed, "250", is(Primary))
	t.Logf("lease drill a: SIGKILL of %s → %s at 250 after %v", p, s, rd.At.Sub(killed).Round(time.Millisecond))
	log := r.node(s).Log()
	for _, w := range []string{`"msg":"cluster crash fast path: acquiring the lease before downing`, `"msg":"lease acquired"`} {
		if !strings.Contains(log, w) {
			t.Fatalf("the survivor's log lacks %s", w)
		}
	}
	if strings.Contains(log, `"msg":"promotion hold`) {
		t.Fatalf("a peer proven dead by the fast path was taken over with a promotion hold")
	}
	r.assertInvariant()
}

// Lease drill (b): SIGSTOP of the Primary → the survivor decides after
// stable-after (it is the side without the Primary, so it waits the
// minority delay), takes the lease, downs the frozen node and waits out
// the promotion hold before 250. SIGCONT → the woken node finds its peer
// silent and no lease: it never reads 250 again beside the survivor, and
// it leaves (told it was removed, exit 3).
func TestLeaseDrillFreezePrimary(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	p, s := leasePair(t, r)
	frozen := kill(t, r.node(p), syscall.SIGSTOP)
	rd := r.waitFirst(40*time.Second, s, frozen, "250", is(Primary))
	t.Logf("lease drill b: SIGSTOP of %s → %s at 250 after %v", p, s, rd.At.Sub(frozen).Round(time.Millisecond))
	if !strings.Contains(r.node(s).Log(), `"msg":"promotion hold`) {
		t.Fatalf("the survivor took over a frozen (maybe alive) Primary without its promotion hold")
	}
	timeline(t, r.node(s), frozen)
	woke := kill(t, r.node(p), syscall.SIGCONT)
	code := r.node(p).WaitExit(30 * time.Second)
	t.Logf("lease drill b: SIGCONT of %s → exited with code %d after %v", p, code, time.Since(woke).Round(time.Millisecond))
	if code != 3 {
		t.Fatalf("the woken node exited with code %d, want 3 (downed)\n%s", code, r.node(p).Log())
	}
	if lv := r.level(s); !lv.Known || lv.Level != Primary {
		t.Fatalf("the survivor reads %v after the woken node left, want 250", lv)
	}
	r.assertInvariant()
}

// Lease drill (c): a partition between the two nodes (iptables DROP both
// ways on their test hosts), both still reaching the Config DB (a file on
// the shared disk) → the Primary keeps the lease and 250, the Secondary
// fails its lease attempt and downs itself (exit 3); no sampled instant
// has two 250s.
func TestLeaseDrillPartition(t *testing.T) {
	t.Parallel()
	r := newHostRig(t, pairSpecs("site", "a", "b")...)
	p, s := leasePair(t, r)
	hp, hs := r.net.Host(p), r.net.Host(s)
	cut := time.Now()
	r.net.Partition([]*netem.Host{hp}, []*netem.Host{hs}, netem.Drop)
	code := r.node(s).WaitExit(leaseStableAfter + 40*time.Second)
	t.Logf("lease drill c: partition → the Secondary %s exited with code %d after %v", s, code, time.Since(cut).Round(time.Millisecond))
	if code != 3 {
		t.Fatalf("the Secondary exited with code %d, want 3 (it lost the lease and downed itself)\n%s", code, r.node(s).Log())
	}
	if !strings.Contains(r.node(s).Log(), `"SBR could not acquire the lease`) {
		t.Logf("the Secondary's log does not name the refused lease")
	}
	procs.Holds(t, 3*time.Second, 100*time.Millisecond, func() error {
		return r.levelsAre(map[string]byte{p: Primary})
	})
	if !strings.Contains(r.node(p).Log(), `"msg":"lease acquired"`) {
		t.Fatalf("the Primary never acquired the lease\n%s", r.node(p).Log())
	}
	r.assertInvariant()
}

// timeline logs the survivor's steps from a failure to its 250, with
// their offsets from since: detection, decision, lease, hold, level.
func timeline(t *testing.T, n *procs.Node, since time.Time) {
	t.Helper()
	for _, line := range strings.Split(n.Log(), "\n") {
		var rec struct {
			Time   time.Time `json:"time"`
			Msg    string    `json:"msg"`
			Detail string    `json:"detail"`
			To     any       `json:"to"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Time.Before(since) {
			continue
		}
		for _, w := range []string{"unreachable", "SBR", "lease", "promotion hold", "ServiceLevel changed", "Primary licence", "downed", "Primary changed"} {
			if strings.Contains(rec.Msg, w) || strings.Contains(rec.Detail, w) {
				t.Logf("  +%v %s %s %v", rec.Time.Sub(since).Round(time.Millisecond), rec.Msg, rec.Detail, rec.To)
				break
			}
		}
	}
}

// kill sends sig to n and returns when.
func kill(t *testing.T, n *procs.Node, sig syscall.Signal) time.Time {
	t.Helper()
	at := time.Now()
	n.Signal(sig)
	return at
}
