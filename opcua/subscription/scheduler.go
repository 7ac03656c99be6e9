package subscription

import (
	"container/heap"
	"slices"
	"sync"
	"time"
)

// scheduler is the deadline heap of every subscription: the single engine
// goroutine (Engine.run) pops the subscriptions whose deadline has come and
// works them. Deadlines only move earlier through at; a subscription woken
// early finds nothing due and reports its real next deadline.
//
// mu is a leaf lock: nothing else is acquired while it is held.
type scheduler struct {
	mu   sync.Mutex
	subs subHeap       // guarded by mu
	kick chan struct{} // capacity 1: a deadline moved earlier
}

func newScheduler() *scheduler {
	return &scheduler{kick: make(chan struct{}, 1)}
}

// at makes sure s is worked no later than t.
func (sc *scheduler) at(s *subscription, t time.Time) { sc.atAll(t, s) }

// atAll makes sure every one of subs is worked no later than t, in one step:
// the engine goroutine sees all of them due together, so it can order them
// by Priority (a Publish request that finds several late subscriptions goes
// to the highest-priority one).
func (sc *scheduler) atAll(t time.Time, subs ...*subscription) {
	sc.mu.Lock()
	earlier := false
	for _, s := range subs {
		switch {
		case s.heapIdx < 0:
			s.due = t
			heap.Push(&sc.subs, s)
			earlier = true
		case t.Before(s.due):
			s.due = t
			heap.Fix(&sc.subs, s.heapIdx)
			earlier = true
		}
	}
	sc.mu.Unlock()
	if earlier {
		select {
		case sc.kick <- struct{}{}:
		default:
		}
	}
}

// remove forgets s.
func (sc *scheduler) remove(s *subscription) {
	sc.mu.Lock()
	if s.heapIdx >= 0 {
		heap.Remove(&sc.subs, s.heapIdx)
	}
	sc.mu.Unlock()
}

// popDue removes and returns every subscription due at now, highest
// Priority first, then earliest deadline.
func (sc *scheduler) popDue(now time.Time) []*subscription {
	sc.mu.Lock()
	var due []*subscription
	for len(sc.subs) > 0 && !sc.subs[0].due.After(now) {
		due = append(due, heap.Pop(&sc.subs).(*subscription))
	}
	sc.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *subscription) int {
		return int(b.priority.Load()) - int(a.priority.Load())
	})
	return due
}

// next returns the earliest deadline, or false when nothing is scheduled.
func (sc *scheduler) next() (time.Time, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.subs) == 0 {
		return time.Time{}, false
	}
	return sc.subs[0].due, true
}

// subHeap orders subscriptions by due; scheduler.mu must be held.
type subHeap []*subscription

func (h subHeap) Len() int           { return len(h) }
func (h subHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h subHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *subHeap) Push(x any) {
	s := x.(*subscription)
	s.heapIdx = len(*h)
	*h = append(*h, s)
}
func (h *subHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	s.heapIdx = -1
	*h = old[:len(old)-1]
	return s
}
