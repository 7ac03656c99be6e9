package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Goals of the issue.
const (
	goalCPURatio = 1.15 // Primary CPU mirrored / Warm
)

// Comparison is one shape, Warm against HotAndMirrored.
type Comparison struct {
	Shape string `json:"shape"`
	Items int    `json:"mirrored_items"` // sessions × items
	// CPURatio: Primary CPU mirrored / Warm (goal ≤ 1.15).
	CPURatio float64 `json:"primary_cpu_ratio"`
	// Per mirrored item on the Secondary: RSS and Go heap in use, mirrored
	// − Warm, bytes.
	RSSPerItemB  float64 `json:"secondary_rss_per_item_bytes"`
	HeapPerItemB float64 `json:"secondary_heap_per_item_bytes"`
	// AgeP99DeltaMs: value age p99 mirrored − Warm.
	AgeP99DeltaMs float64 `json:"age_p99_added_ms"`
	Warm          Result  `json:"warm"`
	Mirrored      Result  `json:"mirrored"`
}

// Compare pairs the two modes of a shape.
func Compare(warm, mirrored Result) Comparison {
	n := float64(mirrored.Sessions * mirrored.Items)
	c := Comparison{Shape: mirrored.Shape, Items: mirrored.Sessions * mirrored.Items, Warm: warm, Mirrored: mirrored,
		RSSPerItemB:   (mirrored.Second.RSSMiB - warm.Second.RSSMiB) * (1 << 20) / n,
		HeapPerItemB:  (mirrored.Second.HeapMiB - warm.Second.HeapMiB) * (1 << 20) / n,
		AgeP99DeltaMs: mirrored.Client.AgeP99Ms - warm.Client.AgeP99Ms}
	if warm.Primary.CPUPct > 0 {
		c.CPURatio = mirrored.Primary.CPUPct / warm.Primary.CPUPct
	}
	return c
}

