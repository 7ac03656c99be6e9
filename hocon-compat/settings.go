package hoconcompat

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/otopcua/otopcua/config"
)

// HOCON paths read by Extract.
const (
	PathDowningProviderClass         = "akka.cluster.downing-provider-class"
	PathAutoDownUnreachableAfter     = "akka.cluster.auto-down-unreachable-after"
	PathSeedNodes                    = "akka.cluster.seed-nodes"
	PathRoles                        = "akka.cluster.roles"
	PathSeedNodeTimeout              = "akka.cluster.seed-node-timeout"
	PathRetryUnsuccessfulJoinAfter   = "akka.cluster.retry-unsuccessful-join-after"
	PathActiveStrategy               = "akka.cluster.split-brain-resolver.active-strategy"
	PathStableAfter                  = "akka.cluster.split-brain-resolver.stable-after"
	PathDownAllWhenUnstable          = "akka.cluster.split-brain-resolver.down-all-when-unstable"
	PathKeepOldestDownIfAlone        = "akka.cluster.split-brain-resolver.keep-oldest.down-if-alone"
	PathKeepOldestRole               = "akka.cluster.split-brain-resolver.keep-oldest.role"
	PathKeepMajorityRole             = "akka.cluster.split-brain-resolver.keep-majority.role"
	PathStaticQuorumSize             = "akka.cluster.split-brain-resolver.static-quorum.quorum-size"
	PathStaticQuorumRole             = "akka.cluster.split-brain-resolver.static-quorum.role"
	PathLeaseImplementation          = "akka.cluster.split-brain-resolver.lease-majority.lease-implementation"
	PathAcquireLeaseDelayForMinority = "akka.cluster.split-brain-resolver.lease-majority.acquire-lease-delay-for-minority"
	PathLeaseMajorityRole            = "akka.cluster.split-brain-resolver.lease-majority.role"
	PathHeartbeatInterval            = "akka.cluster.failure-detector.heartbeat-interval"
	PathAcceptableHeartbeatPause     = "akka.cluster.failure-detector.acceptable-heartbeat-pause"
	PathThreshold                    = "akka.cluster.failure-detector.threshold"
	PathMinStdDeviation              = "akka.cluster.failure-detector.min-std-deviation"
	PathMaxSampleSize                = "akka.cluster.failure-detector.max-sample-size"
	// otopcua's own settings, which Akka does not have; Render writes them
	// so that the rendered text reads back completely.
	PathSelfFormAfter           = "otopcua.cluster.self-form-after"
	PathDownOnConnectionRefused = "otopcua.cluster.down-on-connection-refused"
)

// Downing provider classes accepted in akka.cluster.downing-provider-class,
// optionally assembly-qualified (", Akka.Cluster" and further
// ", Version=…, Culture=…, PublicKeyToken=…" parts).
const (
	AutoDowningClass        = "Akka.Cluster.AutoDowning"
	SplitBrainResolverClass = "Akka.Cluster.SBR.SplitBrainResolverProvider"
	akkaClusterAssembly     = "Akka.Cluster"
)

// SBRStrategies are the accepted values of
// akka.cluster.split-brain-resolver.active-strategy.
var SBRStrategies = []string{config.StrategyKeepOldest, config.StrategyKeepMajority, config.StrategyStaticQuorum, config.StrategyLeaseMajority}

// akkaDefaultSBRStrategy is Akka.NET's active-strategy when the split-brain
// resolver provider is installed without one.
const akkaDefaultSBRStrategy = config.StrategyKeepMajority

// DownAllOff is the DownAllWhenUnstable value of
// "down-all-when-unstable = off".
const DownAllOff = time.Duration(-1)

// Setting is one value read from HOCON: Set is false when the file does
// not give it, and then Value is the zero value.
type Setting[T any] struct {
	Value T
	Set   bool
	// Pos is where the value is written.
	Pos Pos
}

func set[T any](v T, pos Pos) Setting[T] { return Setting[T]{Value: v, Set: true, Pos: pos} }

