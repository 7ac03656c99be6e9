package forward

import (
	"container/list"
	"time"
)

// Lookup is what the Primary's idempotency cache knows of a key.
type Lookup int

const (
	// Unknown: never begun here (or forgotten after its expiry).
	Unknown Lookup = iota
	// Running: begun here, not finished; the sender asks again later.
	Running
	// Finished: executed here; the Response is the first result.
	Finished
	// Full: every slot holds a running request; nothing was begun.
	Full
)

// Cache remembers, per Key, that a forwarded request is executing or what
// its first result was, so that a retry of the same key returns that
// result instead of executing again. It is a value over explicit instants
// (no clock of its own); it is not safe for concurrent use (Handler holds
// a lock around it).
//
// Bounds: at most Max keys. A finished key is forgotten TTL after it
// finished, or earlier — the oldest finished first — when a new key needs
// its slot (counted in Evicted). A running key is never forgotten: Begin
// answers Full when every slot runs. TTL must outlast a sender's retry
// window (OpcUa:WriteTimeout), the only time a sender asks again, and Max
// the keys that can finish in one TTL (Handler's in-flight limit per
// sender bounds that).
type Cache struct {
	ttl time.Duration
	max int

	keys map[Key]*cached
	done *list.List // finished keys, oldest finish first (so oldest expiry first)

	// Evicted counts finished keys forgotten before their TTL.
	Evicted uint64
}

type cached struct {
	res     Response
	running bool
	expires time.Time
	elem    *list.Element // in done; nil while running
}

// NewCache returns an empty cache; ttl and max must be positive.
func NewCache(ttl time.Duration, max int) *Cache {
	if ttl <= 0 || max <= 0 {
		panic("forward: an idempotency cache needs a positive TTL and size")
	}
	return &Cache{ttl: ttl, max: max, keys: make(map[Key]*cached), done: list.New()}
}

// Len is the number of keys remembered (running and finished).
func (c *Cache) Len() int { return len(c.keys) }

// Peek reports what the cache knows of k at now, and its first result when
// Finished. It begins nothing.
func (c *Cache) Peek(k Key, now time.Time) (Lookup, Response) {
	c.expire(now)
	e, ok := c.keys[k]
	switch {
	case !ok:
		return Unknown, Response{}
	case e.running:
		return Running, Response{}
	}
	return Finished, e.res
}

// Begin marks k running unless the cache already knows it (then it
// answers like Peek and begins nothing) or is Full. It answers Unknown
// when k was begun by this call.
func (c *Cache) Begin(k Key, now time.Time) (Lookup, Response) {
	if l, r := c.Peek(k, now); l != Unknown {
		return l, r
	}
	if len(c.keys) >= c.max {
		front := c.done.Front()
		if front == nil {
			return Full, Response{}
		}
		c.forget(front)
		c.Evicted++
	}
	c.keys[k] = &cached{running: true}
	return Unknown, Response{}
}

// Finish records k's first result; it must follow a Begin of k that
// answered Unknown.
func (c *Cache) Finish(k Key, res Response, now time.Time) {
	e, ok := c.keys[k]
	if !ok || !e.running {
		panic("forward: Finish of a key not begun")
	}
	e.running, e.res, e.expires = false, res, now.Add(c.ttl)
	e.elem = c.done.PushBack(k)
}

// expire forgets the finished keys whose TTL ended at or before now.
func (c *Cache) expire(now time.Time) {
	for f := c.done.Front(); f != nil; f = c.done.Front() {
		if c.keys[f.Value.(Key)].expires.After(now) {
			return
		}
		c.forget(f)
	}
}

func (c *Cache) forget(el *list.Element) {
	delete(c.keys, el.Value.(Key))
	c.done.Remove(el)
}
