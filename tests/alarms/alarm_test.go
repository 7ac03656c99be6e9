package alarms_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// nodeLine is one line of tests/interop/alarms.mjs.
type nodeLine struct {
	Event  string           `json:"event"`
	Status string           `json:"status"`
	Set    []map[string]any `json:"set"`
	Fields map[string]any   `json:"fields"`
	Msg    string           `json:"message"`
}

func runAlarmScript(t *testing.T, n *procs.Node, args ...string) []nodeLine {
	t.Helper()
	var out []nodeLine
	for _, l := range nodescript.Run(t, "alarms.mjs", append([]string{n.Endpoint(), alarmName}, args...)...) {
		if len(l) == 0 || l[0] != '{' {
			continue // node-opcua's own warnings
		}
		var v nodeLine
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatalf("alarms.mjs: %s: %v", l, err)
		}
		if v.Event == "error" {
			t.Fatalf("alarms.mjs on %s: %s", n.Name, v.Msg)
		}
		out = append(out, v)
	}
	return out
}

func lineOf(lines []nodeLine, event string, nth int) (nodeLine, bool) {
	for _, l := range lines {
		if l.Event == event {
			if nth == 0 {
				return l, true
			}
			nth--
		}
	}
	return nodeLine{}, false
}

// refreshed is the HighLevel entry of a ConditionRefresh set.
func refreshed(t *testing.T, l nodeLine) map[string]any {
	t.Helper()
	for _, e := range l.Set {
		if e["ConditionName"] == alarmName {
			return e
		}
	}
	t.Fatalf("the refresh set %v lacks %s", l.Set, alarmName)
	return nil
}

// TestAlarmRaisedAcknowledgedRefreshed: a register change raises the
// alarm on both nodes (node-opcua subscribers on each see the event),
// /alerts lists it once, alarm_history holds it once; node-opcua's
// Acknowledge through the Secondary is refused and changes nothing,
// through the Primary it lands and both nodes then show it acknowledged;
// ConditionRefresh on either node returns the same set.
func TestAlarmRaisedAcknowledgedRefreshed(t *testing.T) {
	r := startRig(t)

	// node-opcua subscribers on both nodes, then the register change.
	var wg sync.WaitGroup
	seen := map[string][]nodeLine{}
	var mu sync.Mutex
	for _, n := range []*procs.Node{r.a, r.b} {
		wg.Go(func() {
			lines := runAlarmScript(t, n, "30", "watch")
			mu.Lock()
			seen[n.Name] = lines
			mu.Unlock()
		})
	}
	for _, n := range []*procs.Node{r.a, r.b} {
		procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
			body, err := n.Get("/metrics")
			if err != nil {
				return err
			}
			if !strings.Contains(body, "\notopcua_opcua_monitored_items 1\n") {
				return fmt.Errorf("%s: the node-opcua event item is not there yet", n.Name)
			}
			return nil
		})
	}
	r.dev.SetHolding(0, high)
	wg.Wait()
	for _, name := range []string{"a", "b"} {
		ev, ok := lineOf(seen[name], "active", 0)
		if !ok || ev.Fields["ActiveState.Id"] != true || ev.Fields["AckedState.Id"] != false || ev.Fields["Severity"] != float64(700) {
			t.Fatalf("node-opcua on %s did not see the alarm go active: %v", name, seen[name])
		}
	}

	// /alerts: once, active, unacknowledged, on both nodes.
	for _, n := range []*procs.Node{r.a, r.b} {
		s, err := alertsOf(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 1 || s[0].Alarm != alarmName || !s[0].Active || s[0].Acked {
			t.Fatalf("%s /alerts = %+v, want %s once, active and unacknowledged", n.Name, s, alarmName)
		}
	}
	// alarm_history: the activation once.
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		h, err := r.history()
		if err != nil {
			return err
		}
		if len(h) != 1 || h[0].Kind != "active" {
			return fmt.Errorf("alarm_history %+v, want one active row", h)
		}
		return nil
	})

	// Acknowledge through the Secondary: refused, nothing changes.
	lines := runAlarmScript(t, r.b, "30")
	before := refreshed(t, mustLine(t, lines, "refresh", 0))
	if ack, _ := lineOf(lines, "ack", 0); ack.Status != "BadInvalidState" {
		t.Fatalf("Acknowledge through the Secondary answered %q, want BadInvalidState", ack.Status)
	}
	after := refreshed(t, mustLine(t, lines, "refresh", 1))
	if before["AckedState.Id"] != false || after["AckedState.Id"] != false || after["ActiveState.Id"] != true {
		t.Fatalf("a refused Acknowledge changed the condition: before %v after %v", before, after)
	}
	for _, n := range []*procs.Node{r.a, r.b} {
		if s, _ := alertsOf(n); len(s) != 1 || s[0].Acked {
			t.Fatalf("%s after the refused ack: %+v", n.Name, s)
		}
	}

	// Through the Primary: Good, the acked event, both nodes acknowledged.
	lines = runAlarmScript(t, r.a, "30")
	if ack, _ := lineOf(lines, "ack", 0); ack.Status != "Good" {
		t.Fatalf("Acknowledge through the Primary answered %q, want Good", ack.Status)
	}
	primarySet := refreshed(t, mustLine(t, lines, "refresh", 1))
	if primarySet["AckedState.Id"] != true {
		t.Fatalf("the Primary's refresh after the ack: %v", primarySet)
	}
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		s, err := alertsOf(r.b)
		if err != nil {
			return err
		}
		if len(s) != 1 || !s[0].Acked {
			return fmt.Errorf("the Secondary's /alerts %+v: the ack has not reached it", s)
		}
		return nil
	})
	// ConditionRefresh on the Secondary returns the same condition state.
	lines = runAlarmScript(t, r.b, "30")
	secondarySet := refreshed(t, mustLine(t, lines, "refresh", 0))
	for _, f := range []string{"ConditionName", "ActiveState.Id", "AckedState.Id", "ConfirmedState.Id", "EnabledState.Id", "Retain", "Severity", "ConditionId", "SourceName"} {
		if fmt.Sprint(secondarySet[f]) != fmt.Sprint(primarySet[f]) {
			t.Errorf("ConditionRefresh %s: Primary %v, Secondary %v", f, primarySet[f], secondarySet[f])
		}
	}
	checkAlarmMetrics(t, r.a)
	// alarm_history: the activation and the acknowledgement, once each.
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		h, err := r.history()
		if err != nil {
			return err
		}
		if len(h) != 2 || h[0].Kind != "active" || h[1].Kind != "acked" {
			return fmt.Errorf("alarm_history %+v, want active then acked", h)
		}
		return nil
	})
}