// Table prints one Markdown table row per mode and shape, then the
// comparison of each shape.
func Table(w io.Writer, cs []Comparison) {
	fmt.Fprintln(w, "| shape | mode | Primary CPU % | Secondary CPU % | Secondary RSS MiB | Secondary heap MiB | notifications/s | value age p50 / p99 ms | mirror lag p50 / p99 ms | dropped | ack time-outs | takeovers | replica sessions | harness / other CPU % |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, c := range cs {
		for _, r := range []Result{c.Warm, c.Mirrored} {
			if r.Mode == "" {
				continue // a mode left out with -modes
			}
			lag, dropped, acks, takeovers, replica := "–", "–", "–", "–", "–"
			if r.Mode == modeMirrored {
				lag = fmt.Sprintf("%.2f / %.2f (≤ %g / ≤ %g)", r.Mirror.LagP50Ms, r.Mirror.LagP99Ms, r.Mirror.LagP50LeMs, r.Mirror.LagP99LeMs)
				dropped, takeovers = fmt.Sprintf("%.0f", r.Mirror.Dropped), fmt.Sprintf("%.0f", r.Mirror.Takeovers)
				acks = fmt.Sprintf("%.0f", r.Mirror.AckTimeouts)
				replica = fmt.Sprintf("%.0f of %d", r.Mirror.ReplicaSessions, r.Sessions)
			}
			shape := r.Shape
			if r.Run > 1 || len(cs) > 1 && cs[len(cs)-1].Shape == cs[0].Shape {
				shape = fmt.Sprintf("%s #%d", r.Shape, r.Run)
			}
			fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %.1f | %.1f | %.0f | %.1f / %.1f | %s | %s | %s | %s | %s | %.0f / %.0f |\n",
				shape, r.Mode, r.Primary.CPUPct, r.Second.CPUPct, r.Second.RSSMiB, r.Second.HeapMiB, r.Client.PerS,
				r.Client.AgeP50Ms, r.Client.AgeP99Ms, lag, dropped, acks, takeovers, replica, r.HarnessCPUPct, r.OtherCPUPct)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| shape | mirrored items | Primary CPU mirrored / Warm (goal ≤ 1.15) | Secondary RSS per mirrored item | Secondary heap per mirrored item | value age p99 added |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, c := range cs {
		fmt.Fprintf(w, "| %s | %d | %.2f (%.1f %% / %.1f %%) | %.0f B | %.0f B | %+.1f ms |\n", c.Shape, c.Items, c.CPURatio,
			c.Mirrored.Primary.CPUPct, c.Warm.Primary.CPUPct, c.RSSPerItemB, c.HeapPerItemB, c.AgeP99DeltaMs)
	}
}

// Problems lists what a run shows wrong beside the goals: Publish faults,
// refused acknowledgements, dropped sessions, takeovers, a Secondary that
// does not hold every session, no notification measured.
func Problems(cs []Comparison) []string {
	var out []string
	for _, c := range cs {
		for _, r := range []Result{c.Warm, c.Mirrored} {
			tag := r.Shape + " " + r.Mode
			if r.Client.Notifications == 0 {
				out = append(out, tag+": no notification in the window")
			}
			if r.Client.Faults > 0 {
				out = append(out, fmt.Sprintf("%s: %d Publish faults (first: %s)", tag, r.Client.Faults, r.Client.FirstFault))
			}
			if r.Client.BadAcks > 0 {
				out = append(out, fmt.Sprintf("%s: %d acknowledgements answered non-Good", tag, r.Client.BadAcks))
			}
			if r.Mode != modeMirrored {
				continue
			}
			for key, n := range r.Mirror.ByReason {
				switch _, reason, _ := strings.Cut(key, " "); reason {
				case "inbox-full", "invalid-batch", "refused", "id-conflict", "invalid-session-id":
					out = append(out, fmt.Sprintf("%s: otopcua_mirror_dropped_total %s %.0f", tag, key, n))
				}
			}
			if r.Mirror.Dropped > 0 {
				out = append(out, fmt.Sprintf("%s: %.0f sessions dropped to Warm (%v)", tag, r.Mirror.Dropped, r.Mirror.ByReason))
			}
			if r.Mirror.Takeovers > 0 {
				out = append(out, fmt.Sprintf("%s: %.0f takeovers", tag, r.Mirror.Takeovers))
			}
			if int(r.Mirror.ReplicaSessions) != r.Sessions || !r.Mirror.Ready {
				out = append(out, fmt.Sprintf("%s: the Secondary holds %.0f of %d sessions (ready %v)", tag, r.Mirror.ReplicaSessions, r.Sessions, r.Mirror.Ready))
			}
			if r.Mirror.LagCount == 0 {
				out = append(out, tag+": no mirror lag observed in the window")
			}
		}
	}
	return out
}

// JSONLines prints one JSON object per shape.
func JSONLines(w io.Writer, machine string, cs []Comparison) {
	for _, c := range cs {
		b, err := json.Marshal(struct {
			Machine string `json:"machine"`
			Comparison
		}{machine, c})
		if err != nil {
			panic(fmt.Sprintf("mirror: a result does not marshal: %v", err))
		}
		fmt.Fprintln(w, string(b))
	}
}

// Summary prints, per shape, the medians over its runs of the comparison
// figures.
func Summary(w io.Writer, cs []Comparison) {
	fmt.Fprintln(w, "| shape | runs | Primary CPU mirrored / Warm, median (each) | Secondary RSS per item, median | heap per item, median | value age p99 Warm / mirrored, medians | mirror lag p99, median |")
	fmt.Fprintln(w, "| --- | ---: | --- | ---: | ---: | --- | ---: |")
	var shapes []string
	for _, c := range cs {
		if !slices.Contains(shapes, c.Shape) {
			shapes = append(shapes, c.Shape)
		}
	}
	for _, sh := range shapes {
		var ratio, rss, heap, ageW, ageM, lag []float64
		each := []string{}
		for _, c := range cs {
			if c.Shape != sh {
				continue
			}
			ratio, rss, heap = append(ratio, c.CPURatio), append(rss, c.RSSPerItemB), append(heap, c.HeapPerItemB)
			ageW, ageM, lag = append(ageW, c.Warm.Client.AgeP99Ms), append(ageM, c.Mirrored.Client.AgeP99Ms), append(lag, c.Mirrored.Mirror.LagP99Ms)
			each = append(each, fmt.Sprintf("%.2f", c.CPURatio))
		}
		fmt.Fprintf(w, "| %s | %d | %.2f (%s) | %.0f B | %.0f B | %.1f / %.1f ms | %.1f ms |\n", sh, len(ratio), median(ratio),
			strings.Join(each, ", "), median(rss), median(heap), median(ageW), median(ageM), median(lag))
	}
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
