package chaos

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/chaos/check"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// execute runs plan from now on: one goroutine per ClusterId takes its
// faults in order, each at its planned time or, when the one before ran
// late, the smallest gap after it; Config DB stops take the whole rig (no
// other fault runs beside one). It returns when every fault is over.
func (r *rig) execute(plan []Fault) {
	start := time.Now()
	var rigWide sync.RWMutex // a ClusterId's fault holds it shared, a Config DB stop alone
	var wg sync.WaitGroup
	for c := range r.pairs {
		wg.Go(func() {
			var lastEnd time.Time
			for _, f := range plan {
				if f.Cluster != c {
					continue
				}
				at := start.Add(f.At)
				if late := lastEnd.Add(r.o.Gap[0] / 2); late.After(at) {
					at = late
				}
				if !r.waitUntil(at) {
					return
				}
				func() {
					rigWide.RLock()
					defer rigWide.RUnlock()
					r.inject(f)
				}()
				lastEnd = time.Now()
			}
		})
	}
	wg.Go(func() {
		for _, f := range plan {
			if f.Cluster >= 0 {
				continue
			}
			if !r.waitUntil(start.Add(f.At)) {
				return
			}
			func() {
				rigWide.Lock()
				defer rigWide.Unlock()
				r.inject(f)
			}()
		}
	})
	wg.Wait()
}

// waitUntil waits for the planned time at; false when the run ended
// first. A schedule, not a poll: nothing is awaited but the clock.
func (r *rig) waitUntil(at time.Time) bool {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.stop:
		return false
	}
}

// hold waits d (a fault's planned length); false when the run ended first.
func (r *rig) hold(d time.Duration) bool { return r.waitUntil(time.Now().Add(d)) }

// inject runs one fault to its end and records its window. A fault that
// cannot be injected (its target is not running, no Primary to fail over)
// is logged and recorded as not injected.
func (r *rig) inject(f Fault) {
	var in injected
	var err error
	if f.Cluster < 0 {
		in, err = r.stopConfigDB(f)
	} else {
		in, err = r.injectOn(r.pairs[f.Cluster], f)
	}
	if err != nil {
		r.logf("fault %s not injected: %v", f, err)
		return
	}
	in.plan = f
	r.rec.fault(in)
	r.logf("fault %s: %s … %s on %v%s", f.Kind, r.rec.rel(in.check.Start), r.rec.rel(in.check.End), in.check.Targets, map[bool]string{true: ": " + in.note, false: ""}[in.note != ""])
}

func (r *rig) injectOn(p *pair, f Fault) (injected, error) {
	n, err := r.target(p, f.Target, f.Kind == Failover)
	if err != nil {
		return injected{}, err
	}
	switch f.Kind {
	case Kill, Restart:
		return r.kill(n, f)
	case StopShort, StopLong:
		return r.freeze(n, f)
	case Leave:
		return r.leave(n, f)
	case Failover:
		return r.failover(n)
	case Partition:
		return r.partition(n, f)
	case DBSlow:
		return r.slowConfigDB(n, f)
	case DeviceCut:
		return r.cutDevice(n, f)
	}
	return injected{}, fmt.Errorf("unknown kind %q", f.Kind)
}

// target resolves role in p to a node: the one its samplers read at 250 is
// the Primary, the other the Secondary. It waits up to 30 s for both
// nodes to run and one to read 250; then, unless a Primary is required,
// it takes a (Primary) or b (Secondary) if that one runs.
func (r *rig) target(p *pair, role Role, needPrimary bool) (*node, error) {
	var primary *node
	err := poll.Wait(30*time.Second, 50*time.Millisecond, func() error {
		primary = nil
		for _, n := range p.nodes {
			if !n.running() {
				return fmt.Errorf("%s is not running", n.name)
			}
			if l, ok := r.rec.latest(n.name, time.Second); ok && l == check.LevelPrimary {
				primary = n
			}
		}
		if primary == nil {
			return fmt.Errorf("no node at 250 (%s)", r.levelsText(p))
		}
		return nil
	})
	switch {
	case err == nil && role == Primary:
		return primary, nil
	case err == nil:
		return p.other(primary), nil
	case needPrimary:
		return nil, err
	}
	n := p.nodes[int(role)]
	if !n.running() {
		return nil, fmt.Errorf("%v; and %s is not running", err, n.name)
	}
	return n, nil
}

