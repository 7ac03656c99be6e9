package hoconcompat

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otopcua/otopcua/config"
)

// appsettings.json keys (also settable through OTOPCUA_ environment
// variables) that Effective weighs against akka.conf; they are the keys of
// the explicit map.
const (
	KeyStrategy                 = "Cluster:SplitBrainResolverStrategy"
	KeyAutoDownUnreachableAfter = "Cluster:AutoDownUnreachableAfter"
	KeyStableAfter              = "Cluster:StableAfter"
	KeyDownIfAlone              = "Cluster:DownIfAlone"
	KeyStaticQuorumSize         = "Cluster:StaticQuorumSize"
	KeyDownOnConnectionRefused  = "Cluster:DownOnConnectionRefused"
	KeyHeartbeatInterval        = "Cluster:FailureDetector:HeartbeatInterval"
	KeyAcceptableHeartbeatPause = "Cluster:FailureDetector:AcceptableHeartbeatPause"
	KeyThreshold                = "Cluster:FailureDetector:Threshold"
	KeySeedNodes                = "Cluster:SeedNodes"
	KeyRoles                    = "Cluster:Roles"
	KeySelfFormAfter            = "Cluster:SelfFormAfter"
)

// JSONKeys lists the keys above.
var JSONKeys = []string{
	KeyStrategy, KeyAutoDownUnreachableAfter, KeyStableAfter, KeyDownIfAlone, KeyStaticQuorumSize,
	KeyDownOnConnectionRefused, KeyHeartbeatInterval, KeyAcceptableHeartbeatPause, KeyThreshold,
	KeySeedNodes, KeyRoles, KeySelfFormAfter,
}

// Defaults of the settings only akka.conf can give (otopcua's cluster uses
// Akka's values).
const (
	DefaultDownAllWhenUnstable = time.Duration(0) // on: max(4s, 3/4 of stable-after)
	// DefaultAcquireLeaseDelayForMinority is 1 s where Akka's is 2 s. It
	// delays a strict minority only: in an even split (a pair's 1–1)
	// otopcua's lease keeper has taken the lease for a live Primary a
	// heartbeat and a quarter of the pause into the silence, seconds
	// before any split-brain decision, so both halves try at once and the
	// store's answer tells a freeze from a partition.
	DefaultAcquireLeaseDelayForMinority = time.Second
	DefaultMinStdDeviation              = 100 * time.Millisecond
	DefaultMaxSampleSize                = 1000
	DefaultSeedNodeTimeout              = 5 * time.Second
	DefaultRetryUnsuccessfulJoinAfter   = 10 * time.Second
)

// JSONCluster is the part of the appsettings.json Cluster section (after
// environment overrides and defaults) that Effective needs; FromConfig
// fills it from a loaded config.
type JSONCluster struct {
	// SplitBrainResolverStrategy is one of config.Strategies.
	SplitBrainResolverStrategy string
	AutoDownUnreachableAfter   time.Duration
	StableAfter                time.Duration
	DownIfAlone                bool
	StaticQuorumSize           int
	// DownOnConnectionRefused is nil when the JSON leaves it to the
	// strategy's default (on for auto-down only).
	DownOnConnectionRefused  *bool
	HeartbeatInterval        time.Duration
	AcceptableHeartbeatPause time.Duration
	Threshold                float64
	SeedNodes                []string
	Roles                    []string
	// SelfFormAfter is 0 when self-forming is disabled.
	SelfFormAfter time.Duration
	// Lease is Cluster:Lease (appsettings only).
	Lease config.LeaseConfig
}

