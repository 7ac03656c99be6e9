// Command historystore measures the candidate stores of process history
// (issue 29: "choose between the SQLite the project already uses and an
// LSM store such as Pebble from measurements"): how fast each records
// samples, how many bytes a sample takes on disk, and how fast a tag's
// history reads back.
//
// The workload is what a node's recorder writes: -tags tags, each with
// -samples samples one -every apart (±5 ms of jitter), recorded in
// batches of one sample of every tag (a poll of every device), values a
// random walk rounded to two decimals (a process value after a deadband),
// a Bad status now and then. Every candidate gets the same samples.
//
// The candidates:
//
//   - sqlite-rows: one row per sample, samples(tag, t, value, status)
//     WITHOUT ROWID, primary key (tag, t); a batch per transaction.
//   - sqlite-blocks: the same rows as a head, and every tag's head turned
//     into one compressed block (blocks(tag, t0, t1, n, data)) once it
//     holds -block samples, in the encoding of package history/block. The
//     compaction runs in the recording loop and is part of the recording
//     time.
//   - pebble: an LSM store, key tag(4 bytes) ‖ t(8 bytes), value status
//     varint ‖ float64, Snappy-compressed blocks; size measured after a
//     flush and a full compaction.
//
// Reads: -reads random tags' whole history, then a tenth of it from a
// random start; samples per second.
//
// Usage:
//
//	go run ./bench/historystore                         # 1,000 tags × 2,000 samples
//	go run ./bench/historystore -tags 10000 -samples 500
package main

import (
	"context"
	"database/sql"
	"encoding/binary"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	_ "modernc.org/sqlite"

	"github.com/otopcua/otopcua/history/block"
)

type sample struct {
	tag    uint32
	at     int64 // Unix microseconds
	value  float64
	status uint32
}

// store is one candidate.
type store interface {
	name() string
	record(batch []sample) error
	// read calls fn for every sample of tag in [from, to), oldest first.
	read(tag uint32, from, to int64, fn func(sample)) error
	close() error
}

func main() {
	tags := flag.Int("tags", 1000, "tags")
	samples := flag.Int("samples", 2000, "samples per tag")
	every := flag.Duration("every", time.Second, "time between two samples of a tag")
	block := flag.Int("block", 256, "samples per block (sqlite-blocks)")
	reads := flag.Int("reads", 50, "tags read back")
	seed := flag.Uint64("seed", 1, "random seed")
	only := flag.String("only", "", "run only these candidates (comma-separated)")
	flag.Parse()

	batches := workload(*tags, *samples, *every, *seed)
	fmt.Printf("workload: %d tags × %d samples = %d samples, one every %v, %s/%s, %d CPUs\n\n",
		*tags, *samples, *tags**samples, *every, runtime.GOOS, runtime.Version(), runtime.NumCPU())
	fmt.Println("| store | record (samples/s) | bytes/sample, files | bytes/sample, live data | read whole tag (samples/s) | read 10 % window (samples/s) |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, mk := range []func(string) (store, error){
		openRows,
		func(dir string) (store, error) { return openBlocks(dir, *block) },
		openPebble,
		func(dir string) (store, error) { return openPebbleBlocks(dir, *block) },
	} {
		dir, err := os.MkdirTemp("", "otopcua-historystore-")
		if err != nil {
			log.Fatal(err)
		}
		s, err := mk(dir)
		if err != nil {
			log.Fatal(err)
		}
		if *only != "" && !strings.Contains(","+*only+",", ","+s.name()+",") {
			_ = s.close()
			_ = os.RemoveAll(dir)
			continue
		}
		if err := measure(s, dir, batches, *tags, *reads, *seed); err != nil {
			log.Fatalf("%s: %v", s.name(), err)
		}
		_ = os.RemoveAll(dir)
	}
}

// workload is the batches a recorder writes, oldest first.
func workload(tags, samples int, every time.Duration, seed uint64) [][]sample {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	value := make([]float64, tags)
	for i := range value {
		value[i] = math.Round(r.Float64()*1000) / 100
	}
	step := every.Microseconds()
	out := make([][]sample, samples)
	for k := range samples {
		b := make([]sample, tags)
		for i := range tags {
			value[i] = math.Round((value[i]+r.NormFloat64()*0.5)*100) / 100
			st := uint32(0)
			if r.IntN(500) == 0 {
				st = 0x80320000 // BadCommunicationError
			}
			jitter := r.Int64N(10_001) - 5_000 // a poll's scheduling: ±5 ms
			b[i] = sample{tag: uint32(i), at: start + int64(k)*step + jitter, value: value[i], status: st}
		}
		out[k] = b
	}
	return out
}

