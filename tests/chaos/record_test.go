package chaos

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/chaos/check"
)

// recorder keeps what the outside world saw during a run, each
// observation with its own time, and at the end writes every log to the
// run's directory and names each observation by its file and line there
// (check's Source). Its methods may be called from any goroutine; the
// device's write report calls deviceWrite with the device's lock held, so
// it only appends.
type recorder struct {
	seed int64

	mu        sync.Mutex
	origin    time.Time                    // the samplers' start; mu must be held.
	writers   map[string]string            // device path's source address → node; mu must be held.
	writes    []check.DeviceWrite          // mu must be held.
	levels    []check.LevelSample          // mu must be held.
	last      map[string]check.LevelSample // node → its latest sample; mu must be held.
	procs     []check.ProcessEvent         // mu must be held.
	acks      []check.AckedWrite           // mu must be held.
	failovers []check.ClientFailover       // mu must be held.
	losses    []clientLoss                 // mu must be held.
	faults    []injected                   // mu must be held.
	values    map[string][]time.Time       // ClusterId → arrivals of new counter values; mu must be held.
	toggles   map[string][]time.Time       // ClusterId → alarm toggles; mu must be held.
	unknown   map[string]int               // device writes from an address no node dials from; mu must be held.
}

// injected is a fault the run injected: the planned one and the window
// the checker reads.
type injected struct {
	plan  Fault
	check check.Fault
	note  string
}

// clientLoss is a client's "lost" event: no server of the pair reachable.
type clientLoss struct {
	at      time.Time
	cluster string
	from    string
}

func newRecorder(seed int64) *recorder {
	return &recorder{seed: seed, writers: map[string]string{}, last: map[string]check.LevelSample{},
		values: map[string][]time.Time{}, toggles: map[string][]time.Time{}, unknown: map[string]int{}}
}

// begin sets the run's time zero.
func (r *recorder) begin(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.origin = at
}

// writer names node as the writer of every device write from address ip.
func (r *recorder) writer(ip, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writers[ip] = node
}

// deviceWrite records one write a device received (called with the
// device's lock held).
func (r *recorder) deviceWrite(device string, w fielddevice.Write) {
	at := time.Now()
	ip, _, _ := net.SplitHostPort(w.Client)
	r.mu.Lock()
	defer r.mu.Unlock()
	writer, ok := r.writers[ip]
	if !ok {
		writer = "unknown " + w.Client
		r.unknown[device]++
	}
	switch w.Table {
	case fielddevice.Holding:
		for i, word := range w.Words {
			r.writes = append(r.writes, check.DeviceWrite{At: at, Device: device, Address: "holding:" + strconv.Itoa(int(w.Address)+i),
				Value: strconv.Itoa(int(word)), Writer: writer})
		}
	case fielddevice.Coil:
		r.writes = append(r.writes, check.DeviceWrite{At: at, Device: device, Address: "coil:" + strconv.Itoa(int(w.Address)),
			Value: strconv.FormatBool(w.Bit), Writer: writer})
	}
}

// level records one ServiceLevel read of node.
func (r *recorder) level(node, cluster string, at time.Time, level byte, answered bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := check.LevelSample{At: at, Node: node, ClusterID: cluster, Level: level, Answered: answered}
	r.levels = append(r.levels, s)
	r.last[node] = s
}

// latest is node's latest answered ServiceLevel if that read is newer than
// maxAge and was answered.
func (r *recorder) latest(node string, maxAge time.Duration) (byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.last[node]
	if !ok || !s.Answered || time.Since(s.At) > maxAge {
		return 0, false
	}
	return s.Level, true
}

// process records an event of node's process.
func (r *recorder) process(node string, kind check.ProcessKind, code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs = append(r.procs, check.ProcessEvent{At: time.Now(), Node: node, Kind: kind, Code: code})
}

func (r *recorder) ack(a check.AckedWrite) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, a)
}

func (r *recorder) failover(f check.ClientFailover) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failovers = append(r.failovers, f)
}

func (r *recorder) lost(l clientLoss) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.losses = append(r.losses, l)
}

// counterValue records the arrival of a new counter value at cluster's
// client.
func (r *recorder) counterValue(cluster string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.values[cluster] = append(r.values[cluster], at)
}

func (r *recorder) toggle(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.toggles[cluster] = append(r.toggles[cluster], time.Now())
}