// FromConfig copies the fields Effective needs from a loaded
// config.ClusterConfig.
func FromConfig(c *config.ClusterConfig) JSONCluster {
	var docr *bool
	if c.DownOnConnectionRefused != nil {
		v := *c.DownOnConnectionRefused
		docr = &v
	}
	return JSONCluster{
		SplitBrainResolverStrategy: c.SplitBrainResolverStrategy,
		AutoDownUnreachableAfter:   c.AutoDownUnreachableAfter,
		StableAfter:                c.StableAfter,
		DownIfAlone:                c.DownIfAlone,
		StaticQuorumSize:           c.StaticQuorumSize,
		DownOnConnectionRefused:    docr,
		HeartbeatInterval:          c.FailureDetector.HeartbeatInterval,
		AcceptableHeartbeatPause:   c.FailureDetector.AcceptableHeartbeatPause,
		Threshold:                  c.FailureDetector.Threshold,
		SeedNodes:                  slices.Clone(c.SeedNodes),
		Roles:                      slices.Clone(c.Roles),
		SelfFormAfter:              c.SelfFormAfter,
		Lease:                      config.LeaseConfig{Provider: c.Lease.Provider, Ttl: c.Lease.Ttl, Endpoints: slices.Clone(c.Lease.Endpoints)},
	}
}

// FailureDetector is the effective phi-accrual failure detector.
type FailureDetector struct {
	// HeartbeatInterval between heartbeats to a monitored peer. Default 1s.
	HeartbeatInterval time.Duration
	// AcceptableHeartbeatPause tolerated before phi rises. Default 3s.
	AcceptableHeartbeatPause time.Duration
	// Threshold of phi above which a peer is unreachable. Default 10.0.
	Threshold float64
	// MinStdDeviation floors the standard deviation. Default 100ms.
	MinStdDeviation time.Duration
	// MaxSampleSize is the number of intervals kept. Default 1000.
	MaxSampleSize int
}

// EffectiveCluster is the cluster configuration a node installs: what
// Render prints and what the running node reports.
type EffectiveCluster struct {
	// Strategy is the downing strategy, one of config.Strategies.
	Strategy string
	// AutoDownUnreachableAfter: auto-down downs a member unreachable this
	// long. Default 15s.
	AutoDownUnreachableAfter time.Duration
	// StableAfter: split-brain strategies decide after this much stability.
	// Default 15s.
	StableAfter time.Duration
	// DownAllWhenUnstable: 0 is "on" (derived: max(4s, 3/4 of StableAfter)),
	// any negative value (DownAllOff) is "off", otherwise the duration.
	// Default on.
	DownAllWhenUnstable time.Duration
	// DownIfAlone for keep-oldest. Default true.
	DownIfAlone bool
	// Role restricts the active split-brain strategy to members with this
	// role; "" counts every member. Always "" under auto-down. Default "".
	Role string
	// StaticQuorumSize for static-quorum; 0 when not given.
	StaticQuorumSize int
	// LeaseImplementation for lease-majority. Default "".
	LeaseImplementation string
	// LeaseProvider, LeaseTtl and LeaseEndpoints are Cluster:Lease (set in
	// appsettings.json only): the shared lease otopcua's lease-majority
	// uses, whatever LeaseImplementation names.
	LeaseProvider  string
	LeaseTtl       time.Duration
	LeaseEndpoints []string
	// AcquireLeaseDelayForMinority for lease-majority. Default 1s.
	AcquireLeaseDelayForMinority time.Duration
	// DownOnConnectionRefused downs a peer whose port refuses connections
	// at once. Default on for auto-down, off otherwise.
	DownOnConnectionRefused bool
	// FailureDetector settings.
	FailureDetector FailureDetector
	// SeedNodes as configured ("host:port" or "akka.tcp://otopcua@host:port").
	SeedNodes []string
	// Roles of this node.
	Roles []string
	// SeedNodeTimeout: wait for a seed's answer to InitJoin. Default 5s.
	SeedNodeTimeout time.Duration
	// RetryUnsuccessfulJoinAfter: retry a join after this long; 0 is off.
	// Default 10s.
	RetryUnsuccessfulJoinAfter time.Duration
	// SelfFormAfter: self-form fallback window; 0 disables. Default 10s.
	SelfFormAfter time.Duration
	// Origins optionally says where each value came from, keyed by HOCON
	// path (the Path constants): an appsettings.json key such as
	// "Cluster:StableAfter", a file position such as "akka.conf:12:5", or
	// "default". Render prints them as comments; nil prints none.
	Origins map[string]string
}

