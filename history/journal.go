package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The journal: one record per Append, holding every sample of the call,
// appended to a file of its own and synced, so that a sample is durable
// without a key of its own in the LSM store (Store), and leaves the disk
// with a file's removal once every tag saved it. Files are
// <Dir>/journal/<first batch, 16 hex digits>.journal, each a run of
// records
//
//	crc32c (4, of the rest) ‖ length of data (4) ‖ batch (8) ‖ data
//
// where data is a sequence of samples, each
//
//	uvarint(tag id) ‖ varint(time − previous record's time) ‖
//	uvarint(status<<1 | integral) ‖ value
//
// where value is varint(int64(v)) when integral (v a whole number that
// converts to int64 and back bit for bit), else its 8 bytes of float64
// bits, little-endian. A poll's samples share their time and its values
// are small whole numbers: about six bytes a sample.

// errJournal is a journal value that does not decode.
var errJournal = errors.New("history: journal batch damaged")

// integral reports whether v is stored as a varint: a whole number whose
// int64 converts back to the same bits (not -0, NaN or beyond ±2⁶²).
func integral(v float64) bool {
	if !(v >= -1<<62 && v <= 1<<62) {
		return false
	}
	return math.Float64bits(float64(int64(v))) == math.Float64bits(v)
}

// encodeJournal is the journal value of recs, ids[i] being recs[i]'s tag.
func encodeJournal(ids []uint32, recs []Record) []byte {
	out := make([]byte, 0, len(recs)*8)
	var prev int64
	for i, r := range recs {
		out = binary.AppendUvarint(out, uint64(ids[i]))
		out = binary.AppendVarint(out, r.At-prev)
		prev = r.At
		if integral(r.Value) {
			out = binary.AppendUvarint(out, uint64(r.Status)<<1|1)
			out = binary.AppendVarint(out, int64(r.Value))
		} else {
			out = binary.AppendUvarint(out, uint64(r.Status)<<1)
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(r.Value))
		}
	}
	return out
}

// decodeJournal calls fn for each record of v in order.
func decodeJournal(v []byte, fn func(id uint32, x Sample)) error {
	var prev int64
	for len(v) > 0 {
		id, n := binary.Uvarint(v)
		if n <= 0 || id > math.MaxUint32 {
			return errJournal
		}
		v = v[n:]
		dt, n := binary.Varint(v)
		if n <= 0 {
			return errJournal
		}
		v = v[n:]
		st, n := binary.Uvarint(v)
		if n <= 0 || st>>1 > math.MaxUint32 {
			return errJournal
		}
		v = v[n:]
		x := Sample{At: prev + dt, Status: uint32(st >> 1)}
		prev = x.At
		if st&1 == 1 {
			iv, n := binary.Varint(v)
			if n <= 0 {
				return errJournal
			}
			v, x.Value = v[n:], float64(iv)
		} else {
			if len(v) < 8 {
				return errJournal
			}
			v, x.Value = v[8:], math.Float64frombits(binary.LittleEndian.Uint64(v))
		}
		fn(uint32(id), x)
	}
	return nil
}

// journalFileBytes is the size after which the journal starts a new file.
const journalFileBytes = 4 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journal is the store's journal files; Store.wmu must be held.
type journal struct {
	fs    vfs.FS
	dir   string
	f     vfs.File // the file appended to; nil: the next append starts one
	size  int64
	files []uint64 // the first batch of each file, in order, f's last
	sizes []int64  // the bytes of each file
	// bytes is the sum of sizes, read by Store.Size without wmu.
	bytes atomic.Int64
}

// openJournal opens the journal in dir and calls fn for each record of
// its files, in order. A record that does not read back whole (the last
// one, cut by a crash before its sync) ends its file's replay.
func openJournal(fs vfs.FS, dir string, log func(msg string, args ...any), fn func(n uint64, data []byte) error) (*journal, error) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The directory's own entry is made durable before a file in it is.
	if err := (&journal{fs: fs, dir: fs.PathDir(dir)}).syncDir(); err != nil {
		return nil, err
	}
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	j := &journal{fs: fs, dir: dir}
	for _, name := range names {
		hex, ok := strings.CutSuffix(name, ".journal")
		n, err := strconv.ParseUint(hex, 16, 64)
		if ok && err == nil && len(hex) == 16 {
			j.files = append(j.files, n)
		}
	}
	slices.Sort(j.files)
	files := j.files
	j.files = nil
	for _, first := range files {
		n, recs, err := j.replay(first, log, fn)
		if err != nil {
			return nil, err
		}
		if recs == 0 {
			// Created, but nothing in it was acknowledged (a crash before its
			// first record was synced): its name may be the next file's.
			if err := fs.Remove(j.path(first)); err != nil {
				return nil, err
			}
			continue
		}
		j.files, j.sizes = append(j.files, first), append(j.sizes, n)
		j.bytes.Add(n)
	}
	return j, nil
}

