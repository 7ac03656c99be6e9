package subscription

import (
	"math"
	"time"
)

// This file holds the pure functions that turn requested subscription and
// monitored-item parameters into the revised values the engine runs with.
// They take the limits explicitly so that a table test can pin them.

// limits are the server-side bounds applied to client requests. They are
// filled from Options by New.
type limits struct {
	minPublishing, maxPublishing time.Duration
	minSampling, maxSampling     time.Duration
	maxQueueSize                 uint32
	defaultEvQueue               uint32
	defaultKeepAlive             uint32
	maxKeepAlive                 uint32
	maxLifetime                  time.Duration
	maxNotifications             uint32
}

// msToDuration converts an OPC UA Duration (milliseconds as a double) to a
// time.Duration, saturating at the int64 range. NaN converts to 0.
func msToDuration(ms float64) time.Duration {
	switch {
	case math.IsNaN(ms):
		return 0
	case ms >= float64(math.MaxInt64/int64(time.Millisecond)):
		return math.MaxInt64
	case ms <= float64(math.MinInt64/int64(time.Millisecond)):
		return math.MinInt64
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// durationToMS converts back to the wire representation.
func durationToMS(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// revisePublishingInterval clamps the requested interval (milliseconds) to
// [minPublishing, maxPublishing]. Zero, negative and NaN requests get the
// fastest supported interval (Part 4 §5.13.2.2).
func (l limits) revisePublishingInterval(ms float64) time.Duration {
	d := msToDuration(ms)
	if d < l.minPublishing {
		return l.minPublishing
	}
	if d > l.maxPublishing {
		return l.maxPublishing
	}
	return d
}

// reviseCounts revises MaxKeepAliveCount and LifetimeCount for a
// subscription publishing every interval:
//   - keep-alive 0 becomes defaultKeepAlive; it is capped at maxKeepAlive;
//   - lifetime is at least 3 × keep-alive (Part 4 §5.13.2.2), and otherwise
//     capped so that lifetime × interval stays within maxLifetime.
func (l limits) reviseCounts(lifetime, keepAlive uint32, interval time.Duration) (revLifetime, revKeepAlive uint32) {
	keepAlive = cmpClamp(keepAlive, l.defaultKeepAlive, l.maxKeepAlive)
	minLifetime := 3 * keepAlive
	maxLifetime := uint32(math.MaxUint32)
	if interval > 0 {
		if n := int64(l.maxLifetime / interval); n < int64(maxLifetime) {
			maxLifetime = uint32(max(n, 1))
		}
	}
	maxLifetime = max(maxLifetime, minLifetime)
	return min(max(lifetime, minLifetime), maxLifetime), keepAlive
}

// cmpClamp returns v clamped to [1, hi], with 0 replaced by def.
func cmpClamp(v, def, hi uint32) uint32 {
	if v == 0 {
		v = def
	}
	return min(max(v, 1), hi)
}

// reviseSamplingInterval revises a monitored item's sampling interval:
// negative or NaN requests take the subscription's publishing interval; 0
// stays 0 (exception based: every change is queued) when the item is watched,
// and becomes the publishing interval when it is polled; anything else is
// clamped to [minSampling, maxSampling].
func (l limits) reviseSamplingInterval(ms float64, publishing time.Duration, polled bool) time.Duration {
	var d time.Duration
	switch {
	case math.IsNaN(ms) || ms < 0:
		d = publishing
	case ms == 0 && !polled:
		return 0
	case ms == 0:
		d = publishing
	default:
		d = msToDuration(ms)
	}
	return min(max(d, l.minSampling), l.maxSampling)
}

// reviseQueueSize maps 0 to 1 and caps the size at maxQueueSize.
func (l limits) reviseQueueSize(n uint32) uint32 {
	return min(max(n, 1), l.maxQueueSize)
}

// reviseEventQueueSize revises the queue size of an event item (Part 4
// §7.16): 0 is the server's default, anything else is capped at
// maxQueueSize (1 is the minimum, MaxUInt32 the maximum, as asked).
func (l limits) reviseEventQueueSize(n uint32) uint32 {
	if n == 0 {
		return max(l.defaultEvQueue, 1)
	}
	return min(n, l.maxQueueSize)
}

// reviseMaxNotifications combines the client's MaxNotificationsPerPublish
// with the server's cap; 0 means unlimited on both sides.
func (l limits) reviseMaxNotifications(n uint32) uint32 {
	switch {
	case l.maxNotifications == 0:
		return n
	case n == 0:
		return l.maxNotifications
	}
	return min(n, l.maxNotifications)
}
