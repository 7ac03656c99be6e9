package failover

import (
	"slices"
	"sync"
	"time"

	"github.com/otopcua/otopcua/demo"
)

// Recorder keeps every reading a subscribed client (demo.Watcher)
// reported: pass its Add as the watcher's callback. Its methods may be
// called from any goroutine.
type Recorder struct {
	mu sync.Mutex
	h  []demo.Reading // mu must be held.
}

// Add records a reading.
func (r *Recorder) Add(rd demo.Reading) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h = append(r.h, rd)
}

// History returns a copy of every reading so far.
func (r *Recorder) History() []demo.Reading {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.h)
}

// Since are the readings at or after since.
func (r *Recorder) Since(since time.Time) []demo.Reading {
	var out []demo.Reading
	for _, rd := range r.History() {
		if !rd.At.Before(since) {
			out = append(out, rd)
		}
	}
	return out
}

// Answered is how many of rounds had at least n targets answering (a
// sampler that never got an answer checked nothing).
func Answered(rounds []Round, n int) int {
	count := 0
	for _, rd := range rounds {
		ok := 0
		for _, o := range rd.Obs {
			if o.OK {
				ok++
			}
		}
		if ok >= n {
			count++
		}
	}
	return count
}
