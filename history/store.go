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
	"github.com/cockroachdb/pebble/v2/vfs"

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
	// A tag's open head (up to about this many samples, 24 bytes each) is
	// held in memory.
	BlockSamples int
	// JournalBatches bounds how long the journal holds a tag's samples: a
	// head holding samples journaled this many appends ago is due (Due)
	// even when it is not a block's worth yet. Default 600 (a minute of
	// the recorder's 100 ms batches).
	JournalBatches int
	// CacheBytes and MemTableBytes size the embedded LSM store's block
	// cache and write buffer. Defaults 2 MiB and 2 MiB: a node records far
	// more than it reads back, and an idle node should stay small.
	CacheBytes, MemTableBytes int64
	Logger                    *slog.Logger
	// fs is the file system (tests: a crashable one); nil: the OS's.
	fs vfs.FS
}

// MaxTags bounds the tags a store names (the deployment's own cap is
// 100,000).
const MaxTags = 1 << 20

// ErrClosed is returned by every call after Close.
var ErrClosed = errors.New("history: store closed")

// Store is one node's history: per tag, an open head of recent samples
// and the older ones in blocks (package block). Appending a sample whose
// tag and time the store holds already keeps one of the two — the one
// that sorts first by (status, value bits), so that two stores given the
// same samples in any order hold the same history.
//
// Each tag's open head is held in memory. What makes it durable is the
// journal (journal.go): each Append is one record holding every sample of
// the call, appended to a file beside the LSM store and synced. A tag's
// head is saved — its full blocks written, the rest as the tag's head
// key — when Compact is called for it (Due: a block's worth, an old head,
// or a head the journal has held for JournalBatches calls); DropJournal
// then removes the journal files whose every sample is saved. Open reads
// the head keys and replays the journal left. A sample is thus written once to the journal and once
// in its block, and the LSM store compacts blocks only — instead of a key
// of its own per sample, deleted again when its block is written.
//
// Key layout (one byte of kind, then big-endian fields; a time is its
// int64 with the sign bit flipped, so that keys sort by time):
//
//	'n' ‖ name          → tag id (4 bytes)
//	'o' ‖ id            → the head saved (last time ‖ block.Encode)
//	'b' ‖ id ‖ first    → block (last time ‖ block.Encode)
//	'h' ‖ id ‖ time ‖ status (4) ‖ value bits (8) → nothing: the head of
//	                      the earlier layout, read by Open and removed at
//	                      the tag's next save
//
// Blocks of one tag never overlap in time; head samples may be older than
// the last block (late samples, a peer's back-fill) until the tag's next
// compaction merges them in.
//
// Store is safe for concurrent use. Locks: wmu serialises the calls that
// write (Append, Compact, Trim, DropJournal, the gaps) and is held across
// their commit; mu guards the maps and the heads in memory and is held
// briefly, never across I/O; wmu is taken before mu. Reads take mu only
// to copy what they need of a head.
type Store struct {
	db   *pebble.DB
	per  int
	keep uint64 // JournalBatches
	log  *slog.Logger
	// open is held shared by every call that uses db, exclusively by
	// Close: a read in progress never sees the store closed under it.
	open   sync.RWMutex
	closed bool // open must be held
	wmu    sync.Mutex
	// batch is the next journal record's number; wmu must be held.
	batch uint64
	j     *journal          // wmu must be held
	mu    sync.Mutex        // the maps and tag states below
	ids   map[string]uint32 // tag name → id
	tags  map[uint32]*tagState
	next  uint32
}

// tagState is what the store keeps in memory of one tag. mu must be held
// to read it, wmu and mu to change it.
type tagState struct {
	head []Sample // the open head, in time order, one sample a time
	// unsaved is the first journal batch that holds a sample of head not
	// in the tag's saved head or blocks; 0 when none.
	unsaved uint64
	// legacy: head keys of the earlier layout remain, removed at the
	// tag's next save.
	legacy    bool
	lastBlock int64 // last time of the last block; math.MinInt64 when none
	unsorted  bool  // within apply: head is to be sorted again
}

// add puts xs into the head, keeping it in time order with one sample a
// time (mergeSamples' choice); mu must be held.
func (st *tagState) add(xs []Sample) {
	inOrder := true
	for _, x := range xs {
		if n := len(st.head); n > 0 && x.At <= st.head[n-1].At {
			inOrder = false
		}
		st.head = append(st.head, x)
	}
	if !inOrder {
		st.head = mergeSamples(nil, st.head)
	}
}

