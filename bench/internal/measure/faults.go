package measure

import "sync/atomic"

// Faults counts failures and keeps the text of the first one. It is safe
// for concurrent use; the zero value is ready.
type Faults struct {
	n     atomic.Uint64
	first atomic.Value // string
}

// Add counts one failure; text describes it and is kept when it is the
// first.
func (f *Faults) Add(text string) {
	if f.n.Add(1) == 1 {
		f.first.Store(text)
	}
}

// Count is the number of failures counted.
func (f *Faults) Count() uint64 { return f.n.Load() }

// First is the text of the first failure, "" when none was counted.
func (f *Faults) First() string {
	v, _ := f.first.Load().(string)
	return v
}