// Effective combines the appsettings.json view of the Cluster section with
// what an akka.conf says. explicit names the JSON keys (KeyStrategy, …)
// that the file or the environment set; the others hold their defaults.
//
//  1. A key set explicitly in JSON or the environment wins.
//  2. Otherwise a value written in akka.conf applies.
//  3. Otherwise the JSON value (the default) applies; settings akka.conf
//     alone can give take otopcua's defaults (the Default constants).
//
// When both sources give a value and they differ, the JSON value wins and
// a warning names both. DownOnConnectionRefused not set anywhere follows
// the effective strategy (on for auto-down only). The strategy is taken
// from akka.conf only through akka.cluster.downing-provider-class (see
// ClusterSettings.Strategy).
func Effective(json JSONCluster, explicit map[string]bool, h ClusterSettings) (EffectiveCluster, []Warning) {
	r := &precedence{explicit: explicit, origins: map[string]string{}}
	var e EffectiveCluster
	strategyPath := PathDowningProviderClass
	if h.ActiveStrategy.Set && h.Strategy.Pos == h.ActiveStrategy.Pos {
		strategyPath = PathActiveStrategy
	}
	e.Strategy = pick(r, KeyStrategy, strategyPath, json.SplitBrainResolverStrategy, h.Strategy, strconv.Quote, eqAny)
	r.origins[PathActiveStrategy] = r.origins[strategyPath]
	r.origins[PathDowningProviderClass] = r.origins[strategyPath]
	e.AutoDownUnreachableAfter = pick(r, KeyAutoDownUnreachableAfter, PathAutoDownUnreachableAfter, json.AutoDownUnreachableAfter, h.AutoDownUnreachableAfter, FormatDuration, eqAny)
	e.StableAfter = pick(r, KeyStableAfter, PathStableAfter, json.StableAfter, h.StableAfter, FormatDuration, eqAny)
	e.DownAllWhenUnstable = only(r, PathDownAllWhenUnstable, DefaultDownAllWhenUnstable, h.DownAllWhenUnstable)
	e.DownIfAlone = pick(r, KeyDownIfAlone, PathKeepOldestDownIfAlone, json.DownIfAlone, h.KeepOldestDownIfAlone, formatBool, eqAny)
	e.StaticQuorumSize = pick(r, KeyStaticQuorumSize, PathStaticQuorumSize, json.StaticQuorumSize, h.StaticQuorumSize, strconv.Itoa, eqAny)
	if path, role, ok := roleFor(e.Strategy, h); ok {
		e.Role = only(r, path, "", role)
	}
	e.LeaseImplementation = only(r, PathLeaseImplementation, "", h.LeaseImplementation)
	e.LeaseProvider, e.LeaseTtl, e.LeaseEndpoints = json.Lease.Provider, json.Lease.Ttl, slices.Clone(json.Lease.Endpoints)
	if e.LeaseTtl == 0 {
		e.LeaseTtl = config.DefaultLeaseTtl
	}
	e.AcquireLeaseDelayForMinority = only(r, PathAcquireLeaseDelayForMinority, DefaultAcquireLeaseDelayForMinority, h.AcquireLeaseDelayForMinority)
	e.DownOnConnectionRefused = r.downOnConnectionRefused(json, h, e.Strategy)
	e.FailureDetector = FailureDetector{
		HeartbeatInterval:        pick(r, KeyHeartbeatInterval, PathHeartbeatInterval, json.HeartbeatInterval, h.HeartbeatInterval, FormatDuration, eqAny),
		AcceptableHeartbeatPause: pick(r, KeyAcceptableHeartbeatPause, PathAcceptableHeartbeatPause, json.AcceptableHeartbeatPause, h.AcceptableHeartbeatPause, FormatDuration, eqAny),
		Threshold:                pick(r, KeyThreshold, PathThreshold, json.Threshold, h.Threshold, formatFloat, eqAny),
		MinStdDeviation:          only(r, PathMinStdDeviation, DefaultMinStdDeviation, h.MinStdDeviation),
		MaxSampleSize:            only(r, PathMaxSampleSize, DefaultMaxSampleSize, h.MaxSampleSize),
	}
	e.SeedNodes = slices.Clone(pick(r, KeySeedNodes, PathSeedNodes, json.SeedNodes, h.SeedNodes, showList, sameSeeds))
	e.Roles = slices.Clone(pick(r, KeyRoles, PathRoles, json.Roles, h.Roles, showList, sameRoles))
	e.SeedNodeTimeout = only(r, PathSeedNodeTimeout, DefaultSeedNodeTimeout, h.SeedNodeTimeout)
	e.RetryUnsuccessfulJoinAfter = only(r, PathRetryUnsuccessfulJoinAfter, DefaultRetryUnsuccessfulJoinAfter, h.RetryUnsuccessfulJoinAfter)
	e.SelfFormAfter = pick(r, KeySelfFormAfter, PathSelfFormAfter, json.SelfFormAfter, h.SelfFormAfter, formatOffDuration, eqAny)
	r.pairWarning(e, h)
	e.Origins = r.origins
	return e, r.warnings
}

