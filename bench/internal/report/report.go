// Package report renders subscription benchmark results as a Markdown
// table and checks them against otopcua's goals.
package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/otopcua/otopcua/bench/internal/subload"
)

// Table writes results as a Markdown table, one row per result, in order.
func Table(w io.Writer, results []subload.Result) {
	fmt.Fprintln(w, "| impl | items | notifications/s | p50 age ms | p99 age ms | server CPU % | notifications per CPU-s | RSS MB | client CPU % | notes |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range results {
		if !r.OK && r.WindowS == 0 {
			fmt.Fprintf(w, "| %s | %d | – | – | – | – | – | – | – | FAILED: %s |\n", r.Impl, r.Items, cell(r.Error))
			continue
		}
		notes := r.Warnings
		if !r.OK {
			notes = append([]string{"FAILED: " + r.Error}, notes...)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.1f | %.1f | %.1f | %s | %.1f | %.1f | %s |\n",
			r.Impl, r.Items, thousands(r.NotificationsPerS), r.AgeP50Ms, r.AgeP99Ms,
			r.ServerCPUPct, thousands(r.NotificationsPerCPU), r.ServerRSSMaxMB, r.ClientCPUPct,
			cell(strings.Join(notes, "; ")))
	}
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

// thousands formats v rounded to an integer with thin-space-free comma
// grouping ("1,234,567").
func thousands(v float64) string {
	n := int64(v + 0.5)
	if v < 0 {
		n = int64(v - 0.5)
	}
	neg := n < 0
	if neg {
		n = -n
	}
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Goals are otopcua's targets for this benchmark.
type Goals struct {
	// At LargeItems items otopcua must deliver at least MinRate
	// notifications/s with a p99 age of at most MaxP99Ms.
	LargeItems int
	MinRate    float64
	MaxP99Ms   float64
	// At every item count otopcua must reach EfficiencyFactor × gopcua's
	// notifications per CPU-second.
	EfficiencyFactor float64
}

// DefaultGoals are the goals of the project's design.
var DefaultGoals = Goals{LargeItems: 50000, MinRate: 300000, MaxP99Ms: 250, EfficiencyFactor: 2}

// Check returns one line per goal that the results can decide, saying
// whether otopcua met it. Results of failed runs count as not met.
func Check(results []subload.Result, g Goals) []string {
	byKey := map[string]subload.Result{}
	var counts []int
	for _, r := range results {
		k := fmt.Sprintf("%s/%d", r.Impl, r.Items)
		if _, seen := byKey[k]; !seen && r.Impl == "otopcua" {
			counts = append(counts, r.Items)
		}
		byKey[k] = r
	}
	var out []string
	if o, ok := byKey[fmt.Sprintf("otopcua/%d", g.LargeItems)]; ok {
		met := o.OK && o.NotificationsPerS >= g.MinRate && o.AgeP99Ms <= g.MaxP99Ms
		out = append(out, fmt.Sprintf("%s otopcua at %d items: %s notifications/s (goal ≥ %s), p99 age %.1f ms (goal ≤ %.0f ms)",
			mark(met), g.LargeItems, thousands(o.NotificationsPerS), thousands(g.MinRate), o.AgeP99Ms, g.MaxP99Ms))
	}
	for _, n := range counts {
		o := byKey[fmt.Sprintf("otopcua/%d", n)]
		gp, ok := byKey[fmt.Sprintf("gopcua/%d", n)]
		if !ok || !gp.OK || gp.NotificationsPerCPU == 0 {
			continue
		}
		if !o.OK {
			out = append(out, fmt.Sprintf("NOT MET otopcua at %d items: the run failed (goal ≥ %.0f× gopcua's notifications per CPU-second)", n, g.EfficiencyFactor))
			continue
		}
		ratio := o.NotificationsPerCPU / gp.NotificationsPerCPU
		met := o.OK && ratio >= g.EfficiencyFactor
		out = append(out, fmt.Sprintf("%s otopcua at %d items: %.2f× gopcua's notifications per CPU-second (goal ≥ %.0f×)",
			mark(met), n, ratio, g.EfficiencyFactor))
	}
	return out
}

func mark(ok bool) string {
	if ok {
		return "MET"
	}
	return "NOT MET"
}