func mustLine(t *testing.T, lines []nodeLine, event string, nth int) nodeLine {
	t.Helper()
	l, ok := lineOf(lines, event, nth)
	if !ok {
		t.Fatalf("alarms.mjs printed no %s #%d: %+v", event, nth, lines)
	}
	return l
}

// toggler moves the register between low and high every period and logs
// each change.
type toggler struct {
	r      *rig
	period time.Duration
	values []int // every value set, in order; written by run only, read after it
}

func (tg *toggler) run(total time.Duration, during func(elapsed time.Duration)) {
	start := time.Now()
	v := low
	for time.Since(start) < total {
		if v == low {
			v = high
		} else {
			v = low
		}
		tg.r.dev.SetHolding(0, uint16(v))
		tg.values = append(tg.values, v)
		if during != nil {
			during(time.Since(start))
		}
		time.Sleep(tg.period) // the device's pace, not a wait for the system
	}
}

// checkExactlyOnce waits until the node's queue is drained and compares
// alarm_history with the toggles: one row per toggle, alternating active
// and inactive, each transition once.
func checkExactlyOnce(t *testing.T, r *rig, drainer *procs.Node, toggles []int) {
	t.Helper()
	var h []historyRow
	procs.CheckFor(t, 60*time.Second, 250*time.Millisecond, func() error {
		depth, state, err := queueDepth(drainer)
		if err != nil {
			return err
		}
		if depth != 0 {
			return fmt.Errorf("%s historian %s with %d queued", drainer.Name, state, depth)
		}
		h, err = r.history()
		if err != nil {
			return err
		}
		if len(h) < len(toggles) {
			return fmt.Errorf("alarm_history holds %d rows, the device made %d transitions", len(h), len(toggles))
		}
		return nil
	})
	ids := map[string]bool{}
	for i, row := range h {
		if ids[row.TransitionID] {
			t.Fatalf("transition %s twice", row.TransitionID)
		}
		ids[row.TransitionID] = true
		want := "inactive"
		if i < len(toggles) && toggles[i] == high {
			want = "active"
		}
		if row.Kind != want {
			t.Fatalf("row %d is %s, want %s (toggle %d of %d); rows %+v", i, row.Kind, want, i, len(toggles), h)
		}
	}
	if len(h) != len(toggles) {
		t.Fatalf("alarm_history holds %d rows, the device made %d transitions: duplicates", len(h), len(toggles))
	}
}