func (r *recorder) fault(f injected) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, f)
}

// rel is t relative to the run's time zero, as the checker prints it.
func (r *recorder) rel(t time.Time) string {
	return fmt.Sprintf("%+.3fs", t.Sub(r.origin).Seconds())
}

// run writes every log to dir, names each observation by its file and
// line, and returns what the checker reads.
func (r *recorder) run(dir string, clusters []check.Cluster, alarms []alarmRow) (check.Run, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := check.Run{Seed: r.seed, Start: r.origin, Clusters: clusters}
	var errs []error
	write := func(name string, lines []string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	at := func(name string, i int) string { return name + ":" + strconv.Itoa(i+1) }

	// Device write logs, one file per device.
	writes := byTime(r.writes, func(w check.DeviceWrite) time.Time { return w.At })
	for _, dev := range uniq(writes, func(w check.DeviceWrite) string { return w.Device }) {
		name := "writes-" + dev + ".log"
		var lines []string
		for i := range writes {
			if w := &writes[i]; w.Device == dev {
				w.Source = at(name, len(lines))
				lines = append(lines, fmt.Sprintf("%s %s %s=%s by %s", r.rel(w.At), w.Device, w.Address, w.Value, w.Writer))
			}
		}
		write(name, lines)
	}
	run.Writes = writes

	levels := byTime(r.levels, func(s check.LevelSample) time.Time { return s.At })
	for _, node := range uniq(levels, func(s check.LevelSample) string { return s.Node }) {
		name := "levels-" + node + ".log"
		var lines []string
		for i := range levels {
			if s := &levels[i]; s.Node == node {
				s.Source = at(name, len(lines))
				v := "no answer"
				if s.Answered {
					v = strconv.Itoa(int(s.Level))
				}
				lines = append(lines, fmt.Sprintf("%s %s %s", r.rel(s.At), s.Node, v))
			}
		}
		write(name, lines)
	}
	run.Levels = levels

	run.Processes = byTime(r.procs, func(e check.ProcessEvent) time.Time { return e.At })
	var lines []string
	for i := range run.Processes {
		e := &run.Processes[i]
		e.Source = at("processes.log", i)
		lines = append(lines, fmt.Sprintf("%s %s %s", r.rel(e.At), e.Node, processText(*e)))
	}
	write("processes.log", lines)

	run.Acks = byTime(r.acks, func(a check.AckedWrite) time.Time { return a.At })
	run.Failovers = byTime(r.failovers, func(f check.ClientFailover) time.Time { return f.At })
	for _, c := range clusters {
		name := "client-" + c.ID + ".log"
		type line struct {
			at   time.Time
			text string
			src  *string
		}
		var ls []line
		for i := range run.Acks {
			if a := &run.Acks[i]; slices.Contains(c.Nodes, a.Server) {
				ls = append(ls, line{a.At, fmt.Sprintf("acknowledged %s=%s by %s", a.NodeID, a.Value, a.Server), &a.Source})
			}
		}
		for i := range run.Failovers {
			if f := &run.Failovers[i]; slices.Contains(c.Nodes, f.To) || slices.Contains(c.Nodes, f.From) {
				ls = append(ls, line{f.At, fmt.Sprintf("failover %s → %s: %s", f.From, f.To, f.Reason), &f.Source})
			}
		}
		for _, l := range r.losses {
			if l.cluster == c.ID {
				ls = append(ls, line{l.at, "lost " + l.from + ": no server reachable", nil})
			}
		}
		slices.SortStableFunc(ls, func(a, b line) int { return a.at.Compare(b.at) })
		var out []string
		for i, l := range ls {
			if l.src != nil {
				*l.src = at(name, i)
			}
			out = append(out, r.rel(l.at)+" "+l.text)
		}
		write(name, out)
	}

	lines = nil
	for _, c := range clusters {
		for _, t := range r.toggles[c.ID] {
			run.Toggles = append(run.Toggles, check.Toggle{At: t, ClusterID: c.ID})
		}
	}
	slices.SortStableFunc(run.Toggles, func(a, b check.Toggle) int { return a.At.Compare(b.At) })
	for i := range run.Toggles {
		t := &run.Toggles[i]
		t.Source = at("toggles.log", i)
		lines = append(lines, fmt.Sprintf("%s %s", r.rel(t.At), t.ClusterID))
	}
	write("toggles.log", lines)

	lines = nil
	for i, a := range alarms {
		run.Alarms = append(run.Alarms, check.AlarmRow{At: a.at, Source: at("alarm_history.log", i), ClusterID: a.cluster, Condition: a.alarm, TransitionID: a.transition})
		lines = append(lines, fmt.Sprintf("%s %s %s %s", r.rel(a.at), a.cluster, a.alarm, a.transition))
	}
	write("alarm_history.log", lines)

	faults := slices.Clone(r.faults)
	slices.SortStableFunc(faults, func(a, b injected) int { return a.check.Start.Compare(b.check.Start) })
	lines = nil
	for _, f := range faults {
		run.Faults = append(run.Faults, f.check)
		lines = append(lines, fmt.Sprintf("%s … %s %s %v: %s", r.rel(f.check.Start), r.rel(f.check.End), f.plan.Kind, f.check.Targets, f.note))
	}
	write("faults.log", lines)
	if len(errs) > 0 {
		return run, fmt.Errorf("writing the run's records: %v", errs)
	}
	return run, nil
}

func processText(e check.ProcessEvent) string {
	switch e.Kind {
	case check.Started:
		return "started"
	case check.Exited:
		return fmt.Sprintf("exited with code %d", e.Code)
	case check.Killed:
		return "SIGKILL"
	case check.Stopped:
		return "SIGSTOP"
	case check.Continued:
		return "SIGCONT"
	}
	return fmt.Sprintf("kind %d", e.Kind)
}

// byTime returns a copy of xs sorted by time (stable).
func byTime[T any](xs []T, at func(T) time.Time) []T {
	out := slices.Clone(xs)
	slices.SortStableFunc(out, func(a, b T) int { return at(a).Compare(at(b)) })
	return out
}

// uniq are the keys of xs, sorted.
func uniq[T any](xs []T, key func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, key(x))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// figures are one ClusterId's numbers of a run.
type figures struct {
	faults      []Fault
	failovers   int
	losses      int
	blind       time.Duration // the client's longest gap between counter values
	blindAt     time.Time     // when that gap began
	acks        int
	writes      int
	unknown     int // writes from no node's path
	toggles     int
	alarmRows   int
	starts      int
	exitsByCode map[int]int
}

// figuresOf are cluster's figures between from (the clients' start) and
// to (the run's end).
func (r *recorder) figuresOf(c check.Cluster, from, to time.Time, alarms []alarmRow) figures {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := figures{exitsByCode: map[int]int{}}
	for _, x := range r.faults {
		if x.check.Targets == nil || slices.ContainsFunc(x.check.Targets, func(t string) bool { return slices.Contains(c.Nodes, t) }) {
			f.faults = append(f.faults, x.plan)
		}
	}
	for _, x := range r.failovers {
		if slices.Contains(c.Nodes, x.To) {
			f.failovers++
		}
	}
	for _, l := range r.losses {
		if l.cluster == c.ID {
			f.losses++
		}
	}
	prev := from
	for _, at := range append(slices.Clone(r.values[c.ID]), to) {
		if at.Before(from) {
			continue
		}
		if gap := at.Sub(prev); gap > f.blind {
			f.blind, f.blindAt = gap, prev
		}
		prev = at
	}
	for _, a := range r.acks {
		if slices.Contains(c.Nodes, a.Server) {
			f.acks++
		}
	}
	for _, w := range r.writes {
		if slices.Contains(c.Devices, w.Device) {
			f.writes++
		}
	}
	for _, d := range c.Devices {
		f.unknown += r.unknown[d]
	}
	f.toggles = len(r.toggles[c.ID])
	for _, a := range alarms {
		if a.cluster == c.ID {
			f.alarmRows++
		}
	}
	for _, e := range r.procs {
		if slices.Contains(c.Nodes, e.Node) {
			switch e.Kind {
			case check.Started:
				f.starts++
			case check.Exited:
				f.exitsByCode[e.Code]++
			}
		}
	}
	return f
}

// exitsText is "code 3 ×2, code 0 ×1".
func (f figures) exitsText() string {
	var codes []int
	for c := range f.exitsByCode {
		codes = append(codes, c)
	}
	slices.SortFunc(codes, func(a, b int) int { return cmp.Compare(a, b) })
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("code %d ×%d", c, f.exitsByCode[c]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
