package chaos

import (
	"context"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/procs"
)

// Sampler timing: the checker's sampling period, and how long a read may
// take before it counts as no answer.
const (
	samplePeriod  = 50 * time.Millisecond
	sampleTimeout = 300 * time.Millisecond
)

// sample reads n's Server.ServiceLevel every samplePeriod from the SCADA
// host, over a session of its own (dialled again after a failure), until
// the run ends, and records every read: the level, or no answer when the
// read failed or took longer than sampleTimeout (a stopped, cut-off or
// dead node). One loop per node: a silent node stalls only its own.
func (r *rig) sample(n *node) {
	s := procs.NewSession(n.endpoint)
	defer s.Close()
	level := ua.NewNumericNodeID(0, id.Server_ServiceLevel)
	tick := time.NewTicker(samplePeriod)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
		v, err := s.Read(ctx, level)
		cancel()
		b, ok := v.(byte)
		r.rec.level(n.name, n.pair.spec.ID, time.Now(), b, err == nil && ok)
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
	}
}
