package drivers

import "time"

// Back-off between connects after failures.
const (
	BackoffMin = 100 * time.Millisecond
	BackoffMax = 5 * time.Second
)

// Backoff is how long to wait before the next connect after failures
// consecutive failures: 0 for none, then BackoffMin doubling per failure up
// to BackoffMax (100 ms, 200 ms, 400 ms, … 3.2 s, 5 s, 5 s, …).
func Backoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := BackoffMin
	for i := 1; i < failures; i++ {
		d *= 2
		if d >= BackoffMax {
			return BackoffMax
		}
	}
	return d
}
