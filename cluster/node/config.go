package node

import (
	"errors"
	"fmt"
	"strings"

	"github.com/otopcua/otopcua/cluster/bootstrap"
	"github.com/otopcua/otopcua/cluster/downing"
	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/phi"
)

// Instant is a point in time in milliseconds since an epoch chosen by the
// driver. The core never reads a clock; the driver passes Instants in.
type Instant int64

// Downing strategy names accepted by DowningConfig.Strategy
// (Cluster:SplitBrainResolverStrategy).
const (
	AutoDown      = "auto-down"
	KeepOldest    = "keep-oldest"
	KeepMajority  = "keep-majority"
	StaticQuorum  = "static-quorum"
	LeaseMajority = "lease-majority"
	DownAll       = "down-all"
	NoDowning     = "none"
)

// Strategies lists every accepted downing strategy name.
var Strategies = []string{AutoDown, KeepOldest, KeepMajority, StaticQuorum, LeaseMajority, DownAll, NoDowning}

// DowningConfig selects and tunes the downing provider. Times are ms.
type DowningConfig struct {
	// Strategy is one of Strategies. Default "auto-down".
	Strategy string
	// AutoDownUnreachableAfter: auto-down downs a member unreachable this
	// long. Default 15000.
	AutoDownUnreachableAfter int64
	// StableAfter: split-brain strategies decide only after membership and
	// reachability were stable this long. Default 15000 (the reference
	// product; Akka's default is 20000).
	StableAfter int64
	// DownAllWhenUnstable: if reachability keeps changing for StableAfter +
	// this long, down all. 0 derives Akka's "on" value, max(4000,
	// StableAfter*3/4); negative disables.
	DownAllWhenUnstable int64
	// DownIfAlone for keep-oldest. Default true.
	DownIfAlone bool
	// Role restricts the split-brain counting to members with the role;
	// "" counts all members. Default "".
	Role string
	// QuorumSize for static-quorum. No default: must be ≥ 1.
	QuorumSize int
	// AcquireLeaseDelayForMinority for lease-majority. Default 1000 (Akka's is 2000).
	AcquireLeaseDelayForMinority int64
	// ReleaseLeaseAfter: a held lease is released this long after it was
	// acquired. Default 40000.
	ReleaseLeaseAfter int64
	// LeaseRetryFor: a lease-majority decision whose lease is refused
	// tries again every LeaseRetryEvery until this long after the first
	// refusal before it takes the reverse decision (downs its own side).
	// A holder that still runs renews its lease and keeps refusing it (a
	// partition); a frozen holder stops renewing and its lease lapses
	// within the TTL, so a window of a TTL and a little more tells the
	// two apart. 0 (the default, Akka's): reverse at the first refusal.
	LeaseRetryFor int64
	// LeaseRetryEvery paces those attempts. Default 250.
	LeaseRetryEvery int64
}

// Config holds one node's cluster settings. Times are ms.
type Config struct {
	// Self is this process's unique address (host, port, fresh random uid).
	Self m.UniqueAddress
	// Roles of this node, e.g. "driver".
	Roles []string
	// ClusterID is the application cluster this node serves.
	ClusterID string
	// Seeds in configured order; only the first may form a new cluster.
	Seeds []m.Address
	// SeedNodeTimeout: seed-node-timeout. Default 5000.
	SeedNodeTimeout int64
	// RetryUnsuccessfulJoinAfter: retry-unsuccessful-join-after. Default 10000.
	RetryUnsuccessfulJoinAfter int64
	// GossipInterval: how often a node whose view every member has seen
	// sends a gossip status to one of them. Default 1000.
	GossipInterval int64
	// SpreadGossipInterval: while a member this node can reach has not seen
	// its view (a change is spreading: a join, an Up, a Down), it gossips
	// to one such member this often instead (Akka's gossip speed-up, which
	// runs at a third of gossip-interval while fewer than half the members
	// have seen the view). Default 100.
	SpreadGossipInterval int64
	// LeaderActionsInterval. Default 1000.
	LeaderActionsInterval int64
	// UnreachableReaperInterval. Default 1000.
	UnreachableReaperInterval int64
	// DowningInterval is how often the split-brain resolver looks at its
	// view (stable-after, the lease delay): 0 (the default, Akka's) with
	// the leader actions, every LeaderActionsInterval. Auto-down always
	// runs with the leader actions.
	DowningInterval int64
	// HeartbeatInterval. Default 1000.
	HeartbeatInterval int64
	// ExpectedResponseAfter: a peer that never answers a heartbeat starts
	// being monitored this long after the first one was sent. Default 1000.
	ExpectedResponseAfter int64
	// WeaklyUpAfter: a Joining member is moved to WeaklyUp when the leader
	// cannot reach convergence for this long; ≤ 0 disables. Default 7000.
	WeaklyUpAfter int64
	// FailureDetector settings. Default phi.DefaultConfig().
	FailureDetector phi.Config
	// Downing provider. Default auto-down, 15 s.
	Downing DowningConfig
	// SelfFormAfter: Cluster:SelfFormAfter; ≤ 0 disables. Default 10000.
	SelfFormAfter int64
	// CrashFastPath: when a peer's connection breaks or this node's
	// detector suspects it, ask the driver to probe the peer's port (once
	// more FastPathRecheckAfter later if the broken connection's port still
	// accepted), mark it unreachable at once when every probe is refused,
	// and down it at once as the leader (DownNow). Default true.
	CrashFastPath bool
}