const (
	kindName       = 'n'
	kindHead       = 'o'
	kindLegacyHead = 'h'
	kindBlock      = 'b'
)

// Open opens (or creates) the store at o.Dir and reads what it holds of
// each tag (its saved head, then the journal, last block times).
func Open(o StoreOptions) (*Store, error) {
	if o.BlockSamples <= 0 {
		o.BlockSamples = 256
	}
	if o.BlockSamples > block.MaxSamples {
		return nil, fmt.Errorf("history: BlockSamples %d: at most %d", o.BlockSamples, block.MaxSamples)
	}
	if o.JournalBatches <= 0 {
		o.JournalBatches = 600
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
	if o.fs == nil {
		o.fs = vfs.Default
	}
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref()
	db, err := pebble.Open(o.Dir, &pebble.Options{
		Cache: cache, MemTableSize: uint64(o.MemTableBytes), Logger: pebbleLogger{o.Logger}, FS: o.fs,
	})
	if err != nil {
		return nil, fmt.Errorf("history: open store %s: %w", o.Dir, err)
	}
	s := &Store{db: db, per: o.BlockSamples, keep: uint64(o.JournalBatches), log: o.Logger,
		ids: map[string]uint32{}, tags: map[uint32]*tagState{}, batch: 1}
	if err := s.load(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("history: open store %s: %w", o.Dir, err)
	}
	s.j, err = openJournal(o.fs, o.fs.PathJoin(o.Dir, "journal"), o.Logger.Warn, s.replay)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("history: open store %s: journal: %w", o.Dir, err)
	}
	return s, nil
}