func measure(s store, dir string, batches [][]sample, tags, reads int, seed uint64) error {
	n := 0
	t0 := time.Now()
	for _, b := range batches {
		if err := s.record(b); err != nil {
			return err
		}
		n += len(b)
	}
	recordRate := float64(n) / time.Since(t0).Seconds()
	live := int64(-1)
	if l, ok := s.(interface{ live() (int64, error) }); ok {
		var err error
		if live, err = l.live(); err != nil {
			return err
		}
	}
	if err := s.close(); err != nil {
		return err
	}
	size := dirSize(dir)
	if live < 0 {
		live = size
	}
	var err error
	switch x := s.(type) {
	case *rows:
		s, err = openRows(dir)
	case *blocks:
		s, err = openBlocks(dir, x.per)
	case *pebbleStore:
		s, err = openPebble(dir)
	case *pebbleBlocks:
		s, err = openPebbleBlocks(dir, x.per)
	}
	if err != nil {
		return err
	}
	defer s.close()
	r := rand.New(rand.NewPCG(seed, 7))
	first, last := batches[0][0].at-1_000_000, batches[len(batches)-1][0].at+1_000_000
	whole, got := time.Duration(0), 0
	for range reads {
		tag := uint32(r.IntN(tags))
		t := time.Now()
		err := s.read(tag, first, last, func(sample) { got++ })
		whole += time.Since(t)
		if err != nil {
			return err
		}
	}
	if got != reads*len(batches) {
		return fmt.Errorf("read %d samples back, want %d", got, reads*len(batches))
	}
	wholeRate := float64(got) / whole.Seconds()
	span := last - first
	window, got2 := time.Duration(0), 0
	for range reads {
		tag := uint32(r.IntN(tags))
		from := first + r.Int64N(span*9/10)
		t := time.Now()
		err := s.read(tag, from, from+span/10, func(sample) { got2++ })
		window += time.Since(t)
		if err != nil {
			return err
		}
	}
	fmt.Printf("| %s | %.0f | %.1f | %.1f | %.0f | %.0f |\n", s.name(), recordRate, float64(size)/float64(n), float64(live)/float64(n), wholeRate, float64(got2)/window.Seconds())
	return nil
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// ---- sqlite-rows

type rows struct {
	db  *sql.DB
	ins *sql.Stmt
}

func openSQLite(dir string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "history.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	_, err = db.Exec("CREATE TABLE IF NOT EXISTS samples (tag INTEGER NOT NULL, t INTEGER NOT NULL, value REAL NOT NULL, status INTEGER NOT NULL, PRIMARY KEY (tag, t)) WITHOUT ROWID")
	return db, err
}

func openRows(dir string) (store, error) {
	db, err := openSQLite(dir)
	if err != nil {
		return nil, err
	}
	ins, err := db.Prepare("INSERT OR IGNORE INTO samples (tag, t, value, status) VALUES (?, ?, ?, ?)")
	if err != nil {
		return nil, err
	}
	return &rows{db: db, ins: ins}, nil
}

func (s *rows) name() string { return "sqlite-rows" }

func (s *rows) record(batch []sample) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	st := tx.Stmt(s.ins)
	for _, x := range batch {
		if _, err := st.Exec(x.tag, x.at, x.value, x.status); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

func (s *rows) read(tag uint32, from, to int64, fn func(sample)) error {
	return readRows(s.db, tag, from, to, fn)
}

func readRows(db *sql.DB, tag uint32, from, to int64, fn func(sample)) error {
	rs, err := db.Query("SELECT t, value, status FROM samples WHERE tag = ? AND t >= ? AND t < ? ORDER BY t", tag, from, to)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		x := sample{tag: tag}
		if err := rs.Scan(&x.at, &x.value, &x.status); err != nil {
			return err
		}
		fn(x)
	}
	return rs.Err()
}

func (s *rows) close() error { _ = s.ins.Close(); return s.db.Close() }

func (s *rows) live() (int64, error) { return liveBytes(s.db) }

// liveBytes is the size of the pages of db that hold data, the free
// pages (what deletes left, reused by later inserts) left out.
func liveBytes(db *sql.DB) (int64, error) {
	var pages, free, size int64
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return 0, err
	}
	for q, p := range map[string]*int64{"PRAGMA page_count": &pages, "PRAGMA freelist_count": &free, "PRAGMA page_size": &size} {
		if err := db.QueryRow(q).Scan(p); err != nil {
			return 0, err
		}
	}
	return (pages - free) * size, nil
}

