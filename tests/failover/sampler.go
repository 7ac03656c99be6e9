package failover

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Target is one node the Sampler reads.
type Target struct {
	Name      string
	ClusterID string
	// Read returns the node's Server.ServiceLevel now (an OPC UA Read), or
	// an error when it cannot (demo.Watcher.Read). It must honour ctx.
	Read func(ctx context.Context) (byte, error)
}

// Sampler is the drills' invariant sampler: every Every it reads the
// ServiceLevel of every target concurrently (each read bounded by
// Timeout, so a stopped or cut-off node simply has no value that round),
// keeps the rounds and feeds them to a OnePrimaryChecker. Its methods may
// be called from any goroutine.
type Sampler struct {
	every, timeout time.Duration

	mu      sync.Mutex
	targets []Target          // mu must be held.
	checker OnePrimaryChecker // mu must be held.
	rounds  []Round           // mu must be held.

	stop chan struct{}
	done chan struct{}
}

// NewSampler returns a stopped sampler.
func NewSampler(every, timeout time.Duration) *Sampler {
	return &Sampler{every: every, timeout: timeout}
}

// Add adds a target; it is read from the next round on.
func (s *Sampler) Add(t Target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.targets = append(s.targets, t)
}

// Start starts sampling; Stop ends it and waits for the round in flight.
func (s *Sampler) Start() {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop()
}

// Stop ends sampling. It may be called more than once.
func (s *Sampler) Stop() {
	if s.stop == nil {
		return
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

func (s *Sampler) loop() {
	defer close(s.done)
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		s.round()
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

func (s *Sampler) round() {
	s.mu.Lock()
	targets := slices.Clone(s.targets)
	s.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	r := Round{At: time.Now(), Obs: make([]Observation, len(targets))}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			level, err := t.Read(ctx)
			r.Obs[i] = Observation{Node: t.Name, ClusterID: t.ClusterID, Level: level, OK: err == nil}
		}()
	}
	wg.Wait()
	s.mu.Lock()
	s.rounds = append(s.rounds, r)
	s.checker.Observe(r)
	s.mu.Unlock()
}

// Allow tolerates two Primaries in clusterID (see OnePrimaryChecker.Allow).
func (s *Sampler) Allow(clusterID, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checker.Allow(clusterID, reason)
}

// Disallow ends an Allow.
func (s *Sampler) Disallow(clusterID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checker.Disallow(clusterID)
}

// Violations are the rounds so far with two Primaries in one ClusterId.
func (s *Sampler) Violations() []Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checker.Violations()
}

// Rounds returns a copy of every round so far.
func (s *Sampler) Rounds() []Round {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rounds)
}
