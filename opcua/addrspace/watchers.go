package addrspace

import (
	"slices"
	"sync"
	"sync/atomic"
)

// watchList is the watcher list of one Variable (values) or one event
// notifier (events). Adding and cancelling a watcher are O(1) under mu
// (append, and swap-remove through the watcher's index) and mark the
// snapshot stale; the next notify rebuilds the snapshot once, so creating
// or deleting n watchers costs O(n) in total however many there are, and a
// notify between edits pays one copy of the list, which it walks anyway.
// notify calls the watchers with no lock held. The zero value is an empty
// list.
type watchList[T any] struct {
	snap  atomic.Pointer[[]*watcher[T]] // immutable; nil when there are none
	stale atomic.Bool                   // snap lags list

	mu   sync.Mutex    // serialises edits of list and snapshot rebuilds
	list []*watcher[T] // mu must be held.
}

type watcher[T any] struct {
	fn  func(T)
	idx int // position in watchList.list, -1 once removed; watchList.mu must be held.
}

// add registers fn and returns its cancel function, which may be called
// more than once.
func (l *watchList[T]) add(fn func(T)) (cancel func()) {
	w := &watcher[T]{fn: fn}
	l.mu.Lock()
	w.idx = len(l.list)
	l.list = append(l.list, w)
	l.stale.Store(true)
	l.mu.Unlock()

	var once sync.Once
	return func() { once.Do(func() { l.remove(w) }) }
}

func (l *watchList[T]) remove(w *watcher[T]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := w.idx
	if i < 0 || i >= len(l.list) || l.list[i] != w {
		return
	}
	last := len(l.list) - 1
	l.list[i] = l.list[last]
	l.list[i].idx = i
	l.list[last] = nil
	l.list = l.list[:last]
	w.idx = -1
	if len(l.list) == 0 {
		l.list = nil // let a once-huge backing array go
	} else if cap(l.list) > 64 && len(l.list) < cap(l.list)/4 {
		l.list = slices.Clone(l.list)
	}
	l.stale.Store(true)
}

// notify calls every watcher with v, synchronously, with no lock held.
func (l *watchList[T]) notify(v T) {
	if ws := l.snapshot(); ws != nil {
		for _, w := range *ws {
			w.fn(v)
		}
	}
}

// snapshot returns the current watchers, rebuilding the snapshot first
// when an edit made it stale.
func (l *watchList[T]) snapshot() *[]*watcher[T] {
	if !l.stale.Load() {
		return l.snap.Load()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale.Load() {
		if len(l.list) == 0 {
			l.snap.Store(nil)
		} else {
			next := slices.Clone(l.list)
			l.snap.Store(&next)
		}
		l.stale.Store(false)
	}
	return l.snap.Load()
}

// len returns the number of watchers.
func (l *watchList[T]) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.list)
}
