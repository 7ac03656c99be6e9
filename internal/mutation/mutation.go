// Package mutation holds otopcua's test-only mutations: switches that
// break one guarantee of the redundant pair on purpose, so that the chaos
// run's independent checker (tests/chaos) can be shown to catch each
// broken guarantee. A node takes them from OTOPCUA_TEST_MUTATION (Env, a
// comma-separated list of names) and only together with
// OTOPCUA_TEST_HOOKS=1; without the test hooks it refuses to start.
// Never set either in production.
//
// The mutations, each with the invariant of tests/chaos/check it breaks:
//
//   - secondary-writes: a node that the gate names Secondary services a
//     client's write itself instead of forwarding it to the Primary
//     (two-writers);
//   - secondary-claims-primary: a node whose ServiceLevel is 240 shows
//     250 (two-primaries);
//   - ack-without-write: every AckWithoutWriteEvery-th device write the
//     node services is acknowledged as Good without reaching the device
//     (ack-landed-once);
//   - historian-duplicates: the node drops alarm_history's idempotency key
//     (configdb.WithoutAlarmHistoryKey; PostgreSQL only), so a transition
//     drained twice — the survivor of a failover drains what its queue
//     still holds — is stored twice (alarm-once).
package mutation

import (
	"fmt"
	"strings"
	"time"
)

// Env is the environment variable `otopcua host` reads the mutations from.
const Env = "OTOPCUA_TEST_MUTATION"

// AckWithoutWriteEvery is how often ack-without-write skips a write.
const AckWithoutWriteEvery = 5

// StuckLowLevel is what secondary-stuck-low shows instead of 240.
const StuckLowLevel = 199

// RejoinLateBy is how long rejoin-late holds back a restarted node.
const RejoinLateBy = 45 * time.Second

// RejoinMarker is the file rejoin-late leaves next to the LocalDb at path
// to know a later start is a restart.
func RejoinMarker(localDbPath string) string { return localDbPath + ".started" }

// Names of the mutations.
const (
	SecondaryWrites        = "secondary-writes"
	SecondaryClaimsPrimary = "secondary-claims-primary"
	AckWithoutWrite        = "ack-without-write"
	HistorianDuplicates    = "historian-duplicates"
	SecondaryStuckLow      = "secondary-stuck-low"
	HistorianSilent        = "historian-silent"
	RejoinLate             = "rejoin-late"
)

// Names lists every mutation, in the order of the package doc.
func Names() []string {
	return []string{SecondaryWrites, SecondaryClaimsPrimary, AckWithoutWrite, HistorianDuplicates, SecondaryStuckLow, HistorianSilent, RejoinLate}
}

// Set is the mutations a node runs with; the zero Set is none.
type Set struct {
	SecondaryWrites        bool
	SecondaryClaimsPrimary bool
	AckWithoutWrite        bool
	HistorianDuplicates    bool
	SecondaryStuckLow      bool
	HistorianSilent        bool
	RejoinLate             bool
}

// Parse reads a comma-separated list of names ("" is none).
func Parse(s string) (Set, error) {
	var set Set
	for name := range strings.SplitSeq(s, ",") {
		switch strings.TrimSpace(name) {
		case "":
		case SecondaryWrites:
			set.SecondaryWrites = true
		case SecondaryClaimsPrimary:
			set.SecondaryClaimsPrimary = true
		case AckWithoutWrite:
			set.AckWithoutWrite = true
		case HistorianDuplicates:
			set.HistorianDuplicates = true
		case SecondaryStuckLow:
			set.SecondaryStuckLow = true
		case HistorianSilent:
			set.HistorianSilent = true
		case RejoinLate:
			set.RejoinLate = true
		default:
			return Set{}, fmt.Errorf("%s=%q: unknown mutation %q; accepted: %s, comma-separated", Env, s, strings.TrimSpace(name), strings.Join(Names(), ", "))
		}
	}
	return set, nil
}

// Any reports whether a mutation is on.
func (s Set) Any() bool { return s != Set{} }

// String lists the mutations that are on, comma-separated.
func (s Set) String() string {
	var on []string
	for _, m := range []struct {
		on   bool
		name string
	}{{s.SecondaryWrites, SecondaryWrites}, {s.SecondaryClaimsPrimary, SecondaryClaimsPrimary}, {s.AckWithoutWrite, AckWithoutWrite}, {s.HistorianDuplicates, HistorianDuplicates},
		{s.SecondaryStuckLow, SecondaryStuckLow}, {s.HistorianSilent, HistorianSilent}, {s.RejoinLate, RejoinLate}} {
		if m.on {
			on = append(on, m.name)
		}
	}
	return strings.Join(on, ",")
}
