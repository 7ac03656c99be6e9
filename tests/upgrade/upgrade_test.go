package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/otopcua/otopcua/opcua/client"
	"github.com/otopcua/otopcua/tests/chaos/check"
	"github.com/otopcua/otopcua/tests/clientmodes"
	"github.com/otopcua/otopcua/tests/procs"
)

// TestRollingUpgradeFromThePreviousRelease: a pair of the previous release
// under traffic is upgraded one node at a time — the Secondary, a manual
// failover, the other node — while every channel between the two versions
// is checked both ways and the checker watches the plant's invariants.
func TestRollingUpgradeFromThePreviousRelease(t *testing.T) {
	began := time.Now()
	root := procs.RepoRoot()
	rel, err := ReadRelease(root)
	if err != nil {
		t.Fatal(err)
	}
	commit, how, err := Resolve(Clone{Dir: root}, rel)
	if err != nil {
		t.Fatal(err)
	}
	oldBin := Build(t, root, rel, commit)
	newBin := procs.Binary(t)
	t.Logf("previous release %s from %s, and the current tree: built in %v", rel.Tag, how, time.Since(began).Round(time.Millisecond))

	r := newRig(t, oldBin, newBin)
	phase := time.Now()
	r.startOld()
	r.startScada()
	r.startToggler(time.Second)
	r.scada.waitValuesFrom("a", 0)
	r.checkWire(rel.Tag+" pair", "a")
	t.Logf("%s pair under traffic in %v", rel.Tag, time.Since(phase).Round(time.Millisecond))

	// 1. The Secondary first: stopped gracefully, started from the current
	// tree at the same address with the same data.
	phase = time.Now()
	first := r.scada.valueCount()
	r.upgrade("b")
	r.checkWire(rel.Tag+" Primary a, upgraded Secondary b", "a")
	if knownLeaveBlip[rel.Tag] {
		r.excuse = &excuse{from: first, to: r.scada.valueCount(), since: phase, until: time.Now(), primary: "a", release: rel.Tag}
	}
	t.Logf("b upgraded in %v", time.Since(phase).Round(time.Millisecond))

	// 2. Fail over to it; the old Primary's supervisor restarts it from
	// the binary it still has installed, the previous release.
	phase = time.Now()
	r.manualFailover("a", "b")
	r.restart("a", oldBin)
	r.checkWire("upgraded Primary b, "+rel.Tag+" Secondary a", "b")
	t.Logf("failover to b and a back as Secondary in %v", time.Since(phase).Round(time.Millisecond))

	// 3. The other node.
	phase = time.Now()
	r.upgrade("a")
	r.checkWire("both upgraded", "b")
	t.Logf("a upgraded in %v", time.Since(phase).Round(time.Millisecond))

	r.finish()
	t.Logf("rolling upgrade %s → current tree: %v in all", rel.Tag, time.Since(began).Round(time.Millisecond))
}

// manualFailover asks the Secondary target's admin API for a manual
// failover of the Primary: target sends it to the Primary over pub/sub;
// the Primary shows ServiceLevel 0 while it drains, then leaves and exits
// 0. The client moves to target on that planned move, its mirrored
// session activated there (no fall back to Warm), and target reaches 250.
func (r *rig) manualFailover(primary, target string) {
	r.t.Helper()
	mark := r.scada.eventCount()
	values, _ := r.scada.counterValues()
	at := time.Now()
	if _, err := r.nodes[target].Post("/api/clusters/" + clusterID + "/failover"); err != nil {
		r.t.Fatalf("manual failover through %s: %v", target, err)
	}
	var ev client.Event
	procs.CheckFor(r.t, 30*time.Second, 20*time.Millisecond, func() error {
		for _, e := range r.scada.eventsSince(mark) {
			if e.Kind == client.EventFailover && e.To.URI == uri(target) {
				ev = e
				return nil
			}
		}
		return fmt.Errorf("the client has not moved to %s: events %+v", target, r.scada.eventsSince(mark))
	})
	if ev.From.URI != uri(primary) || ev.Mode != client.ModeMirrored || ev.Fallback != "" || ev.Transferred {
		r.t.Fatalf("failover event %+v: want a mirrored move from %s without a fall back to Warm", ev, primary)
	}
	code := r.nodes[primary].WaitExit(60 * time.Second)
	r.rec.process(primary, check.Exited, code)
	r.rec.fault(check.Fault{Kind: check.FaultManualFailover, Targets: []string{primary}, Start: at, End: time.Now()})
	if code != 0 {
		r.t.Fatalf("%s exited %d after its manual failover, want 0", primary, code)
	}
	procs.CheckFor(r.t, 30*time.Second, 50*time.Millisecond, func() error {
		if o, ok := r.lastRound().Level(target); !ok || !o.OK || o.Level != levelPrimary {
			return fmt.Errorf("%s not at 250 yet: %s", target, roundText(r.lastRound()))
		}
		p, err := r.panelOf(target)
		if err != nil {
			return err
		}
		if p.Mirror == nil || p.Mirror.Takeovers["ok"] == 0 {
			return fmt.Errorf("%s took over no mirrored session: %+v", target, p.Mirror)
		}
		return nil
	})
	r.scada.waitValuesFrom(target, len(values))
	r.t.Logf("manual failover %s → %s: the client moved in %v (%s), its session activated on %s", primary, target,
		ev.FailoverTime.Round(time.Millisecond), ev.Reason, target)
}

