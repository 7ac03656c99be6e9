package hoconcompat

import (
	"github.com/otopcua/otopcua/config"
)

// ApplyTo writes the effective settings into cl, so that a node started
// from cl installs exactly what Render shows. Keys otopcua's Cluster section
// does not have (split-brain role, lease settings, join timeouts) stay with
// the cluster's defaults.
func (e EffectiveCluster) ApplyTo(cl *config.ClusterConfig) {
	cl.SplitBrainResolverStrategy = e.Strategy
	cl.AutoDownUnreachableAfter = e.AutoDownUnreachableAfter
	cl.StableAfter = e.StableAfter
	cl.DownIfAlone = e.DownIfAlone
	cl.StaticQuorumSize = e.StaticQuorumSize
	fast := e.DownOnConnectionRefused
	cl.DownOnConnectionRefused = &fast
	cl.FailureDetector.HeartbeatInterval = e.FailureDetector.HeartbeatInterval
	cl.FailureDetector.AcceptableHeartbeatPause = e.FailureDetector.AcceptableHeartbeatPause
	cl.FailureDetector.Threshold = e.FailureDetector.Threshold
	cl.SeedNodes = append([]string(nil), e.SeedNodes...)
	cl.Roles = append([]string(nil), e.Roles...)
	cl.SelfFormAfter = e.SelfFormAfter
}
