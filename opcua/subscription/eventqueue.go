package subscription

import (
	"github.com/gopcua/opcua/ua"
)

// evEntry is one queued event notification: the event's fields in select
// clause order. overflow marks the EventQueueOverflowEventType event the
// queue inserted itself.
type evEntry struct {
	fields   []*ua.Variant
	overflow bool
}

// eventQueue is the bounded FIFO of one event monitored item (Part 4
// §5.12.1.5). It holds at most size events; when one more arrives, an
// event is discarded by the item's policy and an EventQueueOverflowEvent
// marks the gap, without itself taking the place of an event ("generated
// when the first Event has to be discarded, without discarding any other
// Event"):
//
//   - discardOldest: the oldest event goes; the overflow event stands at
//     the head of the queue, where it tells the client that what preceded
//     the next event is lost. While it is still there, further overflows
//     add no second one.
//   - otherwise the newest queued event is replaced by the new one; the
//     overflow event stands just before the newest event, and again only
//     one stands there.
//
// The zero value is an empty queue. Not safe for concurrent use: the
// owning item's mu guards it.
type eventQueue struct {
	ring[evEntry]
	events int // entries that are not overflow events
}

// push queues e in a queue of size events; overflow makes the overflow
// event's entry when one must be inserted. It reports whether an event was
// discarded.
func (q *eventQueue) push(e evEntry, size int, discardOldest bool, overflow func() evEntry) (discarded bool) {
	if q.events < size {
		q.pushBack(e, 0)
		q.events++
		return false
	}
	if discardOldest {
		// Drop the oldest event and any overflow events before it; one
		// overflow event goes back to the head.
		ov, had := q.dropFront()
		if q.n == 0 || !q.at(0).overflow {
			if !had {
				ov = overflow()
			}
			q.pushFront(ov)
		}
	} else {
		// Drop the newest event (and overflow events after it, which a
		// change of policy may leave); one stands before the new event.
		q.dropBack()
		if q.n == 0 || !q.at(q.n-1).overflow {
			q.pushBack(overflow(), 0)
		}
	}
	q.pushBack(e, 0)
	return true
}

// dropFront removes entries from the head up to and including the oldest
// event, returning an overflow event it removed on the way.
func (q *eventQueue) dropFront() (ov evEntry, had bool) {
	for q.n > 0 {
		x := q.pop()
		if !x.overflow {
			return ov, had
		}
		ov, had = x, true
	}
	return ov, had
}

// dropBack removes entries from the tail up to and including the newest
// event.
func (q *eventQueue) dropBack() {
	for q.n > 0 {
		if x := q.popBack(); !x.overflow {
			return
		}
	}
}

// popEntry removes and returns the oldest entry.
func (q *eventQueue) popEntry() evEntry {
	e := q.pop()
	if !e.overflow {
		q.events--
	}
	return e
}

// shrink applies a reduced queue size: the entries are queued again in
// order, so the policy decides which go and where the overflow event
// stands.
func (q *eventQueue) shrink(size int, discardOldest bool, overflow func() evEntry) {
	if q.events <= size {
		return
	}
	old := *q
	*q = eventQueue{}
	for range old.n {
		e := old.pop()
		if !e.overflow {
			q.push(e, size, discardOldest, overflow)
			continue
		}
		if q.n == 0 || !q.at(q.n-1).overflow {
			q.pushBack(e, 0)
		}
	}
}

// clear empties the queue.
func (q *eventQueue) clear() { *q = eventQueue{} }
