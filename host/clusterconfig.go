package host

import (
	"fmt"
	"net/http"
	"time"

	"github.com/otopcua/otopcua/cluster/node"
	hoconcompat "github.com/otopcua/otopcua/hocon-compat"
)

// installedCluster describes the settings the running membership node was
// started with — read back from its node.Config, not from the files — in
// the form hocon-compat renders.
func installedCluster(nc node.Config, lease *leaseKeeper) hoconcompat.EffectiveCluster {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	seeds := make([]string, len(nc.Seeds))
	for i, s := range nc.Seeds {
		seeds[i] = fmt.Sprintf("%s:%d", s.Host, s.Port)
	}
	d := nc.Downing
	e := hoconcompat.EffectiveCluster{
		Strategy:                     d.Strategy,
		AutoDownUnreachableAfter:     ms(d.AutoDownUnreachableAfter),
		StableAfter:                  ms(d.StableAfter),
		DownAllWhenUnstable:          ms(d.DownAllWhenUnstable),
		DownIfAlone:                  d.DownIfAlone,
		Role:                         d.Role,
		StaticQuorumSize:             d.QuorumSize,
		AcquireLeaseDelayForMinority: ms(d.AcquireLeaseDelayForMinority),
		DownOnConnectionRefused:      nc.CrashFastPath,
		FailureDetector: hoconcompat.FailureDetector{
			HeartbeatInterval:        ms(nc.HeartbeatInterval),
			AcceptableHeartbeatPause: ms(nc.FailureDetector.AcceptableHeartbeatPause),
			Threshold:                nc.FailureDetector.Threshold,
			MinStdDeviation:          ms(nc.FailureDetector.MinStdDeviation),
			MaxSampleSize:            nc.FailureDetector.MaxSampleSize,
		},
		SeedNodes:                  seeds,
		Roles:                      append([]string(nil), nc.Roles...),
		SeedNodeTimeout:            ms(nc.SeedNodeTimeout),
		RetryUnsuccessfulJoinAfter: ms(nc.RetryUnsuccessfulJoinAfter),
		SelfFormAfter:              ms(max(nc.SelfFormAfter, 0)),
	}
	if lease != nil { // the lease lease-majority installed
		e.LeaseProvider, e.LeaseTtl = lease.l.Name(), lease.ttl
	}
	return e
}

// clusterConfigHandler serves GET /api/cluster/config: the installed
// cluster settings as HOCON (text/plain).
func clusterConfigHandler(nc node.Config, lease *leaseKeeper) http.Handler {
	body := hoconcompat.Render(installedCluster(nc, lease))
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprint(w, body)
	})
}
