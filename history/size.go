package history

import (
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Shrunk is what one Shrink removed.
type Shrunk struct {
	// Over is how far the store was over its limit, in bytes (≤ 0: within
	// it, and nothing was removed).
	Over int64
	// Blocks and Samples removed, Bytes their encoded size; Before is the
	// time every sample removed was older than or at (the newest removed).
	Blocks, Samples int
	Bytes           int64
	Before          int64
}

// Shrink removes the store's oldest blocks — of every tag, oldest first
// by their first sample — until the blocks removed add up to how far the
// store is over maxBytes, at most limit blocks a call (the caller calls
// again while Over stays above 0). The size compared is the LSM store's
// on disk less what the deletions already made will free once it
// compacts them, so that a call does not remove again what an earlier one
// removed; the journal, which blocks do not shrink, is not counted. Heads
// (the newest samples of each tag) are never removed.
func (s *Store) Shrink(maxBytes int64, limit int) (Shrunk, error) {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return Shrunk{}, ErrClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	m := s.db.Metrics()
	g := m.Table.Garbage.PointDeletionsBytesEstimate + m.Table.Garbage.RangeDeletionsBytesEstimate
	r := Shrunk{Over: int64(m.DiskSpaceUsage()) - int64(g) - maxBytes, Before: math.MinInt64}
	if r.Over <= 0 {
		return r, nil
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindBlock}, UpperBound: []byte{kindBlock + 1}})
	if err != nil {
		return r, err
	}
	defer it.Close()
	// The first block of every tag, then the next block of the tag whose
	// block was taken.
	var q oldest
	s.mu.Lock()
	ids := make([]uint32, 0, len(s.tags))
	for id := range s.tags {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		if it.SeekGE(blockKey(id, math.MinInt64)) && binary.BigEndian.Uint32(it.Key()[1:]) == id {
			q = append(q, candidate(it))
		}
	}
	heap.Init(&q)
	b := s.db.NewBatch()
	defer b.Close()
	for len(q) > 0 && r.Bytes < r.Over && r.Blocks < limit {
		c := heap.Pop(&q).(blockRef)
		if err := b.Delete(c.key, nil); err != nil {
			return r, err
		}
		r.Blocks++
		r.Samples += c.samples
		r.Bytes += c.size
		r.Before = max(r.Before, c.last)
		if it.SeekGE(append(c.key, 0)) && binary.BigEndian.Uint32(it.Key()[1:]) == binary.BigEndian.Uint32(c.key[1:]) {
			heap.Push(&q, candidate(it))
		}
	}
	if err := it.Error(); err != nil {
		return r, err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return r, fmt.Errorf("history: size limit: %w", err)
	}
	return r, nil
}

// blockRef is a block Shrink may remove.
type blockRef struct {
	key         []byte
	first, last int64
	samples     int
	size        int64
}

// candidate is the block at it.
func candidate(it *pebble.Iterator) blockRef {
	k, v := it.Key(), it.Value()
	c := blockRef{key: slices.Clone(k), first: unflip(binary.BigEndian.Uint64(k[5:13])), size: int64(len(k) + len(v))}
	if len(v) >= 8 {
		c.last = unflip(binary.BigEndian.Uint64(v))
		// A block starts with its version byte and its count (package
		// block); a damaged one counts as none.
		if len(v) > 9 {
			if n, w := binary.Uvarint(v[9:]); w > 0 {
				c.samples = int(min(n, math.MaxInt32))
			}
		}
	}
	return c
}

// oldest is a heap of blocks, the one with the oldest first sample on top
// (of two, the one of the tag named first).
type oldest []blockRef

func (q oldest) Len() int { return len(q) }
func (q oldest) Less(i, j int) bool {
	return cmp.Or(cmp.Compare(q[i].first, q[j].first), bytes.Compare(q[i].key, q[j].key)) < 0
}
func (q oldest) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *oldest) Push(x any)   { *q = append(*q, x.(blockRef)) }
func (q *oldest) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
