package subload

import (
	"fmt"
	"strings"
)

// Result is the outcome of one run, printed as one JSON line.
type Result struct {
	Impl  string `json:"impl,omitempty"`
	Items int    `json:"items"`
	OK    bool   `json:"ok"`
	// Error says why the run failed (OK false).
	Error string `json:"error,omitempty"`
	// Warnings are conditions that did not fail the run but qualify it.
	Warnings []string `json:"warnings,omitempty"`

	InFlight          int     `json:"in_flight"`
	PublishingMs      float64 `json:"publishing_interval_ms"`
	SamplingMs        float64 `json:"sampling_interval_ms"`
	SetupS            float64 `json:"setup_s"` // connect + subscription + items
	WindowS           float64 `json:"window_s"`
	Notifications     uint64  `json:"notifications"`
	NotificationsPerS float64 `json:"notifications_per_s"`
	ExpectedPerS      float64 `json:"expected_per_s"` // items per sampling interval
	ItemsCovered      int     `json:"items_covered"`  // items with at least one notification in the window
	AgeP50Ms          float64 `json:"age_p50_ms"`
	AgeP99Ms          float64 `json:"age_p99_ms"`
	AgeMaxMs          float64 `json:"age_max_ms"`
	AgeMeanMs         float64 `json:"age_mean_ms"`
	NoSourceTimestamp uint64  `json:"no_source_timestamp"` // notifications without one (no age)
	NegativeAges      uint64  `json:"negative_ages"`
	BadValues         uint64  `json:"bad_values"` // notifications with a non-Good status
	NotificationMsgs  uint64  `json:"notification_messages"`
	Keepalives        uint64  `json:"keepalives"`
	SequenceGaps      uint64  `json:"sequence_gaps"`
	PublishFaults     uint64  `json:"publish_faults"`
	PublishTimeouts   uint64  `json:"publish_timeouts"`
	BadAckResults     uint64  `json:"bad_ack_results"`
	BadAckStatus      string  `json:"bad_ack_status,omitempty"` // the first non-Good one
	// SendP50Ms and SendP99Ms are percentiles, over notification messages,
	// of receipt time − the message's PublishTime: the part of the value
	// age spent encoding, sending and receiving.
	SendP50Ms float64 `json:"send_p50_ms"`
	SendP99Ms float64 `json:"send_p99_ms"`
	// FirstChunkP50Ms and FirstChunkP99Ms: the same up to the first chunk
	// of the message (a server that encodes a whole message before writing
	// it spends the difference to SendP*Ms only on the wire).
	FirstChunkP50Ms     float64 `json:"first_chunk_p50_ms"`
	FirstChunkP99Ms     float64 `json:"first_chunk_p99_ms"`
	ServerRoundsPerS    float64 `json:"server_rounds_per_s,omitempty"` // from the Rounds counter
	ServerPID           int     `json:"server_pid,omitempty"`
	ServerCPUPct        float64 `json:"server_cpu_pct"`
	NotificationsPerCPU float64 `json:"notifications_per_cpu_s"`
	ServerRSSStartMB    float64 `json:"server_rss_start_mb"` // before the client connected
	ServerRSSMaxMB      float64 `json:"server_rss_max_mb"`
	ServerRSSMeanMB     float64 `json:"server_rss_mean_mb"`
	ClientCPUPct        float64 `json:"client_cpu_pct"`
}

// Human is the result as one line for people.
func (r Result) Human() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s items=%d ", orDash(r.Impl), r.Items)
	if !r.OK {
		fmt.Fprintf(&b, "FAILED: %s", r.Error)
		if r.WindowS == 0 {
			return b.String()
		}
		b.WriteString("; ")
	}
	fmt.Fprintf(&b, "%.0f notifications/s (expected %.0f, %d/%d items seen) over %.1fs; age p50 %.1f ms p99 %.1f ms max %.1f ms (PublishTime to first chunk p50 %.1f p99 %.1f, to last chunk p50 %.1f p99 %.1f ms); ",
		r.NotificationsPerS, r.ExpectedPerS, r.ItemsCovered, r.Items, r.WindowS, r.AgeP50Ms, r.AgeP99Ms, r.AgeMaxMs,
		r.FirstChunkP50Ms, r.FirstChunkP99Ms, r.SendP50Ms, r.SendP99Ms)
	fmt.Fprintf(&b, "server CPU %.1f%%, %.0f notifications/CPU-s, RSS max %.1f MB (start %.1f); client CPU %.1f%%",
		r.ServerCPUPct, r.NotificationsPerCPU, r.ServerRSSMaxMB, r.ServerRSSStartMB, r.ClientCPUPct)
	if r.ServerRoundsPerS > 0 {
		fmt.Fprintf(&b, "; server update rounds %.2f/s", r.ServerRoundsPerS)
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(&b, "; warnings: %s", strings.Join(r.Warnings, "; "))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