// ClusterSettings is what otopcua reads from an akka.conf. Every field is a
// Setting: unset when the file does not say. Durations are time.Duration;
// "off" is described per field.
type ClusterSettings struct {
	// DowningProviderClass is akka.cluster.downing-provider-class as written.
	DowningProviderClass Setting[string]
	// Strategy is the downing strategy the provider class selects, in
	// Cluster:SplitBrainResolverStrategy terms: "auto-down" for
	// Akka.Cluster.AutoDowning, the active-strategy for the split-brain
	// resolver (Akka.NET's default keep-majority when that is not set).
	// Unset when the file has no downing-provider-class.
	Strategy Setting[string]
	// ActiveStrategy is akka.cluster.split-brain-resolver.active-strategy,
	// lower-cased, whether or not a provider class selects it.
	ActiveStrategy Setting[string]
	// AutoDownUnreachableAfter is akka.cluster.auto-down-unreachable-after;
	// "off" leaves it unset (otopcua always downs under auto-down).
	AutoDownUnreachableAfter Setting[time.Duration]
	// StableAfter is split-brain-resolver.stable-after (Akka default 20s).
	StableAfter Setting[time.Duration]
	// DownAllWhenUnstable is split-brain-resolver.down-all-when-unstable:
	// 0 for "on" (derived from stable-after), DownAllOff for "off", or the
	// duration written.
	DownAllWhenUnstable Setting[time.Duration]
	// KeepOldestDownIfAlone is keep-oldest.down-if-alone (Akka default on).
	KeepOldestDownIfAlone Setting[bool]
	// KeepOldestRole, KeepMajorityRole, StaticQuorumRole and
	// LeaseMajorityRole restrict each strategy to members with the role
	// ("" all members).
	KeepOldestRole    Setting[string]
	KeepMajorityRole  Setting[string]
	StaticQuorumRole  Setting[string]
	LeaseMajorityRole Setting[string]
	// StaticQuorumSize is static-quorum.quorum-size; "undefined" (Akka's
	// default) leaves it unset.
	StaticQuorumSize Setting[int]
	// LeaseImplementation is lease-majority.lease-implementation.
	LeaseImplementation Setting[string]
	// AcquireLeaseDelayForMinority is
	// lease-majority.acquire-lease-delay-for-minority (Akka default 2s).
	AcquireLeaseDelayForMinority Setting[time.Duration]
	// HeartbeatInterval, AcceptableHeartbeatPause, Threshold,
	// MinStdDeviation and MaxSampleSize are the akka.cluster.failure-detector
	// block (Akka defaults 1s, 3s, 8.0, 100ms, 1000).
	HeartbeatInterval        Setting[time.Duration]
	AcceptableHeartbeatPause Setting[time.Duration]
	Threshold                Setting[float64]
	MinStdDeviation          Setting[time.Duration]
	MaxSampleSize            Setting[int]
	// SeedNodes is akka.cluster.seed-nodes as written; every entry parses
	// as a config.SeedAddress.
	SeedNodes Setting[[]string]
	// Roles is akka.cluster.roles, lower-cased; every entry is one of
	// config.Roles.
	Roles Setting[[]string]
	// SeedNodeTimeout is akka.cluster.seed-node-timeout (Akka default 5s).
	SeedNodeTimeout Setting[time.Duration]
	// RetryUnsuccessfulJoinAfter is akka.cluster.retry-unsuccessful-join-after
	// (Akka default 10s); "off" is 0.
	RetryUnsuccessfulJoinAfter Setting[time.Duration]
	// SelfFormAfter is otopcua.cluster.self-form-after; "off" is 0.
	SelfFormAfter Setting[time.Duration]
	// DownOnConnectionRefused is otopcua.cluster.down-on-connection-refused.
	DownOnConnectionRefused Setting[bool]
}

// ValueError is one setting of an akka.conf that otopcua cannot use.
type ValueError struct {
	Pos      Pos
	Key      string // HOCON path
	Value    string // as written
	Accepted string // what would be accepted instead
}

func (e *ValueError) Error() string {
	pos := ""
	if e.Pos.IsValid() {
		pos = e.Pos.String() + ": "
	}
	return fmt.Sprintf("%s%s = %s: %s", pos, e.Key, e.Value, e.Accepted)
}

// ExtractError lists every setting of one file that otopcua cannot use.
type ExtractError struct {
	File  string
	Items []*ValueError
}

func (e *ExtractError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid cluster settings in %s: %d problem", e.File, len(e.Items))
	if len(e.Items) != 1 {
		b.WriteString("s")
	}
	for _, it := range e.Items {
		b.WriteString("\n  " + it.Error())
	}
	return b.String()
}

