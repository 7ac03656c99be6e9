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
// whether otopcua met it. Repeated runs of one implementation and item
// count are averaged (rate, p99 age, notifications per CPU-second); a cell
// with a failed run counts as not met.
func Check(results []subload.Result, g Goals) []string {
	cells := aggregate(results)
	var out []string
	if o, ok := cells[key{"otopcua", g.LargeItems}]; ok {
		met := o.ok && o.rate >= g.MinRate && o.p99 <= g.MaxP99Ms
		out = append(out, fmt.Sprintf("%s otopcua at %d items: %s notifications/s (goal ≥ %s), p99 age %.1f ms (goal ≤ %.0f ms)%s",
			mark(met), g.LargeItems, thousands(o.rate), thousands(g.MinRate), o.p99, g.MaxP99Ms, o.suffix()))
	}
	for _, k := range order(results) {
		if k.impl != "otopcua" {
			continue
		}
		o := cells[k]
		gp, ok := cells[key{"gopcua", k.items}]
		if !ok || !gp.ok || gp.perCPU == 0 {
			continue
		}
		if !o.ok {
			out = append(out, fmt.Sprintf("NOT MET otopcua at %d items: a run failed (goal ≥ %.0f× gopcua's notifications per CPU-second)", k.items, g.EfficiencyFactor))
			continue
		}
		ratio := o.perCPU / gp.perCPU
		out = append(out, fmt.Sprintf("%s otopcua at %d items: %.2f× gopcua's notifications per CPU-second (goal ≥ %.0f×)%s",
			mark(ratio >= g.EfficiencyFactor), k.items, ratio, g.EfficiencyFactor, o.suffix()))
	}
	return out
}

type key struct {
	impl  string
	items int
}

// cellStats are the means over the runs of one implementation and item
// count; ok is false when any of them failed.
type cellStats struct {
	runs              int
	ok                bool
	rate, p99, perCPU float64
}

func (c cellStats) suffix() string {
	if c.runs > 1 {
		return fmt.Sprintf(" (mean of %d runs)", c.runs)
	}
	return ""
}

func aggregate(results []subload.Result) map[key]cellStats {
	cells := map[key]cellStats{}
	for _, r := range results {
		k := key{r.Impl, r.Items}
		c, seen := cells[k]
		if !seen {
			c.ok = true
		}
		c.runs++
		c.ok = c.ok && r.OK
		c.rate += r.NotificationsPerS
		c.p99 += r.AgeP99Ms
		c.perCPU += r.NotificationsPerCPU
		cells[k] = c
	}
	for k, c := range cells {
		n := float64(c.runs)
		c.rate, c.p99, c.perCPU = c.rate/n, c.p99/n, c.perCPU/n
		cells[k] = c
	}
	return cells
}

// order lists the distinct cells of results in first-seen order.
func order(results []subload.Result) []key {
	var ks []key
	seen := map[key]bool{}
	for _, r := range results {
		k := key{r.Impl, r.Items}
		if !seen[k] {
			seen[k] = true
			ks = append(ks, k)
		}
	}
	return ks
}

func mark(ok bool) string {
	if ok {
		return "MET"
	}
	return "NOT MET"
}
