package main

import (
	"fmt"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
)

// rssEvery is how often a window reads the host's RSS.
const rssEvery = 250 * time.Millisecond

// Window is what the host process used over a stretch of time.
type Window struct {
	Seconds float64 `json:"s"`
	// CPUPct is utime+stime over the window in % of one core (200 = both
	// cores of a 2-core machine).
	CPUPct float64 `json:"cpu_pct"`
	// RSSMeanMiB and RSSMaxMiB are over the samples (VmRSS every 250 ms).
	RSSMeanMiB float64 `json:"rss_mean_mib"`
	RSSMaxMiB  float64 `json:"rss_max_mib"`
}

// watchHost reads pid's CPU time at both ends of d and its RSS every
// rssEvery meanwhile; the benchmark's goroutines keep working.
func watchHost(pid int, d time.Duration) (Window, error) {
	cpu0, err := measure.CPUTime(pid)
	if err != nil {
		return Window{}, err
	}
	start := time.Now()
	var sum, peak uint64
	var n int
	tick := time.NewTicker(rssEvery)
	defer tick.Stop()
	for now := start; now.Sub(start) < d; now = <-tick.C {
		rss, err := measure.RSS(pid)
		if err != nil {
			return Window{}, err
		}
		sum, n, peak = sum+rss, n+1, max(peak, rss)
	}
	cpu1, err := measure.CPUTime(pid)
	if err != nil {
		return Window{}, err
	}
	wall := time.Since(start)
	return Window{Seconds: wall.Seconds(), CPUPct: measure.CPUPercent(cpu1-cpu0, wall),
		RSSMeanMiB: mib(sum / uint64(n)), RSSMaxMiB: mib(peak)}, nil
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// ResourceFigures are the host's CPU and memory in the three windows of
// a case, and the increase from the first to the last per 10,000 tags.
type ResourceFigures struct {
	Tags int `json:"tags"`
	// Before: the host ready, no deployment. Polling: the deployment
	// applied and polled, no subscription. Case: during the latency
	// window (polling, the subscription, the changes).
	Before  Window `json:"before_deployment"`
	Polling Window `json:"polling_only"`
	Case    Window `json:"during_latency"`
	// CPUPer10k and RSSPer10kMiB are (Case − Before) × 10,000 / Tags; the
	// polling-only increase likewise.
	CPUPer10kPct        float64 `json:"cpu_per_10k_tags_pct"`
	RSSPer10kMiB        float64 `json:"rss_per_10k_tags_mib"`
	PollingCPUPer10kPct float64 `json:"polling_cpu_per_10k_tags_pct"`
	PollingRSSPer10kMiB float64 `json:"polling_rss_per_10k_tags_mib"`
}

// perTenK fills the per-10,000-tag figures from the windows.
func (r *ResourceFigures) perTenK() {
	if r.Tags <= 0 {
		panic(fmt.Sprintf("dataplane: resource figures of %d tags", r.Tags))
	}
	k := 10000 / float64(r.Tags)
	r.CPUPer10kPct = (r.Case.CPUPct - r.Before.CPUPct) * k
	r.RSSPer10kMiB = (r.Case.RSSMeanMiB - r.Before.RSSMeanMiB) * k
	r.PollingCPUPer10kPct = (r.Polling.CPUPct - r.Before.CPUPct) * k
	r.PollingRSSPer10kMiB = (r.Polling.RSSMeanMiB - r.Before.RSSMeanMiB) * k
}
