package check

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Event is one line of a violation's timeline.
type Event struct {
	At    time.Time
	Actor string // node, device, "client", "run", "alarm_history" or "check"
	Text  string
}

// Timeline renders v.Events one a line, in time order: the time relative to
// the run's time zero, the actor, what happened, and in brackets the log
// it was read from. A line "check  violation: …" marks v.At. ServiceLevel
// samples appear only when a node's answer changes (the first in the
// window always), so a steady node is one line, not one per 50 ms.
func (v Violation) Timeline() string {
	tw, aw := 0, 0
	for _, e := range v.Events {
		tw, aw = max(tw, len(rel(v.Origin, e.At))), max(aw, len(e.Actor))
	}
	var b strings.Builder
	for _, e := range v.Events {
		fmt.Fprintf(&b, "%*s  %-*s  %s\n", tw, rel(v.Origin, e.At), aw, e.Actor, e.Text)
	}
	return b.String()
}

// timeline is v's events: the observations of its ClusterId within
// Params.Context of v.At (or of what its statement cites), the start and
// end of every fault touching it whose window meets that time, and the
// violation's own line, sorted by time.
func (c *checker) timeline(v Violation) []Event {
	from, to := v.At.Add(-c.p.Context), v.At.Add(c.p.Context)
	if !v.since.IsZero() && v.since.Before(from) {
		from = v.since.Add(-c.p.Context)
	}
	inWindow := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	var out []Event
	for _, f := range c.run.Faults {
		if f.touches(c.clusters[v.ClusterID]) && (span{f.Start, f.End}).overlaps(from, to) {
			out = append(out, f.events()...)
		}
	}
	out = append(out, c.observations(v.ClusterID, inWindow)...)
	out = append(out, c.levelChanges(v.ClusterID, inWindow)...)
	out = append(out, Event{v.At, "check", "violation: " + v.Invariant})
	slices.SortStableFunc(out, func(a, b Event) int { return a.At.Compare(b.At) })
	return out
}

// levelChanges are the ServiceLevel samples of clusterID's nodes in the
// window where a node's answer differs from its previous one in the
// window.
func (c *checker) levelChanges(clusterID string, inWindow func(time.Time) bool) []Event {
	var out []Event
	for _, node := range c.clusters[clusterID].Nodes {
		prev := ""
		for _, s := range c.levels[node] {
			text := "ServiceLevel no answer"
			if s.Answered {
				text = fmt.Sprintf("ServiceLevel %d", s.Level)
			}
			if inWindow(s.At) && text != prev {
				out = append(out, Event{s.At, node, withSource(text, s.Source)})
				prev = text
			}
		}
	}
	return out
}

// observations are the run's observations of clusterID other than
// ServiceLevel samples at the times inWindow admits. Device writes and
// acknowledgements come in streaks (a client writing every 200 ms): of
// each streak of one writer on one device the timeline keeps the first
// and the last and counts the rest between them (foldStreaks), so a
// minute of steady writing is three lines and a change of writer stands
// out; acknowledgements are folded per server (foldPerKey), since two
// clients writing through two servers interleave theirs.
func (c *checker) observations(clusterID string, inWindow func(time.Time) bool) []Event {
	var out []Event
	keep := func(at time.Time, clusters ...string) bool {
		return inWindow(at) && slices.Contains(clusters, clusterID)
	}
	add := func(at time.Time, actor, text, source string, clusters ...string) {
		if keep(at, clusters...) {
			out = append(out, Event{at, actor, withSource(text, source)})
		}
	}
	for _, e := range c.run.Processes {
		add(e.At, e.Node, e.Kind.text(e.Code), e.Source, c.nodeCluster[e.Node])
	}
	var writes, acks []streakEvent
	for _, w := range byTime(c.run.Writes, func(w DeviceWrite) time.Time { return w.At }) {
		if keep(w.At, c.deviceCluster[w.Device]) {
			writes = append(writes, streakEvent{Event{w.At, w.Device, withSource(fmt.Sprintf("%s=%s written by %s", w.Address, w.Value, w.Writer), w.Source)},
				w.Device + "\x00" + w.Writer, "writes by " + w.Writer})
		}
	}
	for _, a := range byTime(c.run.Acks, func(a AckedWrite) time.Time { return a.At }) {
		if keep(a.At, c.nodeCluster[a.Server]) {
			acks = append(acks, streakEvent{Event{a.At, "client", withSource(fmt.Sprintf("write %s=%s acknowledged by %s", a.NodeID, a.Value, a.Server), a.Source)},
				a.Server, "writes acknowledged by " + a.Server})
		}
	}
	out = append(out, foldStreaks(writes)...)
	out = append(out, foldPerKey(acks, ackGap)...)
	for _, f := range c.run.Failovers {
		add(f.At, "client", fmt.Sprintf("failover %s -> %s (%s)", f.From, f.To, f.Reason), f.Source, c.nodeCluster[f.From], c.nodeCluster[f.To])
	}
	for _, r := range c.run.Alarms {
		add(r.At, "alarm_history", fmt.Sprintf("%s transition %s", r.Condition, r.TransitionID), r.Source, r.ClusterID)
	}
	return out
}

