package woken

import (
	"errors"
	"time"
)

// Config is the fence's configuration; the host fills it from the cluster
// settings.
type Config struct {
	// Pause is Cluster:FailureDetector:AcceptableHeartbeatPause.
	Pause time.Duration
	// Expected is the number of nodes of the set: this one and
	// OpcUa:PeerApplicationUris.
	Expected int
	// Alone: the node is alone by configuration (a single-node set, or no
	// cluster at all): it has nobody to hear and is never woken.
	Alone bool
}

// Validate reports a Config the fence cannot run with.
func (c Config) Validate() error {
	switch {
	case c.Pause <= 0:
		return errors.New("woken: the pause must be positive")
	case c.Expected < 1:
		return errors.New("woken: a set has at least one node")
	}
	return nil
}

// Observation is what the driver read of the membership at one instant.
type Observation struct {
	// Peers are the members of this node's ClusterId other than itself,
	// whatever their status.
	Peers []Peer
}

// Peer is one member of the ClusterId as this node sees it.
type Peer struct {
	ID string
	// Heard: LastHeard is known (the daemon admitted a message from it).
	Heard     bool
	LastHeard time.Time
}

// Change is what one Tick changed, for the driver's log.
type Change struct {
	// Woke: this tick ended a gap of Gap; the fence is up.
	Woke bool
	Gap  time.Duration
	// Cleared: every peer was heard since the wake; the fence is down.
	Cleared bool
	// Missing are the peers not heard since the wake when Woke or while
	// the fence is up (for the log).
	Missing []string
}

// Fence is the woken-process fence of one node.
type Fence struct {
	cfg   Config
	det   *Detector
	woken bool // up since the last wake, until every peer was heard
}

// NewFence returns the fence of cfg (Validate first) at now: down.
func NewFence(cfg Config, now time.Time) *Fence {
	return &Fence{cfg: cfg, det: NewDetector(cfg.Pause, now)}
}

// Tick is the fence's timer: it notices a gap (the fence goes up) and
// takes it down once every peer was heard after the wake settled.
func (f *Fence) Tick(now time.Time, obs Observation) Change {
	var c Change
	if c.Gap, c.Woke = f.det.Tick(now); c.Woke && !f.cfg.Alone {
		f.woken = true
	}
	if !f.woken {
		c.Woke = false
		return c
	}
	c.Missing = f.missing(obs)
	if len(c.Missing) == 0 && !c.Woke {
		f.woken, c.Cleared = false, true
	}
	return c
}

// Woken reports whether the fence is up at now: the node woke from a gap
// (or its loop has not run for longer than the pause before now) and has
// not heard every peer since. It changes nothing.
func (f *Fence) Woken(now time.Time) bool {
	if f.cfg.Alone {
		return false
	}
	return f.woken || f.det.Frozen(now)
}

// WokeAt is the tick that ended the last gap (zero: none).
func (f *Fence) WokeAt() time.Time { return f.det.WokeAt() }

// missing lists the peers not heard after the wake settled, and a
// placeholder for each peer of the configured set the membership no longer
// lists.
func (f *Fence) missing(obs Observation) []string {
	since := f.det.Settled()
	var out []string
	heard := 0
	for _, p := range obs.Peers {
		if p.Heard && p.LastHeard.After(since) {
			heard++
			continue
		}
		out = append(out, p.ID)
	}
	for n := heard + len(out); n < f.cfg.Expected-1; n++ {
		out = append(out, "(a configured peer the membership does not list)")
	}
	return out
}
