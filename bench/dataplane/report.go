package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Goals are the limits.
type Goals struct {
	// LatencyP99: device change → client notification.
	LatencyP99 time.Duration
	// WriteP99: client Write → the device's register holds the value.
	WriteP99 time.Duration
}

// DefaultGoals are the goals of the data-plane issue.
var DefaultGoals = Goals{LatencyP99: 250 * time.Millisecond, WriteP99: 20 * time.Millisecond}

// Check is one goal of one case, met or not.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Verdict checks every case against g: the latency p99, no change of the
// window lost (every change notified, none superseded before it was), the
// write p99, every write Good and landed. A part without measurements
// fails its check.
func Verdict(results []Result, g Goals) []Check {
	var out []Check
	for _, r := range results {
		lt, w := r.Latency, r.Write
		out = append(out,
			Check{Name: "latency p99 " + r.Case, OK: lt.Notified > 0 && lt.P99Ms <= msOf(g.LatencyP99),
				Detail: fmt.Sprintf("device change → client notification p99 %.1f ms over %d changes (goal ≤ %.0f ms)", lt.P99Ms, lt.Notified, msOf(g.LatencyP99))},
			Check{Name: "changes notified " + r.Case, OK: lt.Changes > 0 && lt.Notified == lt.Changes,
				Detail: fmt.Sprintf("%d of %d changes notified, %d changed again before their notification, %d never notified", lt.Notified, lt.Changes, lt.Superseded, lt.Unnotified)},
			Check{Name: "write p99 " + r.Case, OK: w.Landed > 0 && w.RegisterP99Ms <= msOf(g.WriteP99),
				Detail: fmt.Sprintf("client Write → register changed p99 %.2f ms (Write response p99 %.2f ms) over %d writes (goal ≤ %.0f ms)", w.RegisterP99Ms, w.ResponseP99Ms, w.Landed, msOf(g.WriteP99))},
			Check{Name: "writes landed " + r.Case, OK: w.Writes > 0 && w.Good == w.Writes && w.Landed == w.Writes,
				Detail: writesDetail(w)},
		)
	}
	return out
}

func writesDetail(w WriteFigures) string {
	s := fmt.Sprintf("%d of %d writes answered Good, %d landed in the register", w.Good, w.Writes, w.Landed)
	if w.First != "" {
		s += "; first failure: " + w.First
	}
	return s
}

// Failed returns the checks that failed.
func Failed(cs []Check) []Check {
	var out []Check
	for _, c := range cs {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// PrintChecks writes one MET / NOT MET line per check.
func PrintChecks(w io.Writer, cs []Check) {
	for _, c := range cs {
		mark := "MET"
		if !c.OK {
			mark = "NOT MET"
		}
		fmt.Fprintf(w, "- %s %s: %s\n", mark, c.Name, c.Detail)
	}
}

// Tables writes the Markdown table of each part.
func Tables(w io.Writer, rs []Result) {
	fmt.Fprintln(w, "Device change → client notification:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | tags | devices | poll / publishing / sampling ms | changes/s | notified | p50 ms | p90 ms | p99 ms | max ms | change → read p50 / p99 ms | read → receipt p50 / p99 ms | notes |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range rs {
		l := r.Latency
		fmt.Fprintf(w, "| %s | %d | %d | %.0f / %.0f / %.0f | %.0f | %d of %d | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f | %.1f / %.1f | %s |\n",
			r.Case, r.Tags, r.Devices, r.PollMs, r.PubMs, r.SampMs, l.ChangesPerS, l.Notified, l.Changes,
			l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs, l.ToSourceP50Ms, l.ToSourceP99Ms, l.SourceToRcvP50Ms, l.SourceToRcvP99Ms, latencyNotes(l))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Client Write → device register, confirmed mode:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | writes | Good / landed | register p50 ms | register p99 ms | register max ms | response p50 ms | response p99 ms | response max ms |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rs {
		x := r.Write
		fmt.Fprintf(w, "| %s | %d | %d / %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r.Case, x.Writes, x.Good, x.Landed,
			x.RegisterP50Ms, x.RegisterP99Ms, x.RegisterMaxMs, x.ResponseP50Ms, x.ResponseP99Ms, x.ResponseMaxMs)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Host CPU (% of one core) and RSS:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| case | tags | CPU % before deployment | CPU % polling only | CPU % during latency | CPU % per 10k tags | RSS MiB before | RSS MiB polling only | RSS MiB during latency (mean / max) | RSS MiB per 10k tags |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rs {
		x := r.Resources
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f | %.1f |\n", r.Case, x.Tags,
			x.Before.CPUPct, x.Polling.CPUPct, x.Case.CPUPct, x.CPUPer10kPct,
			x.Before.RSSMeanMiB, x.Polling.RSSMeanMiB, x.Case.RSSMeanMiB, x.Case.RSSMaxMiB, x.RSSPer10kMiB)
	}
}

// latencyNotes lists what went wrong in the latency part, if anything.
func latencyNotes(l LatencyFigures) string {
	var n []string
	if l.Superseded > 0 {
		n = append(n, fmt.Sprintf("%d changed again before notified", l.Superseded))
	}
	if l.Unnotified > 0 {
		n = append(n, fmt.Sprintf("%d never notified", l.Unnotified))
	}
	if l.Bad > 0 {
		n = append(n, fmt.Sprintf("%d Bad notifications", l.Bad))
	}
	if l.Faults > 0 {
		n = append(n, fmt.Sprintf("%d failed Publish (first: %s)", l.Faults, l.FirstFault))
	}
	if l.Negative > 0 {
		n = append(n, fmt.Sprintf("%d negative durations", l.Negative))
	}
	return strings.Join(n, "; ")
}

// Line is one JSON line of the output: one part of one case.
type Line struct {
	Bench     string           `json:"bench"`
	Part      string           `json:"part"`
	Case      string           `json:"case"`
	Machine   string           `json:"machine"`
	Tags      int              `json:"tags"`
	Devices   int              `json:"devices"`
	PollMs    float64          `json:"poll_ms"`
	PubMs     float64          `json:"publishing_ms"`
	SampMs    float64          `json:"sampling_ms"`
	PID       int              `json:"pid"`
	Latency   *LatencyFigures  `json:"latency,omitempty"`
	Write     *WriteFigures    `json:"write,omitempty"`
	Resources *ResourceFigures `json:"resources,omitempty"`
}

// JSONLines writes the latency, write and resources lines of every case.
func JSONLines(w io.Writer, machine string, rs []Result) {
	for _, r := range rs {
		base := Line{Bench: "dataplane", Case: r.Case, Machine: machine, Tags: r.Tags, Devices: r.Devices,
			PollMs: r.PollMs, PubMs: r.PubMs, SampMs: r.SampMs, PID: r.PID}
		lat, wr, res := base, base, base
		lat.Part, lat.Latency = "latency", &r.Latency
		wr.Part, wr.Write = "write", &r.Write
		res.Part, res.Resources = "resources", &r.Resources
		for _, l := range []Line{lat, wr, res} {
			b, err := json.Marshal(l)
			if err != nil {
				panic(fmt.Sprintf("dataplane: a result line does not marshal: %v", err))
			}
			fmt.Fprintln(w, string(b))
		}
	}
}
