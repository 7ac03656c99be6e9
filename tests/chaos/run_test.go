package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/chaos/check"
)

// runChaos runs one chaos run with o (its zero fields defaulted): it
// prints the seed first, draws the plan, builds the rig, waits until every
// pair is whole, runs the plan for o.Duration, and returns what the
// checker found (nil: nothing). It logs the run's figures per ClusterId.
// It fails t itself only when the rig cannot run (setup, records), or,
// for the product as shipped (no o.Mutation), when a pair has no Primary
// and Secondary at the end; judging the violations is the caller's.
func runChaos(t *testing.T, o options) []check.Violation {
	t.Helper()
	o = o.withDefaults()
	t.Logf("chaos seed %d", o.Seed)
	plan := Draw(o.Seed, o.plan())
	t.Logf("chaos plan: %s for %s on %s (%d faults: %s), mutation %q:\n%s", strings.Join(o.Clusters, ", "), o.Duration, kindList(o.Kinds),
		len(plan), Tally(plan), o.Mutation, planText(plan))
	began := time.Now()
	r := newRig(t, o)
	r.setUp()
	from := time.Now()
	r.execute(plan)
	if !r.waitUntil(from.Add(o.Duration)) {
		t.Fatal("the run ended before its schedule")
	}
	to := time.Now()
	if o.Mutation == "" {
		for _, p := range r.pairs {
			if err := poll.Wait(30*time.Second, 100*time.Millisecond, func() error { return r.whole(p) }); err != nil {
				t.Errorf("chaos seed %d: %s has no Primary and Secondary at the end of the run: %v", o.Seed, p.spec.ID, err)
			}
		}
	}
	r.end()
	alarms, err := r.alarmRows()
	if err != nil {
		t.Fatalf("alarm_history: %v", err)
	}
	run, err := r.rec.run(r.dir, r.clusters(), alarms)
	if err != nil {
		t.Fatal(err)
	}
	vs := check.Check(run)
	r.report(from, to, alarms, vs, time.Since(began))
	return vs
}

// clusters is the configuration as the checker reads it.
func (r *rig) clusters() []check.Cluster {
	var out []check.Cluster
	for _, p := range r.pairs {
		c := check.Cluster{ID: p.spec.ID, Downing: p.spec.Downing, Devices: []string{p.device},
			Tags: map[string]check.Tag{
				fmt.Sprintf("ns=%d;s=%s/Setpoint", p.ns, p.device): {Device: p.device, Address: fmt.Sprintf("holding:%d", setpointReg)},
			}}
		for _, n := range p.nodes {
			c.Nodes = append(c.Nodes, n.name)
		}
		out = append(out, c)
	}
	return out
}

// report logs the run's figures per ClusterId.
func (r *rig) report(from, to time.Time, alarms []alarmRow, vs []check.Violation, took time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos seed %d: %s schedule, %s in all, %d violations%s\n", r.o.Seed, r.o.Duration, took.Round(time.Second), len(vs),
		map[bool]string{true: " (" + invariants(vs) + ")", false: ""}[len(vs) > 0])
	for _, c := range r.clusters() {
		f := r.rec.figuresOf(c, from, to, alarms)
		p := r.pairs[0]
		for _, q := range r.pairs {
			if q.spec.ID == c.ID {
				p = q
			}
		}
		fmt.Fprintf(&b, "  %-10s (%s) faults %d: %s\n", c.ID, c.Downing, len(f.faults), Tally(f.faults))
		fmt.Fprintf(&b, "  %-10s client: %d failovers, %d losses, worst blind window %s (from %s); writes: %s; through the Secondary: %s\n", "", f.failovers, f.losses,
			f.blind.Round(time.Millisecond), r.rec.rel(f.blindAt), p.client.outcomesText(false), p.client.outcomesText(true))
		fmt.Fprintf(&b, "  %-10s device: %d writes (%d from no node's path); alarms: %d toggles, %d alarm_history rows; processes: %d starts, exits %s\n", "",
			f.writes, f.unknown, f.toggles, f.alarmRows, f.starts, f.exitsText())
	}
	r.t.Log(b.String())
}

// logf logs a line of the run with its time.
func (r *rig) logf(format string, args ...any) {
	r.t.Logf("%s "+format, append([]any{r.rec.rel(time.Now())}, args...)...)
}

// planText is the plan one fault a line.
func planText(plan []Fault) string {
	var b strings.Builder
	for _, f := range plan {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}