// Extract reads the cluster settings otopcua uses from a parsed akka.conf.
// The warnings start with the document's own (Document.Warnings) and add
// settings that are read but do not take effect, and settings under
// akka.cluster and otopcua that otopcua does not read at all. The error, an
// *ExtractError, lists every value of the wrong type or outside what
// otopcua accepts (an unknown downing provider class or strategy names the
// key, the value and the accepted values). The returned settings hold
// whatever could be read even when the error is not nil.
func Extract(doc *Document) (ClusterSettings, []Warning, error) {
	x := &extractor{doc: doc, read: map[string]bool{}}
	var s ClusterSettings
	x.downing(&s)
	x.autoDown(&s)
	x.splitBrainResolver(&s)
	x.failureDetector(&s)
	x.membership(&s)
	x.unread()
	warnings := append(doc.Warnings(), x.warnings...)
	if len(x.errs) > 0 {
		return s, warnings, &ExtractError{File: doc.name, Items: x.errs}
	}
	return s, warnings, nil
}

type extractor struct {
	doc      *Document
	read     map[string]bool
	warnings []Warning
	errs     []*ValueError
}

func (x *extractor) get(path string) *Value {
	x.read[path] = true
	v := x.doc.Get(path)
	if v == nil || v.kind == Null {
		return nil
	}
	return v
}

func (x *extractor) fail(v *Value, path, accepted string) {
	x.errs = append(x.errs, &ValueError{Pos: v.pos, Key: path, Value: v.describe(), Accepted: accepted})
}

func (x *extractor) warn(pos Pos, path, format string, args ...any) {
	x.warnings = append(x.warnings, Warning{Pos: pos, Key: path, Msg: fmt.Sprintf(format, args...)})
}

// scalar returns v's text when v is a string, number or boolean.
func (x *extractor) scalar(v *Value, path, accepted string) (string, bool) {
	if v.kind == Object || v.kind == Array {
		x.fail(v, path, accepted)
		return "", false
	}
	return v.text, true
}

func (x *extractor) str(path string) Setting[string] {
	v := x.get(path)
	if v == nil {
		return Setting[string]{}
	}
	if t, ok := x.scalar(v, path, "accepted values are strings"); ok {
		return set(t, v.pos)
	}
	return Setting[string]{}
}

func (x *extractor) boolean(path string) Setting[bool] {
	v := x.get(path)
	if v == nil {
		return Setting[bool]{}
	}
	const accepted = "accepted values are on, off, true, false, yes, no"
	t, ok := x.scalar(v, path, accepted)
	if !ok {
		return Setting[bool]{}
	}
	b, ok := parseBool(t)
	if !ok {
		x.fail(v, path, accepted)
		return Setting[bool]{}
	}
	return set(b, v.pos)
}

// durOpts says which special words a duration setting accepts.
type durOpts struct {
	off      *time.Duration // value of "off"; nil when "off" is refused
	zero     bool           // 0 is accepted
	accepted string         // overrides the generic message
}

func (x *extractor) duration(path string, o durOpts) (Setting[time.Duration], *Value) {
	v := x.get(path)
	if v == nil {
		return Setting[time.Duration]{}, nil
	}
	accepted := o.accepted
	if accepted == "" {
		accepted = "accepted values are " + DurationForms + " greater than 0"
		if o.off != nil {
			accepted += ", or off"
		}
	}
	t, ok := x.scalar(v, path, accepted)
	if !ok {
		return Setting[time.Duration]{}, v
	}
	if o.off != nil && strings.EqualFold(strings.TrimSpace(t), "off") {
		return set(*o.off, v.pos), v
	}
	d, err := ParseDuration(t)
	if err != nil || d < 0 || d == 0 && !o.zero {
		x.fail(v, path, accepted)
		return Setting[time.Duration]{}, v
	}
	return set(d, v.pos), v
}

func (x *extractor) positive(path string) Setting[time.Duration] {
	s, _ := x.duration(path, durOpts{})
	return s
}

func (x *extractor) integer(path string, minimum int, accepted string) Setting[int] {
	v := x.get(path)
	if v == nil {
		return Setting[int]{}
	}
	t, ok := x.scalar(v, path, accepted)
	if !ok {
		return Setting[int]{}
	}
	n, err := strconv.Atoi(strings.TrimSpace(t))
	if err != nil || n < minimum {
		x.fail(v, path, accepted)
		return Setting[int]{}
	}
	return set(n, v.pos)
}

func (x *extractor) stringList(path, accepted string, check func(string) (string, bool)) Setting[[]string] {
	v := x.get(path)
	if v == nil {
		return Setting[[]string]{}
	}
	if v.kind != Array {
		x.fail(v, path, accepted)
		return Setting[[]string]{}
	}
	out := make([]string, 0, len(v.elems))
	good := true
	for i, e := range v.elems {
		elemPath := fmt.Sprintf("%s.%d", path, i)
		if !e.isScalar() || e.kind == Null {
			x.fail(e, elemPath, accepted)
			good = false
			continue
		}
		s, ok := check(e.text)
		if !ok {
			x.fail(e, elemPath, accepted)
			good = false
			continue
		}
		out = append(out, s)
	}
	if !good {
		return Setting[[]string]{}
	}
	return set(out, v.pos)
}

