package subscription

import (
	"runtime"
)

// retireSlice is how many items a retiring goroutine handles before it
// yields, and the largest deletion done inline by the deleting call.
const retireSlice = 1024

// retired is the work a deletion leaves behind: items to mark deleted and
// their Source registrations to cancel. Deletions under the engine's locks
// only detach the items (O(1) per subscription); this finishes the job with
// no engine lock held.
type retired struct {
	maps  []map[uint32]*item // whole item tables of deleted subscriptions
	items []*item            // single deleted items
}

func (r *retired) addMap(m map[uint32]*item) {
	if len(m) > 0 {
		r.maps = append(r.maps, m)
	}
}

func (r *retired) size() int {
	n := len(r.items)
	for _, m := range r.maps {
		n += len(m)
	}
	return n
}

// retire finishes r: inline when it is small, else on a goroutine of its
// own that works in slices of retireSlice items and yields between them,
// so that neither the caller (the engine goroutine when a subscription
// expires, a client's channel worker on delete) nor anyone else waits for a
// large subscription to go. Close waits for retiring goroutines. No engine
// lock may be held.
func (e *Engine) retire(r retired) {
	if r.size() <= retireSlice {
		r.run(false)
		return
	}
	e.retiring.Add(1)
	go func() {
		defer e.retiring.Done()
		r.run(true)
	}()
}

func (r retired) run(yield bool) {
	n := 0
	step := func(it *item) {
		it.mu.Lock()
		it.deleted = true
		it.disableLocked()
		it.mu.Unlock()
		if it.cancel != nil {
			it.cancel()
		}
		if n++; yield && n%retireSlice == 0 {
			runtime.Gosched()
		}
	}
	for _, it := range r.items {
		step(it)
	}
	for _, m := range r.maps {
		for _, it := range m {
			step(it)
		}
	}
}
