package history

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/otopcua/otopcua/history/block"
)

// Sample is one recorded value: a time in OPC UA ticks (100 ns since
// 1601-01-01 UTC), the value and its status code.
type Sample = block.Sample

// Record is one sample of one tag, as the recorder appends it.
type Record struct {
	Tag string // "device/tag"
	Sample
}

// StoreOptions configure Open.
type StoreOptions struct {
	// Dir is the store's directory, created when missing.
	Dir string
	// BlockSamples is how many samples of a tag make a block. Default 256.
	BlockSamples int
	// CacheBytes and MemTableBytes size the embedded LSM store's block
	// cache and write buffer. Defaults 2 MiB and 2 MiB: a node records far
	// more than it reads back, and an idle node should stay small.
	CacheBytes, MemTableBytes int64
	Logger                    *slog.Logger
}

// MaxTags bounds the tags a store names (the deployment's own cap is
// 100,000).
const MaxTags = 1 << 20

// ErrClosed is returned by every call after Close.
var ErrClosed = errors.New("history: store closed")

// Store is one node's history: per tag, a head of recent samples (one key
// each) and the older ones in blocks (package block). Appending a sample
// whose tag and time the store holds already keeps one of the two — the
// one that sorts first by (status, value bits), so that two stores given
// the same samples in any order hold the same history.
//
// Key layout (one byte of kind, then big-endian fields; a time is its
// int64 with the sign bit flipped, so that keys sort by time):
//
//	'n' ‖ name          → tag id (4 bytes)
//	'h' ‖ id ‖ time ‖ status (4) ‖ value bits (8) → nothing
//	'b' ‖ id ‖ first    → block (last time ‖ block.Encode)
//
// A head key holds the whole sample, so that two candidates for one
// identity are both kept until a read or a compaction picks the one whose
// key sorts first — no read before a write. Blocks of one tag never
// overlap in time; head samples may be older than the last block (late
// samples, a peer's back-fill) until the tag's next compaction merges them
// in.
//
// Store is safe for concurrent use; Append and Compact serialise on one
// lock, reads take none beyond the LSM store's own.
type Store struct {
	db  *pebble.DB
	per int
	log *slog.Logger
	// open is held shared by every call that uses db, exclusively by
	// Close: a read in progress never sees the store closed under it.
	open   sync.RWMutex
	closed bool              // open must be held
	mu     sync.Mutex        // Append, Compact and the maps below
	ids    map[string]uint32 // tag name → id
	tags   map[uint32]*tagState
	next   uint32
}

// tagState is what the store keeps in memory of one tag. mu must be held.
type tagState struct {
	head      int   // samples in the head
	oldest    int64 // oldest head time (valid when head > 0)
	lastBlock int64 // last time of the last block; math.MinInt64 when none
}

const (
	kindName  = 'n'
	kindHead  = 'h'
	kindBlock = 'b'
)

// Open opens (or creates) the store at o.Dir and reads what it holds of
// each tag (head counts, last block times).
func Open(o StoreOptions) (*Store, error) {
	if o.BlockSamples <= 0 {
		o.BlockSamples = 256
	}
	if o.BlockSamples > block.MaxSamples {
		return nil, fmt.Errorf("history: BlockSamples %d: at most %d", o.BlockSamples, block.MaxSamples)
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 2 << 20
	}
	if o.MemTableBytes <= 0 {
		o.MemTableBytes = 2 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref()
	db, err := pebble.Open(o.Dir, &pebble.Options{
		Cache: cache, MemTableSize: uint64(o.MemTableBytes), Logger: pebbleLogger{o.Logger},
	})
	if err != nil {
		return nil, fmt.Errorf("history: open store %s: %w", o.Dir, err)
	}
	s := &Store{db: db, per: o.BlockSamples, log: o.Logger, ids: map[string]uint32{}, tags: map[uint32]*tagState{}}
	if err := s.load(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("history: open store %s: %w", o.Dir, err)
	}
	return s, nil
}

// load reads the tag names, the heads and the last block of every tag.
func (s *Store) load() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindName}, UpperBound: []byte{kindName + 1}})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if len(it.Value()) != 4 {
			_ = it.Close()
			return fmt.Errorf("tag %q: damaged id", it.Key()[1:])
		}
		id := binary.BigEndian.Uint32(it.Value())
		s.ids[string(it.Key()[1:])] = id
		s.tags[id] = &tagState{lastBlock: math.MinInt64}
		s.next = max(s.next, id+1)
	}
	if err := it.Close(); err != nil {
		return err
	}
	for id, st := range s.tags {
		err := s.scanHead(id, math.MinInt64, math.MaxInt64, func(x Sample) bool {
			if st.head == 0 || x.At < st.oldest {
				st.oldest = x.At
			}
			st.head++
			return true
		})
		if err != nil {
			return err
		}
		last, ok, err := s.lastBlock(id)
		if err != nil {
			return err
		}
		if ok {
			st.lastBlock = last
		}
	}
	return nil
}