// downing reads the provider class and the active strategy.
func (x *extractor) downing(s *ClusterSettings) {
	act := x.get(PathActiveStrategy)
	if act != nil {
		accepted := "accepted values are " + strings.Join(SBRStrategies, ", ")
		if t, ok := x.scalar(act, PathActiveStrategy, accepted); ok {
			name := strings.ToLower(strings.TrimSpace(t))
			if contains(SBRStrategies, name) {
				s.ActiveStrategy = set(name, act.pos)
			} else {
				x.fail(act, PathActiveStrategy, accepted)
			}
		}
	}
	prov := x.get(PathDowningProviderClass)
	if prov == nil {
		if s.ActiveStrategy.Set {
			x.warn(act.pos, PathActiveStrategy, "%s is set but %s is not, so it selects nothing: the strategy comes from Cluster:SplitBrainResolverStrategy (default auto-down), which is what installs the downing provider; to select it from this file, also set %s = %s",
				s.ActiveStrategy.Value, PathDowningProviderClass, PathDowningProviderClass, quote(SplitBrainResolverClass+", "+akkaClusterAssembly))
		}
		return
	}
	accepted := fmt.Sprintf("accepted values are %s and %s, optionally followed by \", %s\"", AutoDowningClass, SplitBrainResolverClass, akkaClusterAssembly)
	class, ok := x.scalar(prov, PathDowningProviderClass, accepted)
	if !ok {
		return
	}
	s.DowningProviderClass = set(class, prov.pos)
	switch providerOf(class) {
	case AutoDowningClass:
		s.Strategy = set(config.StrategyAutoDown, prov.pos)
		if s.ActiveStrategy.Set {
			x.warn(act.pos, PathActiveStrategy, "%s is ignored: %s does not read the split-brain-resolver block", s.ActiveStrategy.Value, AutoDowningClass)
		}
	case SplitBrainResolverClass:
		switch {
		case s.ActiveStrategy.Set:
			s.Strategy = s.ActiveStrategy
		case act == nil:
			s.Strategy = set(akkaDefaultSBRStrategy, prov.pos)
			x.warn(prov.pos, PathActiveStrategy, "not set: Akka.NET's default %s applies with %s", akkaDefaultSBRStrategy, SplitBrainResolverClass)
		}
	default:
		if strings.Contains(strings.ToLower(class), "splitbrainresolver") {
			accepted += " (Akka.NET 1.4's Akka.Cluster.SplitBrainResolver is now " + SplitBrainResolverClass + ")"
		}
		x.fail(prov, PathDowningProviderClass, accepted)
	}
}

// providerOf returns AutoDowningClass or SplitBrainResolverClass for a
// (possibly assembly-qualified) class name, "" for anything else.
func providerOf(class string) string {
	parts := strings.Split(class, ",")
	typ := strings.TrimSpace(parts[0])
	if len(parts) > 1 && !strings.EqualFold(strings.TrimSpace(parts[1]), akkaClusterAssembly) {
		return ""
	}
	for _, extra := range parts[min(2, len(parts)):] {
		if !strings.Contains(extra, "=") {
			return ""
		}
	}
	for _, known := range []string{AutoDowningClass, SplitBrainResolverClass} {
		if strings.EqualFold(typ, known) {
			return known
		}
	}
	return ""
}

func (x *extractor) autoDown(s *ClusterSettings) {
	off := time.Duration(-1)
	d, v := x.duration(PathAutoDownUnreachableAfter, durOpts{off: &off})
	if d.Set && d.Value == off {
		if s.Strategy.Value == config.StrategyAutoDown {
			x.warn(v.pos, PathAutoDownUnreachableAfter, "off would disable auto-down in Akka; otopcua always downs an unreachable member under auto-down, after Cluster:AutoDownUnreachableAfter (default 15s)")
		}
		return
	}
	s.AutoDownUnreachableAfter = d
}

