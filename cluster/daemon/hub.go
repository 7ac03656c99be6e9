package daemon

import (
	"slices"
	"sync"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
)

// Info is the daemon's view of its node beyond the membership state.
type Info struct {
	// Phase of the node (Idle, SeedJoining, TryingToJoin, Initialized,
	// Stopped).
	Phase node.Phase
	// Finished: the node stopped (see Result).
	Finished bool
	// Result is set once Finished.
	Result Result
}

// hub holds the latest state for readers and fans the published events
// out to subscribers on one goroutine. mu guards every field but done.
type hub struct {
	mu      sync.Mutex
	state   membership.State
	info    Info
	proven  []membership.UniqueAddress // node.Node.ProvenDead: never written in place
	queue   []seqEvent
	nextSeq uint64
	subs    map[int]*subscriber
	nextID  int
	wake    chan struct{}
	stopped bool
	done    chan struct{} // closed when the dispatcher goroutine returns
}

type seqEvent struct {
	seq uint64
	ev  membership.Event
}

type subscriber struct {
	fn   func(membership.Event)
	from uint64
}

func newHub(self membership.UniqueAddress) *hub {
	h := &hub{
		state: membership.State{Self: self},
		info:  Info{Phase: node.Idle},
		subs:  map[int]*subscriber{},
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	go h.dispatch()
	return h
}

// update installs the state reached after evs and the node's ProvenDead
// record (called by the actor; proven is never modified afterwards).
func (h *hub) update(st membership.State, info Info, proven []membership.UniqueAddress, evs []membership.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state, h.info, h.proven = st, info, proven
	if h.stopped {
		return
	}
	for _, ev := range evs {
		h.queue = append(h.queue, seqEvent{h.nextSeq, ev})
		h.nextSeq++
	}
	if len(evs) > 0 {
		select {
		case h.wake <- struct{}{}: // buffered: never blocks
		default:
		}
	}
}

func (h *hub) snapshot() (membership.State, Info) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state, h.info
}

// provenDead reports whether u is in the node's ProvenDead record as of
// the last update (which precedes the dispatch of that update's events).
func (h *hub) provenDead(u membership.UniqueAddress) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.proven, u)
}

func (h *hub) subscribe(fn func(membership.Event)) (membership.State, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.nextID
	h.nextID++
	h.subs[id] = &subscriber{fn: fn, from: h.nextSeq}
	return h.state, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, id)
	}
}

// dispatch delivers queued events in order, one at a time.
func (h *hub) dispatch() {
	defer close(h.done)
	for range h.wake {
		for {
			h.mu.Lock()
			if h.stopped {
				h.mu.Unlock()
				return
			}
			if len(h.queue) == 0 {
				h.mu.Unlock()
				break
			}
			e := h.queue[0]
			h.queue = h.queue[1:]
			var fns []func(membership.Event)
			for _, s := range h.subs {
				if s.from <= e.seq {
					fns = append(fns, s.fn)
				}
			}
			h.mu.Unlock()
			for _, fn := range fns {
				fn(e.ev)
			}
		}
	}
}

func (h *hub) stop() {
	h.mu.Lock()
	if !h.stopped {
		h.stopped = true
		close(h.wake)
	}
	h.mu.Unlock()
	<-h.done
}