// kill sends SIGKILL to n and starts it again f.Hold after it died (at
// once for Restart). The window ends at the new start.
func (r *rig) kill(n *node, f Fault) (injected, error) {
	n.hold()
	start := time.Now()
	if err := n.signal(syscall.SIGKILL); err != nil {
		n.restartHeld() // gives it back to its supervisor
		return injected{}, err
	}
	if err := n.waitExit(10 * time.Second); err != nil {
		return injected{}, err
	}
	r.hold(f.Hold)
	end, err := n.restartHeld()
	if err != nil {
		return injected{}, err
	}
	return injected{check: check.Fault{Kind: check.FaultKill, Targets: []string{n.name}, Start: start, End: end}}, nil
}

// freeze freezes n with SIGSTOP for f.Hold, then wakes it with SIGCONT.
func (r *rig) freeze(n *node, f Fault) (injected, error) {
	start := time.Now()
	if err := n.signal(syscall.SIGSTOP); err != nil {
		return injected{}, err
	}
	r.hold(f.Hold)
	end := time.Now()
	if err := n.signal(syscall.SIGCONT); err != nil && !errors.Is(err, errNotRunning) {
		return injected{}, err
	}
	return injected{check: check.Fault{Kind: check.FaultStop, Targets: []string{n.name}, Start: start, End: end}}, nil
}

// leave stops n gracefully (SIGTERM: Leave, hand-over, exit) and starts it
// again f.Hold after it exited; one that does not exit within 30 s is
// killed. The window ends at the new start.
func (r *rig) leave(n *node, f Fault) (injected, error) {
	n.hold()
	start := time.Now()
	if err := n.signal(syscall.SIGTERM); err != nil {
		n.restartHeld()
		return injected{}, err
	}
	note := ""
	if err := n.waitExit(30 * time.Second); err != nil {
		note = "did not exit within 30 s of SIGTERM: killed"
		_ = n.signal(syscall.SIGKILL)
		if err := n.waitExit(10 * time.Second); err != nil {
			return injected{}, err
		}
	}
	r.hold(f.Hold)
	end, err := n.restartHeld()
	if err != nil {
		return injected{}, err
	}
	return injected{check: check.Fault{Kind: check.FaultLeave, Targets: []string{n.name}, Start: start, End: end}, note: note}, nil
}

// failover asks the Primary n's admin API for a manual failover: n drains
// (ServiceLevel 0), leaves and exits; its supervisor starts it again. The
// window ends at that start, or at the request when nothing followed.
func (r *rig) failover(n *node) (injected, error) {
	gen := n.generation()
	start := time.Now()
	body, err := n.post("/api/clusters/" + n.pair.spec.ID + "/failover")
	if err != nil {
		return injected{}, fmt.Errorf("POST failover on %s: %v", n.name, err)
	}
	end, err := n.waitStart(gen, 60*time.Second)
	note := ""
	if err != nil {
		end, note = start, fmt.Sprintf("accepted (%s) but %s did not restart within 60 s", body, n.name)
	}
	return injected{check: check.Fault{Kind: check.FaultManualFailover, Targets: []string{n.name}, Start: start, End: end}, note: note}, nil
}

// partition cuts n from its peer with iptables for f.Hold: both ways, or
// only n's packets (f.OneWay); dropped or reset (f.Reset). Under auto-down
// the run then plays the operator of the documented recovery: when the
// two sides did not merge by themselves once the link healed, it restarts
// n (recorded as a graceful leave).
func (r *rig) partition(n *node, f Fault) (injected, error) {
	peer := n.pair.other(n)
	filter := netem.Drop
	if f.Reset {
		filter = netem.Reject
	}
	start := time.Now()
	r.net.Block(n.host, peer.host, filter)
	if !f.OneWay {
		r.net.Block(peer.host, n.host, filter)
	}
	r.hold(f.Hold)
	r.net.Unblock(n.host, peer.host)
	r.net.Unblock(peer.host, n.host)
	end := time.Now()
	in := injected{check: check.Fault{Kind: check.FaultPartition, Targets: []string{n.name, peer.name}, Start: start, End: end, OneWay: f.OneWay, Reset: f.Reset}}
	if n.pair.spec.Downing == check.AutoDown {
		in.note = r.operatorAfterPartition(n)
	}
	return in, nil
}

