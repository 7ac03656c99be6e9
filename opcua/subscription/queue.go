package subscription

import (
	"github.com/gopcua/opcua/ua"
)

// overflowBits is the InfoType DataValue (0x400) plus the Overflow bit (0x80)
// of a StatusCode (Part 4 §7.39), set on a queued value when values were
// discarded next to it (Part 4 §5.13.1.5).
const overflowBits ua.StatusCode = 0x0480

// ring is a FIFO of T in a circular buffer that grows on demand (doubling,
// up to limit when one is given), so a queue of 10000 costs nothing until
// values pile up. The zero value is an empty ring. Not safe for concurrent
// use: the owning item's mu guards it.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (q *ring[T]) len() int { return q.n }

func (q *ring[T]) at(i int) T { return q.buf[(q.head+i)%len(q.buf)] }

func (q *ring[T]) set(i int, v T) { q.buf[(q.head+i)%len(q.buf)] = v }

// pushBack appends v, growing the buffer to at most limit slots (0: no
// limit) when it is full.
func (q *ring[T]) pushBack(v T, limit int) {
	if q.n == len(q.buf) {
		q.grow(limit)
	}
	q.n++
	q.set(q.n-1, v)
}

// pushFront puts v before the oldest element.
func (q *ring[T]) pushFront(v T) {
	if q.n == len(q.buf) {
		q.grow(0)
	}
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.n++
	q.buf[q.head] = v
}

// grow doubles the ring (at least 1, at most limit when limit > 0)
// keeping the order.
func (q *ring[T]) grow(limit int) {
	size := max(2*len(q.buf), 1)
	if limit > 0 {
		size = min(size, limit)
	}
	nb := make([]T, size)
	for i := range q.n {
		nb[i] = q.at(i)
	}
	q.buf, q.head = nb, 0
}

// pop removes and returns the oldest element.
func (q *ring[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v
}

// popBack removes and returns the newest element.
func (q *ring[T]) popBack() T {
	var zero T
	v := q.at(q.n - 1)
	q.set(q.n-1, zero)
	q.n--
	return v
}

// clear empties the ring and releases its buffer.
func (q *ring[T]) clear() { *q = ring[T]{} }

// valueQueue is the bounded FIFO of one data monitored item. The zero
// value is an empty queue. Not safe for concurrent use: the owning item's
// mu guards it.
type valueQueue struct {
	ring[*ua.DataValue]
}

// push appends dv to a queue holding at most size values. When the queue is
// full, discardOldest drops the oldest value and flags the new oldest with
// the overflow bit; otherwise the newest value is replaced by dv, flagged.
// A queue of size 1 is a plain "latest value" buffer and never flags
// (Part 4 §5.13.1.5). It reports whether a value was discarded.
func (q *valueQueue) push(dv *ua.DataValue, size int, discardOldest bool) (overflow bool) {
	if q.n < size {
		q.pushBack(dv, size)
		return false
	}
	switch {
	case size == 1:
		q.set(q.n-1, dv)
		return true
	case discardOldest:
		q.pop()
		q.pushBack(dv, size)
		q.set(0, withOverflow(q.at(0)))
	default:
		q.set(q.n-1, withOverflow(dv))
	}
	return true
}

// shrink trims the queue to size values after the queue size was reduced:
// discardOldest keeps the newest values, otherwise the oldest are kept. The
// value next to the discarded ones gets the overflow bit (unless size is 1).
func (q *valueQueue) shrink(size int, discardOldest bool) {
	if q.n <= size {
		return
	}
	keep := make([]*ua.DataValue, size)
	off := 0
	if discardOldest {
		off = q.n - size
	}
	for i := range size {
		keep[i] = q.at(off + i)
	}
	if size > 1 {
		if discardOldest {
			keep[0] = withOverflow(keep[0])
		} else {
			keep[size-1] = withOverflow(keep[size-1])
		}
	}
	q.buf, q.head, q.n = keep, 0, size
}

// withOverflow returns dv with the overflow info bits set. DataValues handed
// over by the Source are shared, so the flagged value is a copy.
func withOverflow(dv *ua.DataValue) *ua.DataValue {
	if dv.Status&overflowBits == overflowBits {
		return dv
	}
	c := *dv
	c.Status |= overflowBits
	c.EncodingMask |= ua.DataValueStatusCode
	return &c
}