// Append records recs. A tag seen for the first time is named in the
// same batch. It returns once the batch is synced to the LSM store's
// write-ahead log: what Append returned for survives a crash of the
// process or the machine. Each call is a disk sync: the recorder gathers a
// flush interval's samples into one call.
func (s *Store) Append(recs []Record) error {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	type added struct {
		st *tagState
		at int64
	}
	grown := make([]added, 0, len(recs))
	var named []string
	for _, r := range recs {
		id, isNew, err := s.name(b, r.Tag)
		if isNew {
			named = append(named, r.Tag)
		}
		if err != nil {
			s.forget(named)
			return err
		}
		if err := b.Set(headSampleKey(id, r.Sample), nil, nil); err != nil {
			s.forget(named)
			return err
		}
		grown = append(grown, added{s.tags[id], r.At})
	}
	if err := b.Commit(pebble.Sync); err != nil {
		s.forget(named)
		return fmt.Errorf("history: append: %w", err)
	}
	// A key written twice counts twice: the head count is an upper bound
	// until the next compaction recounts it.
	for _, g := range grown {
		if g.st.head == 0 || g.at < g.st.oldest {
			g.st.oldest = g.at
		}
		g.st.head++
	}
	return nil
}

// forget forgets the names given in a batch that was not stored; mu must
// be held.
func (s *Store) forget(named []string) {
	for _, n := range named {
		delete(s.tags, s.ids[n])
		delete(s.ids, n)
	}
}