// precedence applies Effective's rules field by field.
type precedence struct {
	explicit map[string]bool
	origins  map[string]string
	warnings []Warning
}

// originDefault marks a value neither source set.
const originDefault = "default"

// pick chooses between a JSON key and a HOCON setting.
func pick[T any](r *precedence, key, path string, jsonVal T, h Setting[T], show func(T) string, eq func(a, b T) bool) T {
	switch {
	case r.explicit[key]:
		if h.Set && !eq(jsonVal, h.Value) {
			r.warnings = append(r.warnings, Warning{Pos: h.Pos, Key: key, Msg: fmt.Sprintf(
				"%s from appsettings.json or the environment wins over %s = %s written at %s; remove one of the two",
				show(jsonVal), path, show(h.Value), h.Pos)})
		}
		r.origins[path] = key
		return jsonVal
	case h.Set:
		r.origins[path] = h.Pos.String()
		return h.Value
	}
	r.origins[path] = originDefault
	return jsonVal
}

// only takes a setting only akka.conf can give, or its default.
func only[T any](r *precedence, path string, def T, h Setting[T]) T {
	if h.Set {
		r.origins[path] = h.Pos.String()
		return h.Value
	}
	r.origins[path] = originDefault
	return def
}

func (r *precedence) downOnConnectionRefused(json JSONCluster, h ClusterSettings, strategy string) bool {
	def := strategy == config.StrategyAutoDown || strategy == config.StrategyLeaseMajority
	val := def
	if json.DownOnConnectionRefused != nil {
		val = *json.DownOnConnectionRefused
	}
	if !r.explicit[KeyDownOnConnectionRefused] {
		val = def
	}
	got := pick(r, KeyDownOnConnectionRefused, PathDownOnConnectionRefused, val, h.DownOnConnectionRefused, formatBool, eqAny)
	if r.origins[PathDownOnConnectionRefused] == originDefault {
		r.origins[PathDownOnConnectionRefused] = "default for " + strategy
	}
	return got
}

// pairWarning repeats, for a strategy chosen by akka.conf, the warning
// `otopcua config check` gives for one chosen in appsettings.json.
func (r *precedence) pairWarning(e EffectiveCluster, h ClusterSettings) {
	if r.explicit[KeyStrategy] || !h.Strategy.Set || len(e.SeedNodes) != 2 {
		return
	}
	switch e.Strategy {
	case config.StrategyKeepOldest, config.StrategyKeepMajority, config.StrategyStaticQuorum:
		r.warnings = append(r.warnings, Warning{Pos: h.Strategy.Pos, Key: KeyStrategy, Msg: fmt.Sprintf(
			"akka.conf selects %s on a two-node pair: a crash of one node can take the survivor down too; auto-down keeps the survivor running", e.Strategy)})
	}
}

// roleFor returns the role setting of the active split-brain strategy.
func roleFor(strategy string, h ClusterSettings) (string, Setting[string], bool) {
	switch strategy {
	case config.StrategyKeepOldest:
		return PathKeepOldestRole, h.KeepOldestRole, true
	case config.StrategyKeepMajority:
		return PathKeepMajorityRole, h.KeepMajorityRole, true
	case config.StrategyStaticQuorum:
		return PathStaticQuorumRole, h.StaticQuorumRole, true
	case config.StrategyLeaseMajority:
		return PathLeaseMajorityRole, h.LeaseMajorityRole, true
	}
	return "", Setting[string]{}, false
}

