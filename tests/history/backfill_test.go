package history_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// downFor is how long the Primary stays down.
const downFor = 30 * time.Second

// startPair starts nodes a (the first seed: the Primary) and b of
// clusterID on PostgreSQL, with LocalDb replication between them (the
// channel the history back-fill rides), and deploys the counter.
func startPair(t *testing.T, devAddr string) (a, b *procs.Node) {
	t.Helper()
	db := pg.Start(t)
	ports := map[string]procs.Ports{"a": procs.NewPorts(t), "b": procs.NewPorts(t)}
	sync := map[string]int{"a": procs.UniquePort(t), "b": procs.UniquePort(t)}
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports["a"].Cluster), fmt.Sprintf("127.0.0.1:%d", ports["b"].Cluster)}
	cfgs := map[string]map[string]any{}
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[name]
		cfg := procs.BaseConfig(name, ports[name])
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		cfg["Node"].(map[string]any)["ClusterId"] = clusterID
		cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + other + ":otopcua"}
		cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": db.DSN()}
		cfg["LocalDb"] = map[string]any{"Path": filepath.Join(dir, name+"-local.db"), "SyncListenPort": sync[name],
			"Peers": []string{fmt.Sprintf("127.0.0.1:%d", sync[other])}, "Replication": map[string]any{"ApiKey": "the-pair's-shared-key"}}
		cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		cfgs[name] = cfg
	}
	a = procs.Start(t, "a", cfgs["a"])
	a.WaitFullyReady(60 * time.Second)
	b = procs.Start(t, "b", cfgs["b"])
	b.WaitFullyReady(60 * time.Second)
	procs.Deploy(t, cfgs["a"], deployment(devAddr))
	waitRole(t, a, "primary")
	waitRole(t, b, "secondary")
	return a, b
}

func waitRole(t *testing.T, n *procs.Node, role string) {
	t.Helper()
	series := fmt.Sprintf(`otopcua_redundancy_role{cluster_id=%q,role=%q} 1`, clusterID, role)
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		body, err := n.Get("/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(body, series) {
			return fmt.Errorf("%s is not %s yet", n.Name, role)
		}
		return nil
	})
}

// metricValue is the value of the series named exactly series in body.
func metricValue(body, series string) (float64, bool) {
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// TestBackfillAfterAPrimaryIsKilled: a pair records a counter that goes
// up every 100 ms; the Primary is killed and restarted 30 s later at the
// same address. The survivor's history has every counter value across
// the failover; the restarted node back-fills its gap from the survivor
// and then holds, over the gap, exactly the survivor's samples (value and
// source timestamp), and every counter value over the whole window.
func TestBackfillAfterAPrimaryIsKilled(t *testing.T) {
	_, devAddr := startDevice(t, true)

	a, b := startPair(t, devAddr)
	ca, cb := connect(t, a), connect(t, b)
	ns := ca.namespace()
	counter := ua.NewStringNodeID(ns, "press1/FastCounter")
	// Both record (20 values each); the window starts there, and the
	// Primary is killed once both have recorded 20 more.
	recorded := func(since time.Time) {
		for _, c := range []*session{ca, cb} {
			procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
				dvs, st := c.history(counter, since, time.Now())
				if st != ua.StatusOK || len(dvs) < 20 {
					return fmt.Errorf("%d values since %v, %v", len(dvs), since, st)
				}
				return nil
			})
		}
	}
	recorded(time.Now().Add(-time.Minute))
	from := time.Now()
	recorded(from)

	a.Signal(syscall.SIGKILL)
	killed := time.Now()
	a.WaitExit(10 * time.Second)
	// The survivor records on, alone, for downFor (checked below, with
	// the whole window).
	procs.CheckFor(t, downFor+10*time.Second, 200*time.Millisecond, func() error {
		if since := time.Since(killed); since < downFor {
			return fmt.Errorf("down for %v", since.Round(time.Second))
		}
		return nil
	})
	a.Restart()
	restarted := time.Now()
	a.WaitReady(60 * time.Second)
	ca = connect(t, a)
	// The back-fill lag rises to the gap's length, then falls to 0.
	var maxLag float64
	var backfilled time.Duration
	procs.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		body, err := a.Get("/metrics")
		if err != nil {
			return err
		}
		lag, ok1 := metricValue(body, "otopcua_history_backfill_lag_seconds")
		n, ok2 := metricValue(body, "otopcua_history_backfill_samples_total")
		maxLag = max(maxLag, lag)
		if !ok1 || !ok2 || lag != 0 || n == 0 {
			return fmt.Errorf("back-fill metrics: %s", grep(body, "otopcua_history_backfill"))
		}
		backfilled = time.Since(restarted)
		return nil
	})

	// The window closes a few seconds after the restart, once both have
	// recorded it (the recorders write every 100 ms; the back-fill asks
	// for history 2 s old).
	to := restarted.Add(5 * time.Second)
	var survivor, restored []*ua.DataValue
	procs.CheckFor(t, 60*time.Second, 500*time.Millisecond, func() error {
		if time.Now().Before(to.Add(3 * time.Second)) {
			return fmt.Errorf("window not closed yet")
		}
		var st ua.StatusCode
		if survivor, st = cb.history(counter, from, to); st != ua.StatusOK {
			return fmt.Errorf("survivor: %v", st)
		}
		if restored, st = ca.history(counter, from, to); st != ua.StatusOK {
			return fmt.Errorf("restarted node: %v", st)
		}
		return sameOverTheGap(survivor, restored, killed, restarted)
	})
	filledAfter := time.Since(restarted)

	// The survivor: every counter value across the failover, once each.
	vs := counters(t, survivor)
	if n := int(vs[len(vs)-1]-vs[0]) + 1; n != len(vs) {
		t.Fatalf("the survivor's history misses %d of %d counter values", n-len(vs), n)
	}
	// The restarted node: every counter value of the window too, in order,
	// once each — the same values as the survivor's (each node stamps its
	// own readings, so outside the gap the timestamps differ by the ms
	// between the two nodes' polls).
	twice := 0
	var where []string
	for i := 1; i < len(restored); i++ {
		v, prev := restored[i].Value.Value().(uint16), restored[i-1].Value.Value().(uint16)
		switch {
		case v == prev:
			twice++
			where = append(where, fmt.Sprintf("%d at %s and %s", v, restored[i-1].SourceTimestamp.Format("15:04:05.000"), restored[i].SourceTimestamp.Format("15:04:05.000")))
		case v != prev+1:
			t.Fatalf("the restarted node's history goes from %d to %d at %v", prev, v, restored[i].SourceTimestamp)
		}
	}
	if first, last := restored[0].Value.Value().(uint16), restored[len(restored)-1].Value.Value().(uint16); first > vs[0]+1 || last+1 < vs[len(vs)-1] || twice > 0 {
		t.Fatalf("the restarted node holds %d to %d (%d values twice: %v), the survivor %d to %d; killed %s, restarted %s",
			first, last, twice, where, vs[0], vs[len(vs)-1], killed.Format("15:04:05.000"), restarted.Format("15:04:05.000"))
	}

	body, err := a.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	lag, ok1 := metricValue(body, "otopcua_history_backfill_lag_seconds")
	n, ok2 := metricValue(body, "otopcua_history_backfill_samples_total")
	if !ok1 || !ok2 || lag != 0 || n < float64(downFor/fielddevice.FastCounterPeriod) {
		t.Fatalf("back-fill metrics: lag %v (%v), samples %v (%v)\n%s", lag, ok1, n, ok2, grep(body, "otopcua_history_backfill"))
	}
	t.Logf("killed for %v; back-fill lag up to %.1f s, 0 again %v after the restart (%d samples from the survivor); both histories checked %v after the restart; window: %d counter values on the survivor, %d samples on the restarted node (%d values twice at the gap's ends: %v)",
		restarted.Sub(killed).Round(100*time.Millisecond), maxLag, backfilled.Round(100*time.Millisecond), int(n), filledAfter.Round(100*time.Millisecond), len(vs), len(restored), twice, where)
}