// load reads the tag names, the saved heads and the last block of every
// tag.
func (s *Store) load() error {
	err := s.scan([]byte{kindName}, []byte{kindName + 1}, func(k, v []byte) error {
		if len(v) != 4 {
			return fmt.Errorf("tag %q: damaged id", k[1:])
		}
		id := binary.BigEndian.Uint32(v)
		s.ids[string(k[1:])] = id
		s.tags[id] = &tagState{lastBlock: math.MinInt64}
		s.next = max(s.next, id+1)
		return nil
	})
	if err != nil {
		return err
	}
	err = s.scan([]byte{kindHead}, []byte{kindHead + 1}, func(k, v []byte) error {
		st := s.tags[binary.BigEndian.Uint32(k[1:])]
		if len(k) != 5 || st == nil {
			return fmt.Errorf("head %x: damaged", k)
		}
		_, xs, err := decodeBlock(v)
		if err != nil {
			return fmt.Errorf("head %x: %w", k, err)
		}
		st.add(xs)
		return nil
	})
	if err != nil {
		return err
	}
	err = s.scan([]byte{kindLegacyHead}, []byte{kindLegacyHead + 1}, func(k, v []byte) error {
		x, err := headSample(k, v)
		st := s.tags[binary.BigEndian.Uint32(k[1:])]
		if err != nil || st == nil {
			return fmt.Errorf("head sample %x: damaged", k)
		}
		st.add([]Sample{x})
		st.legacy, st.unsaved = true, 1
		return nil
	})
	if err != nil {
		return err
	}
	for id, st := range s.tags {
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

// scan calls fn for every key in [lo, hi).
func (s *Store) scan(lo, hi []byte, fn func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// Append records recs. A tag seen for the first time is named in the
// same batch. It returns once the batch is synced to the LSM store's
// write-ahead log: what Append returned for survives a crash of the
// process or the machine. Each call is a disk sync and one journal key:
// the recorder gathers a flush interval's samples into one call.
func (s *Store) Append(recs []Record) error {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if len(recs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	ids := make([]uint32, len(recs))
	var named []string
	s.mu.Lock()
	for i, r := range recs {
		id, isNew, err := s.name(b, r.Tag)
		if isNew {
			named = append(named, r.Tag)
		}
		if err != nil {
			s.forget(named)
			s.mu.Unlock()
			return err
		}
		ids[i] = id
	}
	s.mu.Unlock()
	// New names are stored before the journal record that uses them.
	if len(named) > 0 {
		if err := b.Commit(pebble.Sync); err != nil {
			s.forgetLocked(named)
			return fmt.Errorf("history: append: %w", err)
		}
	}
	if err := s.j.append(s.batch, encodeJournal(ids, recs)); err != nil {
		return fmt.Errorf("history: append: journal: %w", err)
	}
	s.mu.Lock()
	s.apply(s.batch, ids, recs)
	s.mu.Unlock()
	s.batch++
	return nil
}

// apply adds the samples of journal batch n to the heads; mu must be held.
func (s *Store) apply(n uint64, ids []uint32, recs []Record) {
	var late []*tagState // heads to sort again
	for i, r := range recs {
		st := s.tags[ids[i]]
		if k := len(st.head); k > 0 && r.At <= st.head[k-1].At && !st.unsorted {
			st.unsorted = true
			late = append(late, st)
		}
		if st.head == nil {
			st.head = make([]Sample, 0, s.per)
		}
		st.head = append(st.head, r.Sample)
		if st.unsaved == 0 {
			st.unsaved = n
		}
	}
	for _, st := range late {
		st.head, st.unsorted = mergeSamples(nil, st.head), false
	}
}

// forget forgets the names given in a batch that was not stored; mu must
// be held.
func (s *Store) forget(named []string) {
	for _, n := range named {
		delete(s.tags, s.ids[n])
		delete(s.ids, n)
	}
}

// forgetLocked is forget taking mu.
func (s *Store) forgetLocked(named []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(named)
}

// Due lists the tags whose head holds a block's worth of samples, or
// holds samples not saved yet of which the oldest is older than olderThan
// (ticks) or was journaled JournalBatches appends ago, or head keys of the
// earlier layout.
func (s *Store) Due(olderThan int64) []string {
	s.wmu.Lock()
	batch := s.batch
	s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, id := range s.ids {
		st := s.tags[id]
		switch {
		case len(st.head) >= s.per:
		case st.unsaved == 0:
			continue
		case st.legacy || st.head[0].At < olderThan || batch-st.unsaved >= s.keep:
		default:
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Compact turns tag's head into blocks, merging head samples older than
// the tag's last block into the blocks they fall in, and saves the rest
// of the head: the head's last samples stay in the head when they are
// fewer than a block, unless all is set.
func (s *Store) Compact(tag string, all bool) error {
	return s.locked(tag, func(id uint32) error { return s.compact(tag, id, all) })
}

// locked calls fn with tag's id, the store open and wmu held throughout;
// nil without calling fn for a tag the store does not name.
func (s *Store) locked(tag string, fn func(id uint32) error) error {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	id, ok := s.ids[tag]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return fn(id)
}

// compact is Compact of tag (id); wmu must be held (so that the head does
// not change under it).
func (s *Store) compact(tag string, id uint32, all bool) error {
	s.mu.Lock()
	st := s.tags[id]
	head, lastBlock := st.head, st.lastBlock
	s.mu.Unlock()
	if len(head) == 0 {
		return nil
	}
	// Head samples that fall into existing blocks: those blocks are
	// decoded, merged and written again.
	var merged []Sample
	var rewrite [][]byte // keys of the blocks merged
	if head[0].At <= lastBlock {
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
	xs := head
	if len(rewrite) > 0 {
		xs = mergeSamples(merged, head)
	}
	keep := 0 // the newest samples left in the head
	if !all {
		keep = len(xs) % s.per
	}
	blocks, rest := xs[:len(xs)-keep], xs[len(xs)-keep:]
	if len(blocks) == 0 && st.unsaved == 0 {
		return nil // saved already, and not a block's worth yet
	}
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
	if err := s.saveHead(b, id, st, rest); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("history: compact %s: %w", tag, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(blocks) > 0 {
		st.lastBlock = max(st.lastBlock, blocks[len(blocks)-1].At)
	}
	st.head = append(make([]Sample, 0, max(len(rest), s.per)), rest...)
	st.saved()
	return nil
}

// saveHead writes into b tag id's head as rest: its head key, the earlier
// layout's head keys removed. The caller calls st.saved once b is
// committed.
func (s *Store) saveHead(b *pebble.Batch, id uint32, st *tagState, rest []Sample) error {
	if st.legacy {
		if err := b.DeleteRange(timeKey(kindLegacyHead, id, math.MinInt64), timeKey(kindLegacyHead, id+1, math.MinInt64), nil); err != nil {
			return err
		}
	}
	if len(rest) == 0 {
		return b.Delete(openKey(id), nil)
	}
	return b.Set(openKey(id), blockValue(rest), nil)
}

// saved notes that the head is saved as it is in memory; wmu and mu must
// be held.
func (st *tagState) saved() { st.unsaved, st.legacy = 0, false }

// DropJournal removes the journal files whose every sample is saved in a
// head key or a block (Compact), once the LSM store has synced the saves.
func (s *Store) DropJournal() error {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.dropJournal()
}

// dropJournal is DropJournal; wmu must be held.
func (s *Store) dropJournal() error {
	upTo := s.batch
	s.mu.Lock()
	for _, st := range s.tags {
		if st.unsaved != 0 {
			upTo = min(upTo, st.unsaved)
		}
	}
	s.mu.Unlock()
	if !s.j.droppable(upTo, s.batch) {
		return nil
	}
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("history: journal: %w", err)
	}
	if err := s.j.drop(upTo, s.batch); err != nil {
		return fmt.Errorf("history: journal: %w", err)
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
	if from >= to {
		return nil
	}
	// The head is copied before the blocks are read: a compaction in
	// between leaves its samples in both, never in neither.
	id, head, ok := s.headOf(tag, from, to)
	if !ok {
		return nil
	}
	// Blocks and head are each in time order; they overlap only after late
	// samples, so the walk merges them a block at a time.
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
	for _, x := range head {
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

// trim is Trim of tag (id); wmu must be held. A head that loses samples
// is saved as it is left.
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
	s.mu.Lock()
	st := s.tags[id]
	head := st.head
	s.mu.Unlock()
	cut, _ := slices.BinarySearchFunc(head, before, func(x Sample, t int64) int { return cmp.Compare(x.At, t) })
	if cut > 0 {
		if err := s.saveHead(b, id, st, head[cut:]); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("history: trim %s: %w", tag, err)
	}
	if cut > 0 {
		s.mu.Lock()
		st.head = slices.Delete(head, 0, cut)
		st.saved()
		s.mu.Unlock()
	}
	return nil
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
	if known {
		if h := s.tags[id].head; len(h) > 0 {
			first, last, ok = h[0].At, h[len(h)-1].At, true
		}
	}
	s.mu.Unlock()
	if !known {
		return 0, 0, false, nil
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: blockKey(id, math.MinInt64), UpperBound: blockKey(id+1, math.MinInt64)})
	if err != nil {
		return 0, 0, false, err
	}
	defer it.Close()
	if it.First() {
		if t := unflip(binary.BigEndian.Uint64(it.Key()[5:13])); !ok || t < first {
			first = t
		}
		it.Last()
		if len(it.Value()) < 8 {
			return 0, 0, false, fmt.Errorf("history: block %x: damaged", it.Key())
		}
		t := unflip(binary.BigEndian.Uint64(it.Value()))
		if !ok || t > last {
			last = t
		}
		ok = true
	}
	return first, last, ok, it.Error()
}

// Size is the store's size on disk, in bytes (0 once closed): the LSM
// store's files and the journal's.
func (s *Store) Size() int64 {
	s.open.RLock()
	defer s.open.RUnlock()
	if s.closed {
		return 0
	}
	m := s.db.Metrics()
	return int64(m.DiskSpaceUsage()) + s.j.bytes.Load()
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
	return errors.Join(s.saveAll(), s.db.Close())
}

// saveAll saves every head not saved yet and drops the journal, so that
// the next Open replays nothing; open must be held exclusively.
func (s *Store) saveAll() error {
	s.mu.Lock()
	var dirty []uint32
	for id, st := range s.tags {
		if st.unsaved != 0 {
			dirty = append(dirty, id)
		}
	}
	s.mu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, id := range dirty {
		if err := s.compact(fmt.Sprintf("#%d", id), id, false); err != nil {
			return err
		}
	}
	return errors.Join(s.dropJournal(), s.j.close())
}

// headOf returns tag's id and a copy of its head samples with from ≤
// time < to; false when the store does not name tag.
func (s *Store) headOf(tag string, from, to int64) (uint32, []Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.ids[tag]
	if !ok {
		return 0, nil, false
	}
	h := s.tags[id].head
	lo, _ := slices.BinarySearchFunc(h, from, func(x Sample, t int64) int { return cmp.Compare(x.At, t) })
	hi, _ := slices.BinarySearchFunc(h, to, func(x Sample, t int64) int { return cmp.Compare(x.At, t) })
	return id, slices.Clone(h[lo:hi]), true
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

func headKey(id uint32, t int64) []byte { return timeKey(kindLegacyHead, id, t) }

func openKey(id uint32) []byte { return binary.BigEndian.AppendUint32([]byte{kindHead}, id) }

func blockKey(id uint32, first int64) []byte { return timeKey(kindBlock, id, first) }

func timeKey(kind byte, id uint32, t int64) []byte {
	k := make([]byte, 13, 25)
	k[0] = kind
	binary.BigEndian.PutUint32(k[1:], id)
	binary.BigEndian.PutUint64(k[5:], flip(t))
	return k
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