func (x *extractor) splitBrainResolver(s *ClusterSettings) {
	s.StableAfter = x.positive(PathStableAfter)
	s.DownAllWhenUnstable = x.downAllWhenUnstable()
	s.KeepOldestDownIfAlone = x.boolean(PathKeepOldestDownIfAlone)
	s.KeepOldestRole = x.str(PathKeepOldestRole)
	s.KeepMajorityRole = x.str(PathKeepMajorityRole)
	s.StaticQuorumRole = x.str(PathStaticQuorumRole)
	s.LeaseMajorityRole = x.str(PathLeaseMajorityRole)
	if v := x.get(PathStaticQuorumSize); v == nil || v.text != "undefined" {
		s.StaticQuorumSize = x.integer(PathStaticQuorumSize, 1, "accepted values are integers ≥ 1, or undefined")
	}
	s.LeaseImplementation = x.str(PathLeaseImplementation)
	s.AcquireLeaseDelayForMinority, _ = x.duration(PathAcquireLeaseDelayForMinority, durOpts{zero: true,
		accepted: "accepted values are " + DurationForms})
}

// downAllWhenUnstable reads on (0: derived from stable-after), off
// (DownAllOff) or a duration.
func (x *extractor) downAllWhenUnstable() Setting[time.Duration] {
	v := x.get(PathDownAllWhenUnstable)
	if v == nil {
		return Setting[time.Duration]{}
	}
	const accepted = "accepted values are on, off or " + DurationForms + " greater than 0"
	t, ok := x.scalar(v, PathDownAllWhenUnstable, accepted)
	if !ok {
		return Setting[time.Duration]{}
	}
	if b, ok := parseBool(t); ok {
		if b {
			return set(time.Duration(0), v.pos)
		}
		return set(DownAllOff, v.pos)
	}
	d, err := ParseDuration(t)
	if err != nil || d <= 0 {
		x.fail(v, PathDownAllWhenUnstable, accepted)
		return Setting[time.Duration]{}
	}
	return set(d, v.pos)
}

func (x *extractor) failureDetector(s *ClusterSettings) {
	s.HeartbeatInterval = x.positive(PathHeartbeatInterval)
	s.AcceptableHeartbeatPause = x.positive(PathAcceptableHeartbeatPause)
	s.MinStdDeviation = x.positive(PathMinStdDeviation)
	s.MaxSampleSize = x.integer(PathMaxSampleSize, 1, "accepted values are integers ≥ 1")
	if v := x.get(PathThreshold); v != nil {
		const accepted = "accepted values are numbers greater than 0, typically 8.0 to 12.0"
		if t, ok := x.scalar(v, PathThreshold, accepted); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
			if err != nil || !numberRE.MatchString(strings.TrimSpace(t)) || !(f > 0) || math.IsInf(f, 0) {
				x.fail(v, PathThreshold, accepted)
			} else {
				s.Threshold = set(f, v.pos)
			}
		}
	}
}

func (x *extractor) membership(s *ClusterSettings) {
	s.SeedNodes = x.stringList(PathSeedNodes, "accepted values are lists of "+config.SeedFormat, func(e string) (string, bool) {
		_, err := config.ParseSeedAddress(e)
		return e, err == nil
	})
	s.Roles = x.stringList(PathRoles, "accepted values are lists of "+strings.Join(config.Roles, ", "), func(e string) (string, bool) {
		r := strings.ToLower(strings.TrimSpace(e))
		return r, contains(config.Roles, r)
	})
	s.SeedNodeTimeout = x.positive(PathSeedNodeTimeout)
	zero := time.Duration(0)
	s.RetryUnsuccessfulJoinAfter, _ = x.duration(PathRetryUnsuccessfulJoinAfter, durOpts{off: &zero})
	s.SelfFormAfter, _ = x.duration(PathSelfFormAfter, durOpts{off: &zero, zero: true,
		accepted: "accepted values are " + DurationForms + ", or off (0 and off disable self-forming)"})
	s.DownOnConnectionRefused = x.boolean(PathDownOnConnectionRefused)
}

// maxUnreadWalk bounds the walk for unread settings: a resolved document
// may share values between paths, so its tree can be far larger than the
// file.
const maxUnreadWalk = 10_000

// unread warns about every setting under akka.cluster and otopcua that
// Extract did not read: it has no effect on otopcua.
func (x *extractor) unread() {
	budget := maxUnreadWalk
	var walk func(v *Value, path []string)
	walk = func(v *Value, path []string) {
		if budget--; budget < 0 {
			return
		}
		p := pathString(path)
		if x.read[p] {
			return
		}
		if v.kind == Object {
			for _, k := range v.Keys() {
				walk(v.fields[k], append(path[:len(path):len(path)], k))
			}
			return
		}
		x.warn(v.pos, p, "not read by otopcua: it has no effect here")
	}
	for _, top := range [][]string{{"akka", "cluster"}, {"otopcua"}} {
		if v := x.doc.lookup(top); v != nil {
			walk(v, top)
		}
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
