package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/chaos/check"
)

// TestRecorderNamesObservationsByFileAndLine: the records are written one
// file per device, node and client, in time order, and every observation
// the checker reads names the line of its file; a device write from an
// address no node dials from is counted and named as such.
func TestRecorderNamesObservationsByFileAndLine(t *testing.T) {
	t0 := time.Now()
	r := newRecorder(7)
	r.begin(t0)
	r.writer("127.0.0.11", "n-a")
	r.writer("127.0.0.12", "n-b")
	r.level("n-a", "c", t0.Add(100*time.Millisecond), 250, true)
	r.level("n-a", "c", t0.Add(50*time.Millisecond), 0, false) // out of order: sorted by time
	r.deviceWrite("plc", fielddevice.Write{Table: fielddevice.Holding, Address: 1, Words: []uint16{5, 6}, Client: "127.0.0.12:40000"})
	r.deviceWrite("plc", fielddevice.Write{Table: fielddevice.Holding, Address: 1, Words: []uint16{7}, Client: "127.0.0.99:40000"})
	r.process("n-a", check.Started, 0)
	r.ack(check.AckedWrite{At: t0.Add(time.Second), NodeID: "ns=2;s=plc/Setpoint", Value: "5", Server: "n-b"})
	r.failover(check.ClientFailover{At: t0.Add(500 * time.Millisecond), From: "n-a", To: "n-b", Reason: "lost"})
	dir := t.TempDir()
	clusters := []check.Cluster{{ID: "c", Nodes: []string{"n-a", "n-b"}, Downing: check.AutoDown, Devices: []string{"plc"}}}
	run, err := r.run(dir, clusters, []alarmRow{{cluster: "c", alarm: "HighLevel", transition: "x/HighLevel/1", at: t0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Levels) != 2 || run.Levels[0].Answered || run.Levels[0].Source != "levels-n-a.log:1" || run.Levels[1].Source != "levels-n-a.log:2" {
		t.Errorf("levels %+v: want no answer at levels-n-a.log:1, then 250 at :2", run.Levels)
	}
	if len(run.Writes) != 3 || run.Writes[0].Writer != "n-b" || run.Writes[1].Address != "holding:2" || run.Writes[1].Value != "6" ||
		run.Writes[2].Writer != "unknown 127.0.0.99:40000" || run.Writes[2].Source != "writes-plc.log:3" {
		t.Errorf("writes %+v", run.Writes)
	}
	if r.unknown["plc"] != 1 {
		t.Errorf("unknown writers counted %d, want 1", r.unknown["plc"])
	}
	if run.Failovers[0].Source != "client-c.log:1" || run.Acks[0].Source != "client-c.log:2" {
		t.Errorf("client sources: failover %q, ack %q; want client-c.log:1 and :2", run.Failovers[0].Source, run.Acks[0].Source)
	}
	if run.Processes[0].Source != "processes.log:1" || run.Alarms[0].Source != "alarm_history.log:1" || run.Seed != 7 || !run.Start.Equal(t0) {
		t.Errorf("run %+v", run)
	}
	b, err := os.ReadFile(filepath.Join(dir, "writes-plc.log"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 3 || !strings.HasSuffix(lines[0], "plc holding:1=5 by n-b") {
		t.Errorf("writes-plc.log:\n%s", b)
	}
}

// TestBlindWindow: the worst blind window is the longest gap between
// counter values from the clients' start to the run's end, the ends
// included.
func TestBlindWindow(t *testing.T) {
	t0 := time.Now()
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	c := check.Cluster{ID: "c"}
	for _, tc := range []struct {
		name     string
		values   []int
		end      int
		want, at int
	}{
		{"steady", []int{100, 200, 300}, 400, 100, 0},
		{"a gap", []int{100, 200, 2700, 2800}, 2900, 2500, 200},
		{"blind at the end", []int{100, 200}, 5000, 4800, 200},
		{"value before the start ignored", []int{-500, 1000}, 1100, 1000, 0},
	} {
		r := newRecorder(1)
		for _, v := range tc.values {
			r.counterValue("c", ms(v))
		}
		f := r.figuresOf(c, t0, ms(tc.end), nil)
		if f.blind != time.Duration(tc.want)*time.Millisecond || !f.blindAt.Equal(ms(tc.at)) {
			t.Errorf("%s: blind %v from %v, want %dms from %dms", tc.name, f.blind, f.blindAt.Sub(t0), tc.want, tc.at)
		}
	}
}
