package client

import (
	"fmt"
	"strings"

	"github.com/gopcua/opcua/ua"
)

// Mode is how the client uses the redundant set (OPC UA Part 4
// §6.6.2.4.5, client failover behaviour).
type Mode string

const (
	// ModeAuto chooses from the active server's
	// ServerRedundancy.RedundancySupport (ModeFor).
	ModeAuto Mode = "auto"
	// ModeWarm: the subscriptions live on the active server only and are
	// transferred or re-created on the next one after a failover.
	ModeWarm Mode = "warm"
	// ModeHotA: the subscriptions exist on every reachable server; the
	// backups' items sample into a queue (MonitoringMode Sampling) and are
	// switched to Reporting at a failover, so their queued values arrive.
	ModeHotA Mode = "hot-a"
	// ModeHotB: the subscriptions exist and report on every reachable
	// server; the client de-duplicates (Dedup).
	ModeHotB Mode = "hot-b"
	// ModeMirrored: one session on the active server; after a loss the
	// same session is activated on a new secure channel to the next
	// server (HotAndMirrored, Transparent) and the unacknowledged
	// messages are republished.
	ModeMirrored Mode = "mirrored"
)

// Modes are the accepted values of Options.Mode, in the order the CLI
// lists them.
var Modes = []Mode{ModeAuto, ModeWarm, ModeHotA, ModeHotB, ModeMirrored}

// ParseMode parses a mode name (case-insensitive); "" is ModeAuto.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeAuto, nil
	}
	for _, m := range Modes {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%q is not a client mode; accepted: %s", s, ModeList())
}

// ModeList is the accepted modes, "auto, warm, hot-a, hot-b, mirrored".
func ModeList() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// hot reports whether m places the subscriptions on every server.
func (m Mode) hot() bool { return m == ModeHotA || m == ModeHotB }

// ModeFor is the mode ModeAuto chooses for a server's RedundancySupport
// (Part 5 §12.5):
//
//	HotAndMirrored (5), Transparent (4)  → mirrored
//	Hot (3)                              → hot-a
//	None, Cold, Warm, unknown            → warm
func ModeFor(support ua.RedundancySupport) Mode {
	switch support {
	case ua.RedundancySupportHotAndMirrored, ua.RedundancySupportTransparent:
		return ModeMirrored
	case ua.RedundancySupportHot:
		return ModeHotA
	}
	return ModeWarm
}
