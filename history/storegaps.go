package history

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// kindGap keys the back-fill gaps still open (Gap), so that a node
// restarted in the middle of a back-fill resumes it:
//
//	'g' ‖ id ‖ start → from ‖ end (flipped times, 8 bytes each)
const kindGap = 'g'

// Before returns tag's last sample with a time before t; false when there
// is none.
func (s *Store) Before(tag string, t int64) (Sample, bool, error) {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return Sample{}, false, ErrClosed
	}
	var best Sample
	found := false
	// The head first (see Read): its last sample before t.
	s.mu.Lock()
	id, ok := s.ids[tag]
	if ok {
		h := s.tags[id].head
		i, _ := slices.BinarySearchFunc(h, t, func(x Sample, t int64) int { return cmp.Compare(x.At, t) })
		if i > 0 {
			best, found = h[i-1], true
		}
	}
	s.mu.Unlock()
	if !ok {
		return Sample{}, false, nil
	}
	// The blocks: the last one that starts before t holds the latest
	// block sample before t (blocks do not overlap).
	bt, err := s.db.NewIter(&pebble.IterOptions{LowerBound: blockKey(id, math.MinInt64), UpperBound: blockKey(id, t)})
	if err != nil {
		return Sample{}, false, err
	}
	defer bt.Close()
	if bt.Last() {
		_, xs, err := decodeBlock(bt.Value())
		if err != nil {
			return Sample{}, false, fmt.Errorf("history: block %x: %w", bt.Key(), err)
		}
		i := len(xs) - 1
		for i >= 0 && xs[i].At >= t {
			i--
		}
		switch {
		case i < 0:
		case !found || xs[i].At > best.At:
			best, found = xs[i], true
		case xs[i].At == best.At:
			best = mergeSamples([]Sample{xs[i]}, []Sample{best})[0]
		}
	}
	return best, found, bt.Error()
}

// First returns tag's first sample with a time at or after t; false when
// there is none.
func (s *Store) First(tag string, t int64) (Sample, bool, error) {
	var x Sample
	found := false
	err := s.Read(tag, t, math.MaxInt64, func(y Sample) bool { x, found = y, true; return false })
	return x, found, err
}

// Gaps lists the back-fill gaps stored (PutGap), by tag and start.
func (s *Store) Gaps() ([]Gap, error) {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.mu.Lock()
	names := make(map[uint32]string, len(s.ids))
	for n, id := range s.ids {
		names[id] = n
	}
	s.mu.Unlock()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindGap}, UpperBound: []byte{kindGap + 1}})
	if err != nil {
		return nil, err
	}
	var out []Gap
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != 13 || len(v) != 16 {
			_ = it.Close()
			return nil, fmt.Errorf("history: gap %x: damaged", k)
		}
		name, ok := names[binary.BigEndian.Uint32(k[1:])]
		if !ok {
			continue // a tag named in a batch that failed
		}
		out = append(out, Gap{Tag: name, Start: unflip(binary.BigEndian.Uint64(k[5:])),
			From: unflip(binary.BigEndian.Uint64(v)), End: unflip(binary.BigEndian.Uint64(v[8:]))})
	}
	return out, it.Close()
}

// PutGaps stores gs (each replacing the gap of its tag and start) in one
// synced batch. A gap names its tag, so that it is kept before the tag's
// first sample.
func (s *Store) PutGaps(gs ...Gap) error {
	return s.gapBatch(gs, func(b *pebble.Batch, k []byte, g Gap) error {
		v := binary.BigEndian.AppendUint64(nil, flip(g.From))
		return b.Set(k, binary.BigEndian.AppendUint64(v, flip(g.End)), nil)
	})
}

// DeleteGap removes the gap of g's tag and start.
func (s *Store) DeleteGap(g Gap) error {
	return s.gapBatch([]Gap{g}, func(b *pebble.Batch, k []byte, _ Gap) error { return b.Delete(k, nil) })
}

// gapBatch writes fn's change of each gap's key in one synced batch,
// naming the tags the store does not know yet.
func (s *Store) gapBatch(gs []Gap, fn func(b *pebble.Batch, k []byte, g Gap) error) error {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	var named []string
	for _, g := range gs {
		s.mu.Lock()
		id, isNew, err := s.name(b, g.Tag)
		s.mu.Unlock()
		if isNew {
			named = append(named, g.Tag)
		}
		if err == nil {
			err = fn(b, timeKey(kindGap, id, g.Start), g)
		}
		if err != nil {
			s.forgetLocked(named)
			return err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		s.forgetLocked(named)
		return fmt.Errorf("history: back-fill gaps: %w", err)
	}
	return nil
}

// name returns tag's id, naming it in b when the store does not know it
// (named); wmu and mu must be held. The caller forgets a name given when b is not
// committed.
func (s *Store) name(b *pebble.Batch, tag string) (id uint32, named bool, err error) {
	if id, ok := s.ids[tag]; ok {
		return id, false, nil
	}
	if len(s.ids) >= MaxTags {
		return 0, false, fmt.Errorf("history: more than %d tags", MaxTags)
	}
	id = s.next
	s.next++
	s.ids[tag] = id
	s.tags[id] = &tagState{lastBlock: math.MinInt64}
	return id, true, b.Set(nameKey(tag), binary.BigEndian.AppendUint32(nil, id), nil)
}
