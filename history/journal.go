package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The journal: one key per Append, holding every sample of the call, so
// that a sample is durable once its batch is synced without a key of its
// own (Store). A journal value is a sequence of records, each
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

func journalKey(n uint64) []byte { return binary.BigEndian.AppendUint64([]byte{kindJournal}, n) }

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

// replay adds the samples of the journal keys left to the heads (Open),
// each batch's tags marked unsaved from it.
func (s *Store) replay() error {
	return s.scan([]byte{kindJournal}, []byte{kindJournal + 1}, func(k, v []byte) error {
		if len(k) != 9 {
			return fmt.Errorf("journal key %x: damaged", k)
		}
		n := binary.BigEndian.Uint64(k[1:])
		if s.dropped == 1 || n < s.dropped {
			s.dropped = n
		}
		s.batch = max(s.batch, n+1)
		var ids []uint32
		var recs []Record
		err := decodeJournal(v, func(id uint32, x Sample) {
			ids = append(ids, id)
			recs = append(recs, Record{Sample: x})
		})
		for _, id := range ids {
			if s.tags[id] == nil {
				err = errors.Join(err, fmt.Errorf("tag id %d not named", id))
			}
		}
		if err != nil {
			return fmt.Errorf("journal batch %d: %w", n, err)
		}
		s.apply(n, ids, recs)
		return nil
	})
}