// sameOverTheGap checks that restored (the restarted node's history) holds
// over its gap exactly survivor's samples: the gap is the run of
// restored's samples around [killed, restarted) that are the survivor's
// (same value, same source timestamp); from the sample before that run to
// the one after it, both histories are the same, value by value and
// timestamp by timestamp.
func sameOverTheGap(survivor, restored []*ua.DataValue, killed, restarted time.Time) error {
	theirs := map[int64]any{}
	for _, dv := range survivor {
		theirs[dv.SourceTimestamp.UnixNano()] = dv.Value.Value()
	}
	isTheirs := func(dv *ua.DataValue) bool {
		v, ok := theirs[dv.SourceTimestamp.UnixNano()]
		return ok && v == dv.Value.Value()
	}
	lo, hi := -1, -1 // restored[lo:hi] is the survivor's run over the kill
	for i, dv := range restored {
		if dv.SourceTimestamp.Before(killed) || !dv.SourceTimestamp.Before(restarted) {
			continue
		}
		if !isTheirs(dv) {
			return fmt.Errorf("the restarted node holds %v at %v, which the survivor does not, while it was down", dv.Value.Value(), dv.SourceTimestamp)
		}
		if lo < 0 {
			lo = i
		}
		hi = i + 1
	}
	if lo < 0 {
		return fmt.Errorf("nothing back-filled yet")
	}
	for lo > 0 && isTheirs(restored[lo-1]) {
		lo--
	}
	for hi < len(restored) && isTheirs(restored[hi]) {
		hi++
	}
	if lo == 0 || hi == len(restored) {
		return fmt.Errorf("the gap reaches an end of the window: not back-filled whole yet")
	}
	gapFrom, gapTo := restored[lo-1].SourceTimestamp, restored[hi].SourceTimestamp
	var want []*ua.DataValue
	for _, dv := range survivor {
		if dv.SourceTimestamp.After(gapFrom) && dv.SourceTimestamp.Before(gapTo) {
			want = append(want, dv)
		}
	}
	// The survivor's first and last samples of the gap repeat the value
	// the restarted node read itself on either side a few ms apart; the
	// back-fill leaves them out (history.TrimEdges).
	same := func(a, b *ua.DataValue) bool { return a.Value.Value() == b.Value.Value() && a.Status == b.Status }
	if len(want) > 0 && same(want[0], restored[lo-1]) {
		want = want[1:]
	}
	if len(want) > 0 && same(want[len(want)-1], restored[hi]) {
		want = want[:len(want)-1]
	}
	got := restored[lo:hi]
	if len(got) != len(want) {
		return fmt.Errorf("over its gap (%v, %v) the restarted node holds %d samples, the survivor %d", gapFrom, gapTo, len(got), len(want))
	}
	for i := range want {
		if got[i].Value.Value() != want[i].Value.Value() || !got[i].SourceTimestamp.Equal(want[i].SourceTimestamp) || got[i].Status != want[i].Status {
			return fmt.Errorf("gap sample %d: %v at %v, the survivor's %v at %v", i, got[i].Value.Value(), got[i].SourceTimestamp, want[i].Value.Value(), want[i].SourceTimestamp)
		}
	}
	return nil
}