// Due lists the tags whose head holds a block's worth of samples, or
// whose oldest head sample is older than olderThan (ticks).
func (s *Store) Due(olderThan int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, id := range s.ids {
		st := s.tags[id]
		if st.head >= s.per || (st.head > 0 && st.oldest < olderThan) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Compact turns tag's head into blocks, merging head samples older than
// the tag's last block into the blocks they fall in. The head's last
// samples stay in the head when they are fewer than a block, unless all
// is set.
func (s *Store) Compact(tag string, all bool) error {
	return s.locked(tag, func(id uint32) error { return s.compact(tag, id, all) })
}

// locked calls fn with tag's id, the store open and mu held throughout;
// nil without calling fn for a tag the store does not name.
func (s *Store) locked(tag string, fn func(id uint32) error) error {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.ids[tag]
	if !ok {
		return nil
	}
	return fn(id)
}

// compact is Compact of tag (id); mu must be held.
func (s *Store) compact(tag string, id uint32, all bool) error {
	st := s.tags[id]
	var head []Sample
	if err := s.scanHead(id, math.MinInt64, math.MaxInt64, func(x Sample) bool { head = append(head, x); return true }); err != nil {
		return err
	}
	if len(head) == 0 {
		st.head = 0
		return nil
	}
	// Head samples that fall into existing blocks: those blocks are
	// decoded, merged and written again.
	var merged []Sample
	var rewrite [][]byte // keys of the blocks merged
	if head[0].At <= st.lastBlock {
		err := s.scanBlocks(id, head[0].At, math.MaxInt64, func(key []byte, xs []Sample) bool {
			rewrite = append(rewrite, slices.Clone(key))
			merged = append(merged, xs...)
			return true
		})
		if err != nil {
			return err
		}
	}
	all = all || len(rewrite) > 0
	xs := mergeSamples(merged, head)
	keep := 0 // the newest samples left in the head
	if !all {
		keep = len(xs) % s.per
		if len(rewrite) == 0 && keep == len(xs) {
			st.head, st.oldest = len(head), head[0].At
			return nil // not a block's worth yet
		}
	}
	blocks, rest := xs[:len(xs)-keep], xs[len(xs)-keep:]
	b := s.db.NewBatch()
	defer b.Close()
	for _, k := range rewrite {
		if err := b.Delete(k, nil); err != nil {
			return err
		}
	}
	for i := 0; i < len(blocks); i += s.per {
		chunk := blocks[i:min(i+s.per, len(blocks))]
		if err := b.Set(blockKey(id, chunk[0].At), blockValue(chunk), nil); err != nil {
			return err
		}
	}
	// The head keeps exactly the samples of rest: everything up to the
	// last one written into a block goes.
	if len(blocks) > 0 {
		if err := b.DeleteRange(headKey(id, math.MinInt64), headEnd(id, blocks[len(blocks)-1].At), nil); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("history: compact %s: %w", tag, err)
	}
	if len(blocks) > 0 {
		st.lastBlock = max(st.lastBlock, blocks[len(blocks)-1].At)
	}
	st.head = len(rest)
	if len(rest) > 0 {
		st.oldest = rest[0].At
	}
	return nil
}

// Read calls fn for the samples of tag with from ≤ time < to, oldest
// first, each time once, until fn returns false.
func (s *Store) Read(tag string, from, to int64, fn func(Sample) bool) error {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.mu.Lock()
	id, ok := s.ids[tag]
	s.mu.Unlock()
	if !ok || from >= to {
		return nil
	}
	// Blocks and head are each in time order; they overlap only after late
	// samples, so the walk merges them a block at a time.
	var head []Sample
	if err := s.scanHead(id, from, to, func(x Sample) bool { head = append(head, x); return true }); err != nil {
		return err
	}
	stop := false
	err := s.scanBlocks(id, from, to, func(_ []byte, xs []Sample) bool {
		last := xs[len(xs)-1].At
		n := 0
		for n < len(head) && head[n].At <= last {
			n++
		}
		for _, x := range mergeSamples(xs, head[:n]) {
			if x.At >= from && x.At < to && !fn(x) {
				stop = true
				return false
			}
		}
		head = head[n:]
		return true
	})
	if err != nil || stop {
		return err
	}
	for _, x := range mergeSamples(nil, head) {
		if !fn(x) {
			return nil
		}
	}
	return nil
}

// Trim removes tag's samples older than before: the head samples, and
// the blocks whose last sample is older. A block that reaches past before
// stays whole until it is all older (retention is exact to a block's
// span: BlockSamples samples).
func (s *Store) Trim(tag string, before int64) error {
	return s.locked(tag, func(id uint32) error { return s.trim(tag, id, before) })
}

// trim is Trim of tag (id); mu must be held.
func (s *Store) trim(tag string, id uint32, before int64) error {
	b := s.db.NewBatch()
	defer b.Close()
	err := s.scanBlocks(id, math.MinInt64, before, func(key []byte, xs []Sample) bool {
		if xs[len(xs)-1].At >= before {
			return false
		}
		return b.Delete(key, nil) == nil
	})
	if err != nil {
		return err
	}
	if err := b.DeleteRange(headKey(id, math.MinInt64), headKey(id, before), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("history: trim %s: %w", tag, err)
	}
	st := s.tags[id]
	if st.head > 0 && st.oldest < before {
		// Recount: the head lost its oldest samples.
		st.head, st.oldest = 0, 0
		err = s.scanHead(id, before, math.MaxInt64, func(x Sample) bool {
			if st.head == 0 {
				st.oldest = x.At
			}
			st.head++
			return true
		})
	}
	return err
}

// Extent returns the times of tag's first and last samples; false when
// the store holds none.
func (s *Store) Extent(tag string) (first, last int64, ok bool, err error) {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return 0, 0, false, ErrClosed
	}
	s.mu.Lock()
	id, known := s.ids[tag]
	s.mu.Unlock()
	if !known {
		return 0, 0, false, nil
	}
	for _, kind := range []byte{kindBlock, kindHead} {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: timeKey(kind, id, math.MinInt64), UpperBound: timeKey(kind, id+1, math.MinInt64)})
		if err != nil {
			return 0, 0, false, err
		}
		if it.First() {
			t := unflip(binary.BigEndian.Uint64(it.Key()[5:13]))
			if !ok || t < first {
				first = t
			}
			it.Last()
			t = unflip(binary.BigEndian.Uint64(it.Key()[5:13]))
			if kind == kindBlock {
				if len(it.Value()) < 8 {
					_ = it.Close()
					return 0, 0, false, fmt.Errorf("history: block %x: damaged", it.Key())
				}
				t = unflip(binary.BigEndian.Uint64(it.Value()))
			}
			if !ok || t > last {
				last = t
			}
			ok = true
		}
		if err := it.Close(); err != nil {
			return 0, 0, false, err
		}
	}
	return first, last, ok, nil
}

// Size is the store's size on disk, in bytes (0 once closed).
func (s *Store) Size() int64 {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return 0
	}
	m := s.db.Metrics()
	return int64(m.DiskSpaceUsage())
}

// Tags lists the tags the store names, sorted.
func (s *Store) Tags() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.ids))
	for n := range s.ids {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Close closes the store; the calls after it return ErrClosed.
func (s *Store) Close() error {
	s.open.Lock()
	defer s.open.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

// scanHead calls fn for tag id's head samples with from ≤ time < to.
func (s *Store) scanHead(id uint32, from, to int64, fn func(Sample) bool) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: (headKey(id, from)), UpperBound: (headKey(id, to))})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		x, err := headSample(it.Key(), it.Value())
		if err != nil {
			_ = it.Close()
			return err
		}
		if !fn(x) {
			break
		}
	}
	return it.Close()
}