// TestAlarmHistoryExactlyOnceAcrossSIGKILL: the register toggles every
// 200 ms for 30 s; the Primary is SIGKILLed after 10 s; afterwards
// alarm_history holds every transition the device made exactly once, and
// the survivor drained them.
func TestAlarmHistoryExactlyOnceAcrossSIGKILL(t *testing.T) {
	r := startRig(t)
	tg := &toggler{r: r, period: 200 * time.Millisecond}
	killed := false
	tg.run(30*time.Second, func(elapsed time.Duration) {
		if !killed && elapsed >= 10*time.Second {
			killed = true
			r.a.Signal(syscall.SIGKILL)
		}
	})
	r.waitRole(r.b, "primary")
	checkExactlyOnce(t, r, r.b, tg.values)
	t.Logf("%d transitions, each once in alarm_history", len(tg.values))
	// The survivor answers the same history over OPC UA HistoryRead.
	checkHistoryRead(t, r, r.b)
	checkAlarmMetrics(t, r.b)
	p50, p99, worst := r.latency(t)
	t.Logf("reading → alarm_history row: p50 %v, p99 %v, max %v (the max spans the failover)", p50.Round(time.Millisecond), p99.Round(time.Millisecond), worst.Round(time.Millisecond))
}

// TestAlarmHistorySurvivesAConfigDbOutage: the Config DB is stopped for
// 20 s while the alarm toggles; nothing is lost, the rows drain after it
// returns.
func TestAlarmHistorySurvivesAConfigDbOutage(t *testing.T) {
	r := startRig(t)
	tg := &toggler{r: r, period: 500 * time.Millisecond}
	stopped, started := false, false
	tg.run(30*time.Second, func(elapsed time.Duration) {
		switch {
		case !stopped && elapsed >= 3*time.Second:
			stopped = true
			r.db.Stop()
		case stopped && !started && elapsed >= 23*time.Second:
			// The Primary queued what happened meanwhile.
			if depth, state, err := queueDepth(r.a); err != nil || depth == 0 || state != "CentralUnreachable" {
				t.Errorf("during the outage the Primary's historian is %s with %d queued (%v), want CentralUnreachable holding rows", state, depth, err)
			}
			started = true
			r.db.Start()
		}
	})
	checkExactlyOnce(t, r, r.a, tg.values)
	t.Logf("%d transitions, each once in alarm_history after a 20 s Config DB outage", len(tg.values))
	checkHistoryRead(t, r, r.a)
}

// TestReplicatedQueueDrainsAfterAPrimaryDiesDuringAConfigDbOutage: LocalDb
// replication on; the Config DB stops while the alarm toggles, the Primary
// is SIGKILLed with transitions queued for history; once the Config DB
// returns the survivor drains the queue, the old Primary's replicated rows
// included, and alarm_history holds every transition exactly once.
func TestReplicatedQueueDrainsAfterAPrimaryDiesDuringAConfigDbOutage(t *testing.T) {
	r := startRigWith(t, true)
	tg := &toggler{r: r, period: 500 * time.Millisecond}
	stopped, killed, started := false, false, false
	tg.run(20*time.Second, func(elapsed time.Duration) {
		switch {
		case !stopped && elapsed >= 2*time.Second:
			stopped = true
			r.db.Stop()
		case stopped && !killed && elapsed >= 8*time.Second:
			if depth, _, err := queueDepth(r.a); err != nil || depth == 0 {
				t.Errorf("the Primary holds %d queued transitions (%v) when it is killed, want some", depth, err)
			}
			killed = true
			r.a.Signal(syscall.SIGKILL)
		case killed && !started && elapsed >= 14*time.Second:
			started = true
			r.db.Start()
		}
	})
	r.waitRole(r.b, "primary")
	checkExactlyOnce(t, r, r.b, tg.values)
	s := localdbOf(t, r.b)
	if len(s.Peers) == 0 || s.Peers[0].RowsReceived["alarm_sf_events"] == 0 {
		t.Fatalf("the survivor received none of the old Primary's queued rows: %+v", s)
	}
	t.Logf("%d transitions, each once; the survivor received %d queued rows from the old Primary", len(tg.values), s.Peers[0].RowsReceived["alarm_sf_events"])
}