// ---- sqlite-blocks

type blocks struct {
	db   *sql.DB
	ins  *sql.Stmt
	per  int
	head map[uint32]int // samples in each tag's head
}

func openBlocks(dir string, per int) (store, error) {
	db, err := openSQLite(dir)
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS blocks (tag INTEGER NOT NULL, t0 INTEGER NOT NULL, t1 INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (tag, t0)) WITHOUT ROWID"); err != nil {
		return nil, err
	}
	ins, err := db.Prepare("INSERT OR IGNORE INTO samples (tag, t, value, status) VALUES (?, ?, ?, ?)")
	if err != nil {
		return nil, err
	}
	return &blocks{db: db, ins: ins, per: per, head: map[uint32]int{}}, nil
}

func (s *blocks) name() string { return "sqlite-blocks" }

func (s *blocks) record(batch []sample) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	st := tx.Stmt(s.ins)
	var full []uint32
	for _, x := range batch {
		if _, err := st.Exec(x.tag, x.at, x.value, x.status); err != nil {
			_ = tx.Rollback()
			return err
		}
		s.head[x.tag]++
		if s.head[x.tag] == s.per {
			full = append(full, x.tag)
		}
	}
	for _, tag := range full {
		if err := s.compact(tx, tag); err != nil {
			_ = tx.Rollback()
			return err
		}
		s.head[tag] = 0
	}
	return tx.Commit()
}

// compact turns tag's head into one block, in the recording transaction.
func (s *blocks) compact(tx *sql.Tx, tag uint32) error {
	var xs []sample
	if err := readRowsTx(tx, tag, func(x sample) { xs = append(xs, x) }); err != nil {
		return err
	}
	if len(xs) == 0 {
		return nil
	}
	if _, err := tx.Exec("INSERT OR REPLACE INTO blocks (tag, t0, t1, n, data) VALUES (?, ?, ?, ?, ?)", tag, xs[0].at, xs[len(xs)-1].at, len(xs), encode(xs)); err != nil {
		return err
	}
	_, err := tx.Exec("DELETE FROM samples WHERE tag = ? AND t <= ?", tag, xs[len(xs)-1].at)
	return err
}

func readRowsTx(tx *sql.Tx, tag uint32, fn func(sample)) error {
	rs, err := tx.Query("SELECT t, value, status FROM samples WHERE tag = ? ORDER BY t", tag)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		x := sample{tag: tag}
		if err := rs.Scan(&x.at, &x.value, &x.status); err != nil {
			return err
		}
		fn(x)
	}
	return rs.Err()
}

func (s *blocks) read(tag uint32, from, to int64, fn func(sample)) error {
	rs, err := s.db.Query("SELECT data FROM blocks WHERE tag = ? AND t1 >= ? AND t0 < ? ORDER BY t0", tag, from, to)
	if err != nil {
		return err
	}
	for rs.Next() {
		var data []byte
		if err := rs.Scan(&data); err != nil {
			rs.Close()
			return err
		}
		if err := decode(tag, data, func(x sample) {
			if x.at >= from && x.at < to {
				fn(x)
			}
		}); err != nil {
			rs.Close()
			return err
		}
	}
	if err := rs.Close(); err != nil {
		return err
	}
	return readRows(s.db, tag, from, to, fn)
}

func (s *blocks) close() error { _ = s.ins.Close(); return s.db.Close() }

func (s *blocks) live() (int64, error) { return liveBytes(s.db) }

// encode packs one tag's samples (oldest first) as the store would: a
// history/block block, times in OPC UA ticks.
func encode(xs []sample) []byte {
	bs := make([]block.Sample, len(xs))
	for i, x := range xs {
		bs[i] = block.Sample{At: x.at * 10, Value: x.value, Status: x.status}
	}
	return block.Encode(bs)
}

func decode(tag uint32, b []byte, fn func(sample)) error {
	_, err := block.Decode(b, func(x block.Sample) bool {
		fn(sample{tag: tag, at: x.At / 10, value: x.Value, status: x.Status})
		return true
	})
	return err
}

// ---- pebble

type pebbleStore struct{ db *pebble.DB }

func openPebble(dir string) (store, error) {
	db, err := pebble.Open(filepath.Join(dir, "pebble"), &pebble.Options{Logger: quiet{}})
	if err != nil {
		return nil, err
	}
	return &pebbleStore{db: db}, nil
}

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(f string, a ...any) {
	log.Fatalf(f, a...)
}

