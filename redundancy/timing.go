package redundancy

import "time"

// Timings of the redundancy runtime.
const (
	// DebounceQuiet is how long the admin singleton waits after the last
	// membership event before it publishes a snapshot.
	DebounceQuiet = 250 * time.Millisecond
	// DebounceMax bounds the wait under a steady stream of events: a
	// snapshot goes out at most this long after the first unpublished
	// event.
	DebounceMax = time.Second
	// RepublishEvery is the snapshot heartbeat: pub/sub does not replay to
	// late subscribers, so the singleton republishes the current snapshot
	// this often.
	RepublishEvery = 10 * time.Second
	// HealthTick is how often each driver node recomputes its ServiceLevel
	// and publishes its NodeStatus.
	HealthTick = 5 * time.Second
)

// DebounceDeadline is when a debounced publish is due: quiet after the last
// event, but never later than max after the first event not yet published
// (pendingSince). Both times are on the caller's clock.
func DebounceDeadline(pendingSince, lastEvent time.Time, quiet, max time.Duration) time.Time {
	due := lastEvent.Add(quiet)
	if limit := pendingSince.Add(max); limit.Before(due) {
		return limit
	}
	return due
}