// finish stops the traffic and runs the final checks: the checker over
// everything recorded, every counter value once at the client, every
// alarm transition once in alarm_history, and no device write of unknown
// origin.
func (r *rig) finish() {
	r.t.Helper()
	toggles := r.toggles.halt()
	r.scada.close()
	rows := r.waitAlarmHistory(len(toggles))
	r.sampler.Stop()
	if u := r.rec.unplacedWrites(); len(u) > 0 {
		r.t.Fatalf("%d device writes from a connection of no node: %s", len(u), strings.Join(u, "; "))
	}
	var alarms []check.AlarmRow
	for _, h := range rows {
		alarms = append(alarms, check.AlarmRow{At: h.at, Source: "alarm_history", ClusterID: clusterID, Condition: alarmName, TransitionID: h.transition})
	}
	run := r.rec.run(r.sampler.Rounds(), alarms, map[string]check.Tag{r.tags.setpoint.String(): {Device: device, Address: setpointRegister}})
	for _, v := range check.Check(run) {
		r.t.Errorf("%v\n%s", v, v.Timeline())
	}
	r.checkCounter()
	r.checkAlarms(rows, toggles)
	for _, ev := range r.scada.eventsSince(0) {
		r.t.Logf("client %s at %s: %s → %s in %v (%s) mode %s fallback %q transferred %v", ev.Kind, ev.At.Format("15:04:05.000"), ev.From.URI, ev.To.URI, ev.FailoverTime.Round(time.Millisecond), ev.Reason, ev.Mode, ev.Fallback, ev.Transferred)
	}
	r.t.Logf("checker: %d device writes, %d acknowledged writes, %d ServiceLevel samples, %d alarm_history rows, %d process events: no violation; client writes %v",
		len(run.Writes), len(run.Acks), len(run.Levels), len(run.Alarms), len(run.Processes), r.scada.writeOutcomes())
}

// knownLeaveBlip are the previous releases whose lease-majority Primary
// shows ServiceLevel 100 (and refuses gated writes) from its peer's
// graceful leave until it holds the lease, 50–250 ms: a client that follows
// ServiceLevel may move to the leaving node and back, and a Mirrored
// client lost about a second of the counter on the way back. Fixed after
// v0.1.0 (cluster/lease/keeper, graceful_leave.txt; docs/releases.md): in
// an upgrade from such a release only the first step, the Secondary's
// leave under the old Primary, shows it, and the test accepts a gap in the
// counter there only when the sampler saw that Primary at 100.
var knownLeaveBlip = map[string]bool{"v0.1.0": true}

// excuse is the part of the counter log where a gap is the previous
// release's known leave blip: values from..to (indices), between since
// and until, while primary ran that release.
type excuse struct {
	from, to     int
	since, until time.Time
	primary      string
	release      string
}

