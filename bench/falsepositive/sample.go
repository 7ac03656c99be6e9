package main

import (
	"context"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/procs"
)

// Sampling periods and bounds.
const (
	levelEvery = 50 * time.Millisecond
	// levelTimeout bounds one read: longer than any stall, so a read sent
	// to a stopped node is answered after SIGCONT instead of dropping the
	// session.
	levelTimeout = 2 * time.Second
	viewEvery    = 250 * time.Millisecond
	viewTimeout  = 2 * time.Second
)

// levelSampler reads one node's Server.ServiceLevel every levelEvery over
// a long-lived session of its own, and counts what it read. A read that
// has not returned when the next is due delays the next one.
type levelSampler struct {
	s *procs.Session

	mu   sync.Mutex // guards obs and last
	obs  *NodeObs
	last int // last answered level, -1 none
}

func newLevelSampler(endpoint string, obs *NodeObs) *levelSampler {
	return &levelSampler{s: procs.NewSession(endpoint), obs: obs, last: -1}
}

// run samples until stop is closed.
func (l *levelSampler) run(stop <-chan struct{}, onLevel func(byte)) {
	level := ua.NewNumericNodeID(0, id.Server_ServiceLevel)
	tick := time.NewTicker(levelEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), levelTimeout)
		v, err := l.s.Read(ctx, level)
		cancel()
		b, ok := v.(byte)
		l.mu.Lock()
		l.obs.Reads++
		if err == nil && ok {
			l.obs.Answered++
			l.obs.Levels[b]++
			if l.last >= 0 && int(b) != l.last {
				l.obs.Changes++
			}
			l.last = int(b)
		}
		l.mu.Unlock()
		if err == nil && ok && onLevel != nil {
			onLevel(b)
		}
	}
}

// viewSampler fetches one node's GET /api/cluster/members every viewEvery
// and judges each view with checkView.
type viewSampler struct {
	node      *procs.Node
	addrs     []string
	clusterID string
	primary   string

	mu  *sync.Mutex // the level sampler's: both write obs
	obs *NodeObs
}

func (v *viewSampler) run(stop <-chan struct{}, onFault func(string)) {
	tick := time.NewTicker(viewEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		view, err := procs.FetchView(nil, v.node.HTTP(), viewTimeout)
		var unreachable bool
		var fault error
		if err == nil {
			unreachable, fault = checkView(view, v.addrs, v.clusterID, v.primary)
		}
		v.mu.Lock()
		v.obs.Views++
		if err == nil {
			v.obs.ViewsAnswered++
			if unreachable {
				v.obs.Unreachable++
			}
			if fault != nil {
				if v.obs.ViewFaults == 0 {
					v.obs.FirstFault = fault.Error()
				}
				v.obs.ViewFaults++
			}
		}
		if code, done := v.node.Exited(); done && !v.obs.Exited {
			v.obs.Exited, v.obs.ExitCode = true, code
		}
		v.mu.Unlock()
		if fault != nil && onFault != nil {
			onFault(fault.Error())
		}
	}
}