// streakEvent is an event of a kind that comes in streaks: key tells the
// streaks apart, what names the events in the line that counts them.
type streakEvent struct {
	Event
	key, what string
}

// minStreak is the shortest streak foldStreaks folds.
const minStreak = 4

// ackGap is the longest pause within one server's streak of
// acknowledgements.
const ackGap = 2 * time.Second

// foldPerKey folds the events of each key apart (foldStreaks of each
// key's events), a pause longer than gap starting a new streak; the
// result is in no particular order.
func foldPerKey(evs []streakEvent, gap time.Duration) []Event {
	var out []Event
	for _, same := range groups(evs, func(e streakEvent) string { return e.key }) {
		var run []streakEvent
		for i, e := range same {
			if i > 0 && e.At.Sub(same[i-1].At) > gap {
				out = append(out, foldStreaks(run)...)
				run = nil
			}
			run = append(run, e)
		}
		out = append(out, foldStreaks(run)...)
	}
	return out
}

// foldStreaks keeps, of every run of at least minStreak consecutive events
// (in the given order) with one key, the first, a line "… N more WHAT" at
// the second's time, and the last; shorter runs stay as they are.
func foldStreaks(evs []streakEvent) []Event {
	var out []Event
	for i := 0; i < len(evs); {
		j := i
		for j+1 < len(evs) && evs[j+1].key == evs[i].key {
			j++
		}
		if j-i+1 < minStreak {
			for _, e := range evs[i : j+1] {
				out = append(out, e.Event)
			}
		} else {
			out = append(out, evs[i].Event,
				Event{evs[i+1].At, evs[i].Actor, fmt.Sprintf("… %d more %s", j-i-1, evs[i].what)},
				evs[j].Event)
		}
		i = j + 1
	}
	return out
}

// events are f's lines: its start, and its end when it has one.
func (f Fault) events() []Event {
	out := []Event{{f.Start, "run", f.label()}}
	if f.End.After(f.Start) {
		out = append(out, Event{f.End, "run", f.label() + " ends"})
	}
	return out
}

func withSource(text, source string) string {
	if source == "" {
		return text
	}
	return text + "  [" + source + "]"
}

// processText names the kinds of ProcessEvent.
var processText = map[ProcessKind]string{Started: "started", Exited: "exited", Killed: "killed", Stopped: "stopped", Continued: "continued"}

func (k ProcessKind) text(code int) string {
	if k == Exited {
		return fmt.Sprintf("exited %d", code)
	}
	return processText[k]
}

// faultText names the kinds of Fault.
var faultText = map[FaultKind]string{
	FaultKill: "SIGKILL", FaultStop: "SIGSTOP", FaultPartition: "partition",
	FaultConfigDBStop: "Config DB stopped", FaultConfigDBSlow: "Config DB slow", FaultDeviceCut: "device path cut",
	FaultManualFailover: "manual failover", FaultLeave: "graceful leave (SIGTERM)",
}

// label is how a timeline names f: "SIGKILL a", "partition a|b both ways, DROP".
func (f Fault) label() string {
	targets := strings.Join(f.Targets, ",")
	if f.Kind != FaultPartition || len(f.Targets) == 0 {
		return strings.TrimSpace(faultText[f.Kind] + " " + targets)
	}
	how, sep, rule := "both ways", "|", "DROP"
	if f.OneWay {
		how, sep = "one way", "->"
	}
	if f.Reset {
		rule = "RST"
	}
	return fmt.Sprintf("partition %s%s%s %s, %s", f.Targets[0], sep, strings.Join(f.Targets[1:], ","), how, rule)
}