func (s *pebbleStore) name() string { return "pebble" }

func key(tag uint32, at int64) []byte {
	k := make([]byte, 12)
	binary.BigEndian.PutUint32(k, tag)
	binary.BigEndian.PutUint64(k[4:], uint64(at))
	return k
}

func (s *pebbleStore) record(batch []sample) error {
	b := s.db.NewBatch()
	for _, x := range batch {
		v := binary.AppendUvarint(nil, uint64(x.status))
		v = binary.BigEndian.AppendUint64(v, math.Float64bits(x.value))
		if err := b.Set(key(x.tag, x.at), v, nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.NoSync) // as SQLite in WAL with synchronous=NORMAL: a crash may lose the last batches, never corrupt
}

func (s *pebbleStore) read(tag uint32, from, to int64, fn func(sample)) error {
	return readSampleKeys(s.db, key(tag, from), key(tag, to), 0, tag, fn)
}

// readSampleKeys calls fn for every one-sample key in [lower, upper): the
// time at key[skip+4:], the value status ‖ float64 bits.
func readSampleKeys(db *pebble.DB, lower, upper []byte, skip int, tag uint32, fn func(sample)) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		st, n := binary.Uvarint(v)
		if n <= 0 || len(v) < n+8 {
			_ = it.Close()
			return fmt.Errorf("bad value")
		}
		fn(sample{tag: tag, at: int64(binary.BigEndian.Uint64(k[skip+4:])), status: uint32(st), value: math.Float64frombits(binary.BigEndian.Uint64(v[n:]))})
	}
	return it.Close()
}

func (s *pebbleStore) close() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff, 0xff}, true); err != nil {
		return err
	}
	return s.db.Close()
}

// ---- pebble-blocks: pebble's keys as sqlite-blocks' rows: a head of one
// key per sample ('h' ‖ tag ‖ t) turned into one block ('b' ‖ tag ‖ t0)
// every -block samples of a tag.

type pebbleBlocks struct {
	db   *pebble.DB
	per  int
	head map[uint32]int
}

func openPebbleBlocks(dir string, per int) (store, error) {
	db, err := pebble.Open(filepath.Join(dir, "pebble"), &pebble.Options{Logger: quiet{}})
	if err != nil {
		return nil, err
	}
	return &pebbleBlocks{db: db, per: per, head: map[uint32]int{}}, nil
}

func (s *pebbleBlocks) name() string { return "pebble-blocks" }

func prefixed(p byte, tag uint32, at int64) []byte { return append([]byte{p}, key(tag, at)...) }

func (s *pebbleBlocks) record(batch []sample) error {
	b := s.db.NewBatch()
	var full []uint32
	for _, x := range batch {
		v := binary.AppendUvarint(nil, uint64(x.status))
		v = binary.BigEndian.AppendUint64(v, math.Float64bits(x.value))
		if err := b.Set(prefixed('h', x.tag, x.at), v, nil); err != nil {
			return err
		}
		s.head[x.tag]++
		if s.head[x.tag] == s.per {
			full = append(full, x.tag)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	for _, tag := range full {
		if err := s.compact(tag); err != nil {
			return err
		}
		s.head[tag] = 0
	}
	return nil
}

func (s *pebbleBlocks) compact(tag uint32) error {
	var xs []sample
	if err := s.readHead(tag, 0, math.MaxInt64, func(x sample) { xs = append(xs, x) }); err != nil {
		return err
	}
	if len(xs) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	if err := b.Set(prefixed('b', tag, xs[0].at), encode(xs), nil); err != nil {
		return err
	}
	if err := b.DeleteRange(prefixed('h', tag, 0), prefixed('h', tag, xs[len(xs)-1].at+1), nil); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}

func (s *pebbleBlocks) readHead(tag uint32, from, to int64, fn func(sample)) error {
	return readSampleKeys(s.db, prefixed('h', tag, from), prefixed('h', tag, to), 1, tag, fn)
}

func (s *pebbleBlocks) read(tag uint32, from, to int64, fn func(sample)) error {
	// A block starts at most one block's span before from; start a day
	// early, as the store would keep an index of block starts.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefixed('b', tag, from-86_400_000_000), UpperBound: prefixed('b', tag, to)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if err := decode(tag, it.Value(), func(x sample) {
			if x.at >= from && x.at < to {
				fn(x)
			}
		}); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	return s.readHead(tag, from, to, fn)
}

func (s *pebbleBlocks) close() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		return err
	}
	return s.db.Close()
}