// checkCounter: the client received the counter as one contiguous run,
// every value once, and about as many values as the run lasted. Inside
// r.excuse, values may be missing (never repeated or out of order), and
// only when the sampler saw the old Primary at 100 in that time.
func (r *rig) checkCounter() {
	r.t.Helper()
	values, others := r.scada.counterValues()
	if len(values) < 100 {
		r.t.Fatalf("only %d counter values at the client", len(values))
	}
	e := r.excuse
	if e == nil {
		e = &excuse{from: len(values), to: len(values)}
	}
	if err := clientmodes.Contiguous(values[:min(e.from+1, len(values))]); err != nil {
		r.t.Errorf("counter at the client: %v", err)
	}
	if err := clientmodes.Contiguous(values[min(e.to, len(values)-1):]); err != nil {
		r.t.Errorf("counter at the client: %v", err)
	}
	missed := 0
	for i := e.from + 1; i <= e.to && i < len(values); i++ {
		d := int(values[i].V) - int(values[i-1].V)
		if d <= 0 {
			r.t.Errorf("counter at the client: %d follows %d (from %s): delivered twice or out of order", values[i].V, values[i-1].V, values[i].Server)
		}
		missed += max(d-1, 0)
	}
	if missed > 0 {
		if !r.sampledAt(e.primary, 100, e.since, e.until) {
			r.t.Errorf("counter at the client: %d values missed while the Secondary was upgraded, and the %s Primary %s was never sampled at 100: not the known leave blip", missed, e.release, e.primary)
		}
		r.t.Logf("counter: %d values missed at the first step, while the %s Primary %s showed 100 for its peer's leave (the known leave blip of %s, docs/releases.md)", missed, e.release, e.primary, e.release)
	}
	r.t.Logf("counter: %d values from %d to %d, each once (%d missed at the first step); %d other notifications %v",
		len(values), values[0].V, values[len(values)-1].V, missed, len(others), others)
}

// sampledAt reports whether the sampler read node at level between from
// and to.
func (r *rig) sampledAt(node string, level byte, from, to time.Time) bool {
	for _, rd := range r.sampler.Rounds() {
		if o, ok := rd.Level(node); ok && o.OK && o.Level == level && !rd.At.Before(from) && !rd.At.After(to) {
			return true
		}
	}
	return false
}

// historyRow is one alarm_history row of the alarm.
type historyRow struct {
	transition, kind string
	at               time.Time
}

// waitAlarmHistory waits until the Primary's history queue is empty and
// alarm_history holds at least n rows of the alarm, and returns them,
// oldest first.
func (r *rig) waitAlarmHistory(n int) []historyRow {
	r.t.Helper()
	var rows []historyRow
	procs.CheckFor(r.t, 60*time.Second, 250*time.Millisecond, func() error {
		for _, name := range []string{"a", "b"} {
			depth, err := queueDepth(r.nodes[name])
			if err != nil || depth != 0 {
				return fmt.Errorf("%s's history queue holds %d (%v)", name, depth, err)
			}
		}
		var err error
		if rows, err = r.alarmHistory(); err != nil {
			return err
		}
		if len(rows) < n {
			return fmt.Errorf("alarm_history holds %d rows, the device made %d transitions", len(rows), n)
		}
		return nil
	})
	return rows
}

// queueDepth is the node's alarm history queue (GET /api/historian).
func queueDepth(n *procs.Node) (int, error) {
	body, err := n.Get("/api/historian")
	if err != nil {
		return 0, err
	}
	var s struct {
		QueueDepth int `json:"queueDepth"`
	}
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return 0, fmt.Errorf("%s /api/historian: %w: %s", n.Name, err, body)
	}
	return s.QueueDepth, nil
}

func (r *rig) alarmHistory() ([]historyRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.db.DSN())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT transition_id, kind, event_time FROM alarm_history
		WHERE cluster_id = $1 AND alarm = $2 ORDER BY event_time, id`, clusterID, alarmName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []historyRow
	for rows.Next() {
		var h historyRow
		if err := rows.Scan(&h.transition, &h.kind, &h.at); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// checkAlarms: alarm_history holds one row per transition the device made,
// in order (active for a raise, inactive for a clear): none lost across
// the upgrades and the failover, none twice.
func (r *rig) checkAlarms(rows []historyRow, toggles []int) {
	r.t.Helper()
	if len(rows) != len(toggles) {
		r.t.Errorf("alarm_history holds %d rows, the device made %d transitions", len(rows), len(toggles))
	}
	for i, row := range rows[:min(len(rows), len(toggles))] {
		want := map[bool]string{true: "active", false: "inactive"}[toggles[i] == levelHigh]
		if row.kind != want {
			r.t.Errorf("alarm_history row %d is %s, want %s (transition %d of %d)", i, row.kind, want, i+1, len(toggles))
			return
		}
	}
	r.t.Logf("alarm: %d transitions, each once in alarm_history", len(toggles))
}
