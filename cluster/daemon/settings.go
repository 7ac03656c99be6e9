package daemon

import (
	"crypto/rand"
	"encoding/binary"
	"time"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/config"
)

// NewUID draws the random, non-zero incarnation uid of this process.
func NewUID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic("daemon: invariant violated: crypto/rand failed: " + err.Error())
		}
		if u := binary.LittleEndian.Uint64(b[:]); u != 0 {
			return u
		}
	}
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// LeaseMajorityCheckEvery is how often, under lease-majority, the
// membership core records its failure detector's verdicts (the unreachable
// reaper) and its split-brain resolver looks at the view: the core's tick.
const LeaseMajorityCheckEvery = DefaultTickInterval

// NodeConfig maps a validated configuration to the membership core's
// settings for the incarnation uid: self = Cluster:PublicHostname and
// Cluster:Port, seeds from Cluster:SeedNodes, roles, Node:ClusterId carried
// with the member, the downing strategy and its timings, the failure
// detector, the self-form window, and the crash fast path
// (Cluster:DownOnConnectionRefused). The result is validated.
func NodeConfig(c *config.Config, uid uint64) (node.Config, error) {
	cl := &c.Cluster
	self := membership.UniqueAddress{Host: cl.PublicHostname, Port: cl.Port, UID: uid}
	var seeds []membership.Address
	for _, s := range cl.SeedAddresses() {
		seeds = append(seeds, membership.Address{Host: s.Host, Port: s.Port})
	}
	nc := node.DefaultConfig(self, seeds)
	nc.Roles = append([]string(nil), cl.Roles...)
	nc.ClusterID = c.Node.ClusterId
	nc.SelfFormAfter = ms(cl.SelfFormAfter)
	nc.Downing.Strategy = cl.SplitBrainResolverStrategy
	nc.Downing.AutoDownUnreachableAfter = ms(cl.AutoDownUnreachableAfter)
	nc.Downing.StableAfter = ms(cl.StableAfter)
	nc.Downing.DownIfAlone = cl.DownIfAlone
	nc.Downing.QuorumSize = cl.StaticQuorumSize
	fd := cl.FailureDetector
	nc.HeartbeatInterval = ms(fd.HeartbeatInterval)
	nc.FailureDetector.FirstHeartbeatEstimate = ms(fd.HeartbeatInterval)
	nc.FailureDetector.AcceptableHeartbeatPause = ms(fd.AcceptableHeartbeatPause)
	nc.FailureDetector.Threshold = fd.Threshold
	nc.CrashFastPath = cl.DownOnConnectionRefusedEnabled()
	if nc.Downing.Strategy == node.LeaseMajority {
		// The reaper and the resolver look every LeaseMajorityCheckEvery
		// rather than with Akka's 1 s leader actions: each would otherwise
		// add up to a second to the take-over from a silent Primary.
		nc.UnreachableReaperInterval = ms(LeaseMajorityCheckEvery)
		nc.DowningInterval = ms(LeaseMajorityCheckEvery)
		// A refused lease is tried again for a TTL and one more attempt:
		// a frozen holder's lease lapses by then, a live one's never does.
		nc.Downing.LeaseRetryFor = ms(cl.Lease.Ttl) + nc.Downing.LeaseRetryEvery
	}
	return nc, nc.Validate()
}
