package forward

// Limit bounds the requests in flight: TryAcquire takes a slot or answers
// false at once (no queue), Release returns it. Safe for concurrent use.
type Limit chan struct{}

// NewLimit returns a limit of n slots (n > 0).
func NewLimit(n int) Limit {
	if n <= 0 {
		panic("forward: a limit needs at least one slot")
	}
	return make(Limit, n)
}

// TryAcquire takes a slot if one is free.
func (l Limit) TryAcquire() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release returns a slot taken by TryAcquire.
func (l Limit) Release() { <-l }

// InFlight is the number of slots taken.
func (l Limit) InFlight() int { return len(l) }