// DefaultConfig returns the reference product's settings for self.
func DefaultConfig(self m.UniqueAddress, seeds []m.Address) Config {
	return Config{
		Self:                       self,
		Seeds:                      seeds,
		SeedNodeTimeout:            5000,
		RetryUnsuccessfulJoinAfter: 10000,
		GossipInterval:             1000,
		SpreadGossipInterval:       100,
		LeaderActionsInterval:      1000,
		UnreachableReaperInterval:  1000,
		HeartbeatInterval:          1000,
		ExpectedResponseAfter:      1000,
		WeaklyUpAfter:              7000,
		FailureDetector:            phi.DefaultConfig(),
		Downing: DowningConfig{
			Strategy:                     AutoDown,
			AutoDownUnreachableAfter:     downing.DefaultAutoDownUnreachableAfter,
			StableAfter:                  15000,
			DownIfAlone:                  true,
			AcquireLeaseDelayForMinority: 1000, // Akka: 2000; see hocon-compat DefaultAcquireLeaseDelayForMinority
			ReleaseLeaseAfter:            40000,
			LeaseRetryEvery:              250,
		},
		SelfFormAfter: bootstrap.DefaultSelfFormAfter,
		CrashFastPath: true,
	}
}

// ErrConfig is wrapped by Validate's errors.
var ErrConfig = errors.New("cluster config")

// Validate checks the settings a start-up must refuse, naming the key and
// the accepted values.
func (c Config) Validate() error {
	if c.Self.Host == "" || c.Self.Port < 1 || c.Self.Port > 65535 {
		return fmt.Errorf("%w: self address %v: need a host and a port 1..65535", ErrConfig, c.Self)
	}
	ok := false
	for _, s := range Strategies {
		ok = ok || s == c.Downing.Strategy
	}
	if !ok {
		return fmt.Errorf("%w: Cluster:SplitBrainResolverStrategy %q: accepted values are %s", ErrConfig, c.Downing.Strategy, strings.Join(Strategies, ", "))
	}
	if c.Downing.Strategy == StaticQuorum && c.Downing.QuorumSize < 1 {
		return fmt.Errorf("%w: static-quorum quorum-size %d: must be >= 1", ErrConfig, c.Downing.QuorumSize)
	}
	for name, v := range map[string]int64{
		"seed-node-timeout": c.SeedNodeTimeout, "retry-unsuccessful-join-after": c.RetryUnsuccessfulJoinAfter,
		"gossip-interval": c.GossipInterval, "spread-gossip-interval": c.SpreadGossipInterval,
		"leader-actions-interval":           c.LeaderActionsInterval,
		"unreachable-nodes-reaper-interval": c.UnreachableReaperInterval, "heartbeat-interval": c.HeartbeatInterval,
	} {
		if v <= 0 {
			return fmt.Errorf("%w: %s %d ms: must be > 0", ErrConfig, name, v)
		}
	}
	if c.DowningInterval < 0 {
		return fmt.Errorf("%w: downing interval %d ms: must be >= 0", ErrConfig, c.DowningInterval)
	}
	if c.Downing.LeaseRetryFor < 0 || (c.Downing.LeaseRetryFor > 0 && c.Downing.LeaseRetryEvery <= 0) {
		return fmt.Errorf("%w: lease retry for %d ms every %d ms: need retry-for >= 0 and, with it, every > 0", ErrConfig, c.Downing.LeaseRetryFor, c.Downing.LeaseRetryEvery)
	}
	return nil
}

func (c Config) strategy() downing.Strategy {
	d := c.Downing
	switch d.Strategy {
	case KeepOldest:
		return downing.KeepOldest{DownIfAlone: d.DownIfAlone, Role: d.Role}
	case KeepMajority:
		return downing.KeepMajority{Role: d.Role}
	case StaticQuorum:
		return downing.StaticQuorum{QuorumSize: d.QuorumSize, Role: d.Role}
	case LeaseMajority:
		return downing.LeaseMajority{Role: d.Role, AcquireLeaseDelayForMinority: d.AcquireLeaseDelayForMinority}
	case DownAll:
		return downing.DownAllNodes{}
	}
	return nil
}

func (c Config) downAllWhenUnstable() int64 {
	switch v := c.Downing.DownAllWhenUnstable; {
	case v < 0:
		return 0
	case v > 0:
		return v
	}
	return max(4000, c.Downing.StableAfter*3/4)
}
