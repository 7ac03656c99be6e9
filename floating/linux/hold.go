package linux

import (
	"sync"
	"time"
)

// hold is whether this process answers ARP/ND for the address: only while
// it holds the address (seized, not released) and its hold is current (the
// node's loop renewed it after its last successful heartbeat). A process
// that was frozen longer than its hold wakes silent, and stays silent until
// its loop renews or releases.
//
// The decision is answers, a pure function of the state and an instant;
// the responder asks it with a reading of the monotonic clock just before
// every answer.
type hold struct {
	mu    sync.Mutex
	state holdState // mu must be held.
}

// holdState is hold's value.
type holdState struct {
	// Holding: the address was added to lo by a seize and not released.
	Holding bool
	// Until: the end of the hold (monotonic); zero = never renewed.
	Until time.Time
}

// answers is the responder's rule:
//
//	holding   now < until   answers
//	no        any           no  (released, or never seized)
//	yes       no            no  (the hold lapsed: a freeze, a hung loop)
//	yes       yes           yes
func (s holdState) answers(now time.Time) bool {
	return s.Holding && now.Before(s.Until)
}

// take marks the address held until until (a seize, after it is on lo).
func (h *hold) take(until time.Time) {
	h.mu.Lock()
	h.state = holdState{Holding: true, Until: until}
	h.mu.Unlock()
}

// renew moves the end of the hold; it does not make a released address
// held again.
func (h *hold) renew(until time.Time) {
	h.mu.Lock()
	h.state.Until = until
	h.mu.Unlock()
}

// drop marks the address released (before it leaves lo).
func (h *hold) drop() {
	h.mu.Lock()
	h.state = holdState{}
	h.mu.Unlock()
}

func (h *hold) get() holdState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}