func (j *journal) path(first uint64) string {
	return j.fs.PathJoin(j.dir, fmt.Sprintf("%016x.journal", first))
}

// replay calls fn for the records of the file that starts at first and
// returns the file's size and the records read.
func (j *journal) replay(first uint64, log func(msg string, args ...any), fn func(n uint64, data []byte) error) (size int64, recs int, err error) {
	f, err := j.fs.Open(j.path(first))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return 0, 0, err
	}
	size = int64(len(b))
	for len(b) > 0 {
		if len(b) < 16 || uint64(len(b)-16) < uint64(binary.BigEndian.Uint32(b[4:])) {
			log("history: the journal's last record is cut; it was not acknowledged", "file", j.path(first))
			break
		}
		end := 16 + int(binary.BigEndian.Uint32(b[4:]))
		if crc32.Checksum(b[4:end], crcTable) != binary.BigEndian.Uint32(b) {
			log("history: a journal record does not match its checksum; the rest of its file is skipped", "file", j.path(first))
			break
		}
		if err := fn(binary.BigEndian.Uint64(b[8:]), b[16:end]); err != nil {
			return 0, 0, err
		}
		recs++
		b = b[end:]
	}
	return size, recs, nil
}

// append writes batch n's data and syncs it, starting a file when needed.
func (j *journal) append(n uint64, data []byte) error {
	if j.f != nil && j.size >= journalFileBytes {
		if err := j.f.Close(); err != nil {
			return err
		}
		j.f = nil
	}
	if j.f == nil {
		f, err := j.fs.Create(j.path(n), vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		if err := j.syncDir(); err != nil {
			_ = f.Close()
			return err
		}
		j.f, j.size = f, 0
		j.files = append(j.files, n)
		j.sizes = append(j.sizes, 0)
	}
	rec := make([]byte, 16, 16+len(data))
	binary.BigEndian.PutUint32(rec[4:], uint32(len(data)))
	binary.BigEndian.PutUint64(rec[8:], n)
	rec = append(rec, data...)
	binary.BigEndian.PutUint32(rec, crc32.Checksum(rec[4:], crcTable))
	if _, err := j.f.Write(rec); err != nil {
		return err
	}
	j.size += int64(len(rec))
	j.sizes[len(j.sizes)-1] += int64(len(rec))
	j.bytes.Add(int64(len(rec)))
	return j.f.Sync()
}

// drop removes the files whose every batch is before upTo; next is the
// number the next append will take. The saves the caller relies on must
// be durable first.
func (j *journal) drop(upTo, next uint64) error {
	k := 0
	for k < len(j.files) {
		end := next // the first batch after file k
		if k+1 < len(j.files) {
			end = j.files[k+1]
		}
		if end > upTo {
			break
		}
		if k == len(j.files)-1 && j.f != nil {
			if err := j.f.Close(); err != nil {
				return err
			}
			j.f = nil
		}
		if err := j.fs.Remove(j.path(j.files[k])); err != nil {
			return err
		}
		j.bytes.Add(-j.sizes[k])
		k++
	}
	j.files, j.sizes = j.files[k:], j.sizes[k:]
	if k == 0 {
		return nil
	}
	return j.syncDir()
}

// droppable reports whether drop(upTo, next) would remove a file.
func (j *journal) droppable(upTo, next uint64) bool {
	if len(j.files) == 0 {
		return false
	}
	end := next
	if len(j.files) > 1 {
		end = j.files[1]
	}
	return end <= upTo
}

func (j *journal) syncDir() error {
	d, err := j.fs.OpenDir(j.dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// replay adds the samples of journal batch n to the heads (Open), its
// tags marked unsaved from it.
func (s *Store) replay(n uint64, data []byte) error {
	s.batch = max(s.batch, n+1)
	var ids []uint32
	var recs []Record
	err := decodeJournal(data, func(id uint32, x Sample) {
		ids = append(ids, id)
		recs = append(recs, Record{Sample: x})
	})
	for _, id := range ids {
		if s.tags[id] == nil {
			err = errors.Join(err, fmt.Errorf("tag id %d not named", id))
			break
		}
	}
	if err != nil {
		return fmt.Errorf("journal batch %d: %w", n, err)
	}
	s.apply(n, ids, recs)
	return nil
}