// scanBlocks calls fn with the key and the samples of every block of tag
// id that holds a time in [from, to), oldest first.
func (s *Store) scanBlocks(id uint32, from, to int64, fn func(key []byte, xs []Sample) bool) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: (blockKey(id, math.MinInt64)), UpperBound: (blockKey(id, to))})
	if err != nil {
		return err
	}
	defer it.Close()
	// The block that starts at or before from may reach into the range.
	valid := it.SeekLT((blockKey(id, from)))
	if !valid {
		valid = it.First()
	}
	for ; valid; valid = it.Next() {
		last, xs, err := decodeBlock(it.Value())
		if err != nil {
			return fmt.Errorf("history: block %x: %w", it.Key(), err)
		}
		if last < from {
			continue
		}
		if !fn(it.Key(), xs) {
			return nil
		}
	}
	return it.Error()
}

// lastBlock is the last time of tag id's last block.
func (s *Store) lastBlock(id uint32) (int64, bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: (blockKey(id, math.MinInt64)), UpperBound: (blockKey(id+1, math.MinInt64))})
	if err != nil {
		return 0, false, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, false, it.Error()
	}
	if len(it.Value()) < 8 {
		return 0, false, fmt.Errorf("block %x: damaged", it.Key())
	}
	return unflip(binary.BigEndian.Uint64(it.Value())), true, nil
}

// mergeSamples merges two runs in time order into one, each time once:
// of two samples at one time the one that sorts first by (status, value
// bits) stays, whichever run it came from.
func mergeSamples(a, b []Sample) []Sample {
	out := make([]Sample, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.SortStableFunc(out, func(x, y Sample) int {
		return cmp.Or(cmp.Compare(x.At, y.At), cmp.Compare(x.Status, y.Status), cmp.Compare(math.Float64bits(x.Value), math.Float64bits(y.Value)))
	})
	return slices.CompactFunc(out, func(x, y Sample) bool { return x.At == y.At })
}

func flip(t int64) uint64   { return uint64(t) ^ 1<<63 }
func unflip(u uint64) int64 { return int64(u ^ 1<<63) }

func nameKey(name string) []byte { return append([]byte{kindName}, name...) }

func headKey(id uint32, t int64) []byte { return timeKey(kindHead, id, t) }

func blockKey(id uint32, first int64) []byte { return timeKey(kindBlock, id, first) }

func timeKey(kind byte, id uint32, t int64) []byte {
	k := make([]byte, 13, 25)
	k[0] = kind
	binary.BigEndian.PutUint32(k[1:], id)
	binary.BigEndian.PutUint64(k[5:], flip(t))
	return k
}

// headSampleKey is the key of one head sample: its time key, status and
// value bits, so that the candidates for one identity sort in the order
// mergeSamples keeps.
func headSampleKey(id uint32, x Sample) []byte {
	k := binary.BigEndian.AppendUint32(headKey(id, x.At), x.Status)
	return binary.BigEndian.AppendUint64(k, math.Float64bits(x.Value))
}

// headEnd is the first key after every head sample of tag id at time t.
func headEnd(id uint32, t int64) []byte {
	if t == math.MaxInt64 {
		return headKey(id+1, math.MinInt64)
	}
	return headKey(id, t+1)
}

func headSample(k, v []byte) (Sample, error) {
	if len(k) != 25 || len(v) != 0 {
		return Sample{}, fmt.Errorf("history: head sample %x: damaged", k)
	}
	return Sample{At: unflip(binary.BigEndian.Uint64(k[5:])), Status: binary.BigEndian.Uint32(k[13:]), Value: math.Float64frombits(binary.BigEndian.Uint64(k[17:]))}, nil
}

func blockValue(xs []Sample) []byte {
	v := binary.BigEndian.AppendUint64(nil, flip(xs[len(xs)-1].At))
	return append(v, block.Encode(xs)...)
}

func decodeBlock(v []byte) (int64, []Sample, error) {
	if len(v) < 8 {
		return 0, nil, block.ErrDamaged
	}
	var xs []Sample
	if _, err := block.Decode(v[8:], func(x Sample) bool { xs = append(xs, x); return true }); err != nil {
		return 0, nil, err
	}
	return unflip(binary.BigEndian.Uint64(v)), xs, nil
}

// pebbleLogger sends the LSM store's messages to the node's log.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("history store: " + fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("history store: " + fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error("history store: " + fmt.Sprintf(format, args...))
	panic(fmt.Sprintf(format, args...))
}
