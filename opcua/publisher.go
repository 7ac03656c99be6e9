package opcua

import (
	"sync"
)

// ServiceLevelPublisher receives every ServiceLevel the redundancy layer
// computes. Publish may be called from any goroutine, concurrently, and must
// not block on I/O.
type ServiceLevelPublisher interface {
	Publish(level byte)
}

var (
	_ ServiceLevelPublisher = NullServiceLevelPublisher{}
	_ ServiceLevelPublisher = (*DeferredServiceLevelPublisher)(nil)
	_ ServiceLevelPublisher = (*ServerServiceLevelPublisher)(nil)
)

// NullServiceLevelPublisher drops every level: for a node that serves no
// OPC UA endpoint.
type NullServiceLevelPublisher struct{}

// Publish drops level.
func (NullServiceLevelPublisher) Publish(byte) {}

// DeferredServiceLevelPublisher lets the redundancy layer publish before the
// OPC UA server exists: it keeps the latest level until Bind names the real
// publisher, hands that level over at once, and forwards every later one.
// It is safe for concurrent use; calls to the bound publisher are
// serialised, so it sees levels in the order Publish accepted them and
// never an older level after a newer one. The zero value is ready to use.
type DeferredServiceLevelPublisher struct {
	mu     sync.Mutex
	target ServiceLevelPublisher // mu must be held.
	latest byte                  // mu must be held.
	has    bool                  // a level arrived before Bind; mu must be held.
}

// Publish forwards level to the bound publisher, or keeps it as the latest
// until Bind.
func (d *DeferredServiceLevelPublisher) Publish(level byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.latest, d.has = level, true
	if d.target != nil {
		d.target.Publish(level)
	}
}

// Bind makes target the publisher every level goes to and hands it the
// latest level published so far, if any. Binding again replaces the target
// (the new one also gets the latest level); Bind(nil) returns to buffering.
func (d *DeferredServiceLevelPublisher) Bind(target ServiceLevelPublisher) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.target = target
	if target != nil && d.has {
		target.Publish(d.latest)
	}
}

// Latest returns the last level published and whether there was one.
func (d *DeferredServiceLevelPublisher) Latest() (level byte, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.latest, d.has
}

// ServerServiceLevelPublisher writes every level into a server's
// Server.ServiceLevel node (and its RedundantServerArray entry).
type ServerServiceLevelPublisher struct {
	s *Server
}

// NewServerServiceLevelPublisher returns the publisher of s.
func NewServerServiceLevelPublisher(s *Server) *ServerServiceLevelPublisher {
	return &ServerServiceLevelPublisher{s: s}
}

// Publish sets s's ServiceLevel to level.
func (p *ServerServiceLevelPublisher) Publish(level byte) { p.s.SetServiceLevel(level) }