// operatorAfterPartition is the auto-down recovery (docs/redundancy.md:
// "heal the link, then restart one side"). Once the link healed, the
// operator watches the pair for up to 20 s: whole and staying whole for
// 5 s (each node sees both as Up and reachable members, one reads 250,
// the other 240), nothing is done — a side that exits by itself (told it
// was downed) is started again by its supervisor meanwhile. Otherwise n
// (or its peer, if n is not running) is stopped gracefully and started
// again, well within the checker's settle margin after the heal.
func (r *rig) operatorAfterPartition(n *node) string {
	p := n.pair
	var since time.Time
	err := poll.Wait(20*time.Second, 250*time.Millisecond, func() error {
		if err := r.pairWhole(p); err != nil {
			since = time.Time{}
			return err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if held := time.Since(since); held < 5*time.Second {
			return fmt.Errorf("whole for %v only", held.Round(time.Millisecond))
		}
		return nil
	})
	if err == nil {
		return "whole again by itself after the heal"
	}
	victim := n
	if !n.running() {
		victim = p.other(n)
	}
	victim.hold()
	start := time.Now()
	if err := victim.signal(syscall.SIGTERM); err != nil {
		victim.restartHeld()
		return "operator restart: " + err.Error()
	}
	if err := victim.waitExit(30 * time.Second); err != nil {
		_ = victim.signal(syscall.SIGKILL)
		_ = victim.waitExit(10 * time.Second)
	}
	end, err2 := victim.restartHeld()
	if err2 != nil {
		return "operator restart: " + err2.Error()
	}
	r.rec.fault(injected{plan: Fault{Kind: Leave, Cluster: p.index}, check: check.Fault{Kind: check.FaultLeave, Targets: []string{victim.name}, Start: start, End: end},
		note: "the operator's restart after an auto-down partition"})
	return fmt.Sprintf("not whole after the heal (%v): the operator restarted %s", err, victim.name)
}

// pairWhole reports nil when both nodes of p run, each sees both as Up
// and reachable members, and one reads 250 and the other 240.
func (r *rig) pairWhole(p *pair) error {
	for _, n := range p.nodes {
		if !n.running() {
			return fmt.Errorf("%s is not running", n.name)
		}
		v, err := n.members()
		if err != nil {
			return err
		}
		up := 0
		for _, m := range v.Members {
			if m.Status == procs.StatusUp && m.Reachable {
				up++
			}
		}
		if up != 2 || len(v.Members) != 2 {
			return fmt.Errorf("%s sees %d of %d members Up and reachable", n.name, up, len(v.Members))
		}
	}
	return r.whole(p)
}

// slowConfigDB delays n's path to the Config DB by f.Delay each way for
// f.Hold.
func (r *rig) slowConfigDB(n *node, f Fault) (injected, error) {
	start := time.Now()
	n.dbPath.SetDelay(netem.Upstream, f.Delay)
	n.dbPath.SetDelay(netem.Downstream, f.Delay)
	r.hold(f.Hold)
	n.dbPath.SetDelay(netem.Upstream, 0)
	n.dbPath.SetDelay(netem.Downstream, 0)
	end := time.Now()
	return injected{check: check.Fault{Kind: check.FaultConfigDBSlow, Targets: []string{n.name}, Start: start, End: end}}, nil
}

// cutDevice cuts n's path to its pair's device for f.Hold: silently
// (held connections, delivered when the cut ends, as TCP retransmits) or
// refused and reset (f.Reset).
func (r *rig) cutDevice(n *node, f Fault) (injected, error) {
	mode := netem.Blackhole
	if f.Reset {
		mode = netem.Reset
	}
	start := time.Now()
	if err := n.devPath.SetMode(mode); err != nil {
		return injected{}, err
	}
	r.hold(f.Hold)
	err := n.devPath.SetMode(netem.Pass)
	end := time.Now()
	if err != nil {
		return injected{}, err
	}
	return injected{check: check.Fault{Kind: check.FaultDeviceCut, Targets: []string{n.name, n.pair.device}, Start: start, End: end}}, nil
}

// stopConfigDB stops PostgreSQL for f.Hold and starts it again.
func (r *rig) stopConfigDB(f Fault) (injected, error) {
	start := time.Now()
	r.db.Stop()
	r.hold(f.Hold)
	r.db.Start()
	end := time.Now()
	return injected{check: check.Fault{Kind: check.FaultConfigDBStop, Start: start, End: end}}, nil
}