func eqAny[T comparable](a, b T) bool { return a == b }

func showList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// sameSeeds compares seed lists by address, in order.
func sameSeeds(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, errX := config.ParseSeedAddress(a[i])
		y, errY := config.ParseSeedAddress(b[i])
		if errX != nil || errY != nil {
			if a[i] != b[i] {
				return false
			}
			continue
		}
		if !x.Equal(y) {
			return false
		}
	}
	return true
}

// sameRoles compares role lists as sets.
func sameRoles(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

func formatOffDuration(d time.Duration) string {
	if d <= 0 {
		return "off"
	}
	return FormatDuration(d)
}

// ErrInvalid is wrapped by Validate's error.
var ErrInvalid = errors.New("invalid effective cluster settings")

// Validate checks what neither source can check alone, such as
// static-quorum without a quorum size given in either file, and the ranges
// of every value. The error wraps ErrInvalid and names the keys to set.
func (e EffectiveCluster) Validate() error {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if !contains(config.Strategies, e.Strategy) {
		add("%s = %q: accepted values are %s", KeyStrategy, e.Strategy, strings.Join(config.Strategies, ", "))
	}
	if e.Strategy == config.StrategyStaticQuorum && e.StaticQuorumSize < 1 {
		add("static-quorum needs a quorum size: set %s or %s to an integer ≥ 1", KeyStaticQuorumSize, PathStaticQuorumSize)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{KeyAutoDownUnreachableAfter, e.AutoDownUnreachableAfter}, {KeyStableAfter, e.StableAfter},
		{KeyHeartbeatInterval, e.FailureDetector.HeartbeatInterval}, {KeyAcceptableHeartbeatPause, e.FailureDetector.AcceptableHeartbeatPause},
		{PathMinStdDeviation, e.FailureDetector.MinStdDeviation}, {PathSeedNodeTimeout, e.SeedNodeTimeout},
	} {
		if d.v <= 0 {
			add("%s = %s: accepted values are durations greater than 0", d.name, FormatDuration(d.v))
		}
	}
	if f := e.FailureDetector.Threshold; !(f > 0) || math.IsInf(f, 0) {
		add("%s = %v: accepted values are numbers greater than 0", KeyThreshold, f)
	}
	if e.FailureDetector.MaxSampleSize < 1 {
		add("%s = %d: accepted values are integers ≥ 1", PathMaxSampleSize, e.FailureDetector.MaxSampleSize)
	}
	if e.RetryUnsuccessfulJoinAfter < 0 || e.SelfFormAfter < 0 || e.AcquireLeaseDelayForMinority < 0 {
		add("negative duration in %s, %s or %s", PathRetryUnsuccessfulJoinAfter, KeySelfFormAfter, PathAcquireLeaseDelayForMinority)
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n  %s", ErrInvalid, strings.Join(probs, "\n  "))
}

// LoadEffective computes a node's effective cluster settings from its
// loaded configuration: it reads Cluster:AkkaConfigPath when set (parse,
// Extract), applies Effective with explicit (see ExplicitKeys) and
// validates the result. Warnings come from every step; the error is a
// file that cannot be read, a *SyntaxError, an *ExtractError or one
// wrapping ErrInvalid.
func LoadEffective(cl *config.ClusterConfig, explicit map[string]bool) (EffectiveCluster, []Warning, error) {
	var h ClusterSettings
	var warnings []Warning
	if cl.AkkaConfigPath != "" {
		data, err := os.ReadFile(cl.AkkaConfigPath)
		if err != nil {
			return EffectiveCluster{}, nil, fmt.Errorf("Cluster:AkkaConfigPath: %w", err)
		}
		doc, err := Parse(cl.AkkaConfigPath, data)
		if err != nil {
			return EffectiveCluster{}, nil, err
		}
		if h, warnings, err = Extract(doc); err != nil {
			return EffectiveCluster{}, warnings, err
		}
	}
	e, w := Effective(FromConfig(cl), explicit, h)
	warnings = append(warnings, w...)
	return e, warnings, e.Validate()
}
