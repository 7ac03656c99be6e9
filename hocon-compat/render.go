package hoconcompat

import (
	"strconv"
	"strings"
	"time"

	"github.com/otopcua/otopcua/config"
)

// commentColumn is where Render starts end-of-line comments.
const commentColumn = 56

// Render writes e as HOCON, in the place each setting has in an Akka.NET
// akka.conf (akka.cluster …), plus an otopcua.cluster block for the two
// settings Akka does not have. Every field of e is written, so that
// Extract reads the text back to the same settings; a Role is written in
// the block of its strategy (and not at all under auto-down). When
// e.Origins is set, each line ends with a comment naming where the value
// came from.
func Render(e EffectiveCluster) string {
	w := &renderer{origins: e.Origins}
	autoDown := e.Strategy == config.StrategyAutoDown
	w.raw(0, "# otopcua effective cluster settings")
	w.raw(0, "akka.cluster {")
	class := SplitBrainResolverClass + ", " + akkaClusterAssembly
	if autoDown {
		class = AutoDowningClass
	}
	w.set(1, "downing-provider-class", quote(class), PathDowningProviderClass, KeyStrategy+" = "+e.Strategy)
	note := ""
	if !autoDown {
		note = "read by auto-down only"
	}
	w.set(1, "auto-down-unreachable-after", FormatDuration(e.AutoDownUnreachableAfter), PathAutoDownUnreachableAfter, note)
	w.set(1, "seed-nodes", showList(e.SeedNodes), PathSeedNodes, "")
	w.set(1, "roles", showList(e.Roles), PathRoles, "")
	w.set(1, "seed-node-timeout", FormatDuration(e.SeedNodeTimeout), PathSeedNodeTimeout, "")
	w.set(1, "retry-unsuccessful-join-after", formatOffDuration(e.RetryUnsuccessfulJoinAfter), PathRetryUnsuccessfulJoinAfter, "")
	w.sbr(e)
	fd := e.FailureDetector
	w.raw(1, "failure-detector {")
	w.set(2, "heartbeat-interval", FormatDuration(fd.HeartbeatInterval), PathHeartbeatInterval, "")
	w.set(2, "acceptable-heartbeat-pause", FormatDuration(fd.AcceptableHeartbeatPause), PathAcceptableHeartbeatPause, "")
	w.set(2, "threshold", formatFloat(fd.Threshold), PathThreshold, "")
	w.set(2, "min-std-deviation", FormatDuration(fd.MinStdDeviation), PathMinStdDeviation, "")
	w.set(2, "max-sample-size", strconv.Itoa(fd.MaxSampleSize), PathMaxSampleSize, "")
	w.raw(1, "}")
	w.raw(0, "}")
	w.raw(0, "otopcua.cluster {")
	w.set(1, "self-form-after", formatOffDuration(e.SelfFormAfter), PathSelfFormAfter, "")
	w.set(1, "down-on-connection-refused", formatBool(e.DownOnConnectionRefused), PathDownOnConnectionRefused, "")
	// Cluster:Lease is set in appsettings.json only; a comment, so the
	// output stays an akka.conf otopcua reads back unchanged.
	provider := e.LeaseProvider
	if provider == "" {
		provider = "none"
	}
	lease := "# Cluster:Lease (the shared lease of lease-majority): provider = " + provider + ", ttl = " + FormatDuration(e.LeaseTtl)
	if len(e.LeaseEndpoints) > 0 {
		lease += ", endpoints = " + showList(e.LeaseEndpoints)
	}
	w.raw(1, lease)
	w.raw(0, "}")
	return w.b.String()
}

// sbr writes the split-brain-resolver block.
func (w *renderer) sbr(e EffectiveCluster) {
	if e.Strategy == config.StrategyAutoDown {
		w.raw(1, "split-brain-resolver {  # read by the split-brain resolver strategies only")
	} else {
		w.raw(1, "split-brain-resolver {")
		w.set(2, "active-strategy", e.Strategy, PathActiveStrategy, "")
	}
	w.set(2, "stable-after", FormatDuration(e.StableAfter), PathStableAfter, "")
	w.set(2, "down-all-when-unstable", formatDownAll(e.DownAllWhenUnstable), PathDownAllWhenUnstable, "")
	w.raw(2, "keep-oldest {")
	w.set(3, "down-if-alone", formatBool(e.DownIfAlone), PathKeepOldestDownIfAlone, "")
	w.role(e, config.StrategyKeepOldest, PathKeepOldestRole)
	w.raw(2, "}")
	if e.Strategy == config.StrategyKeepMajority && e.Role != "" {
		w.raw(2, "keep-majority {")
		w.role(e, config.StrategyKeepMajority, PathKeepMajorityRole)
		w.raw(2, "}")
	}
	if e.StaticQuorumSize > 0 || e.Strategy == config.StrategyStaticQuorum && e.Role != "" {
		w.raw(2, "static-quorum {")
		if e.StaticQuorumSize > 0 {
			w.set(3, "quorum-size", strconv.Itoa(e.StaticQuorumSize), PathStaticQuorumSize, "")
		}
		w.role(e, config.StrategyStaticQuorum, PathStaticQuorumRole)
		w.raw(2, "}")
	}
	w.raw(2, "lease-majority {")
	if e.LeaseImplementation != "" {
		w.set(3, "lease-implementation", quote(e.LeaseImplementation), PathLeaseImplementation, "")
	}
	w.set(3, "acquire-lease-delay-for-minority", FormatDuration(e.AcquireLeaseDelayForMinority), PathAcquireLeaseDelayForMinority, "")
	w.role(e, config.StrategyLeaseMajority, PathLeaseMajorityRole)
	w.raw(2, "}")
	w.raw(1, "}")
}

// formatDownAll renders down-all-when-unstable: 0 is on, negative off.
func formatDownAll(d time.Duration) string {
	switch {
	case d == 0:
		return "on"
	case d < 0:
		return "off"
	}
	return FormatDuration(d)
}

type renderer struct {
	b       strings.Builder
	origins map[string]string
}

func (w *renderer) raw(indent int, s string) {
	w.b.WriteString(strings.Repeat("  ", indent) + s + "\n")
}

// role writes the role line of strategy's block when it is the active one
// and has a role.
func (w *renderer) role(e EffectiveCluster, strategy, path string) {
	if e.Strategy == strategy && e.Role != "" {
		w.set(3, "role", quote(e.Role), path, "")
	}
}

// set writes "key = value" with a comment made of note and the origin.
func (w *renderer) set(indent int, key, value, path, note string) {
	line := strings.Repeat("  ", indent) + key + " = " + value
	var comment []string
	if note != "" {
		comment = append(comment, note)
	}
	switch o := w.origins[path]; {
	case o == "":
	case strings.HasPrefix(o, originDefault):
		comment = append(comment, o)
	default:
		comment = append(comment, "from "+o)
	}
	if len(comment) > 0 {
		line += strings.Repeat(" ", max(2, commentColumn-len(line))) + "# " + strings.Join(comment, "; ")
	}
	w.b.WriteString(line + "\n")
}
