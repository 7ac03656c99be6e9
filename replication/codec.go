package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/localdb/hlc"
)

// Protocol limits. A message over them is refused by the sender's encoder
// and by the receiver's decoder.
const (
	// MaxBatchChanges is the most changes one Batch carries.
	MaxBatchChanges = localdb.MaxChanges
	// MaxMessageBytes is the largest encoded message.
	MaxMessageBytes = 4 << 20
	// maxName bounds a table name or node id; maxKey a row key.
	maxName = 64
	maxKey  = 1024
)

// ErrMalformed is wrapped by Decode for bytes that are not exactly one
// well-formed message.
var ErrMalformed = errors.New("replication: malformed sync message")

// Message types, the byte after the version.
const (
	msgPull         = 1
	msgBatch        = 2
	msgAck          = 3
	msgHistoryPull  = 4
	msgHistoryBatch = 5
)

// wireVersion is the first byte of every message.
const wireVersion = 1

// Pull asks a peer for the changes of one table after a stamp.
type Pull struct {
	// Node is the puller's node id (for the peer's status page).
	Node string
	// Table is one of localdb.ReplicatedTables.
	Table string
	// After is the puller's cursor on this peer; zero for "from the start".
	After hlc.Stamp
	// Limit is the most changes wanted, 1..MaxBatchChanges.
	Limit uint32
}

// Batch is a peer's answer to a Pull.
type Batch struct {
	// Changes are in stamp order, all of the pulled table.
	Changes []localdb.Change
	// More is true when the peer holds more changes after the last one.
	More bool
}

// Ack tells the peer how far the puller applied (for the peer's status).
type Ack struct {
	Node    string
	Table   string
	Applied hlc.Stamp
}

// message is a Pull, Batch, Ack, HistoryPull or HistoryBatch.
type message interface{ msgType() byte }

func (*Pull) msgType() byte         { return msgPull }
func (*Batch) msgType() byte        { return msgBatch }
func (*Ack) msgType() byte          { return msgAck }
func (*HistoryPull) msgType() byte  { return msgHistoryPull }
func (*HistoryBatch) msgType() byte { return msgHistoryBatch }

// Encode writes m (a *Pull, *Batch or *Ack). It refuses a message that
// Decode would refuse.
func Encode(m any) ([]byte, error) {
	var b []byte
	switch m := m.(type) {
	case *Pull:
		if err := m.check(); err != nil {
			return nil, err
		}
		b = []byte{wireVersion, msgPull}
		b = appendString(b, m.Node)
		b = appendString(b, m.Table)
		b = appendStamp(b, m.After)
		b = binary.BigEndian.AppendUint32(b, m.Limit)
	case *Batch:
		if len(m.Changes) > MaxBatchChanges {
			return nil, fmt.Errorf("%w: %d changes, at most %d", ErrMalformed, len(m.Changes), MaxBatchChanges)
		}
		b = []byte{wireVersion, msgBatch, boolByte(m.More)}
		b = binary.AppendUvarint(b, uint64(len(m.Changes)))
		for _, c := range m.Changes {
			if err := checkChange(c); err != nil {
				return nil, err
			}
			b = appendString(b, c.Table)
			b = appendString(b, c.Key)
			b = appendStamp(b, c.Stamp)
			b = append(b, boolByte(c.Deleted))
			b = appendString(b, string(c.Row))
			if len(b) > MaxMessageBytes {
				return nil, fmt.Errorf("%w: batch over %d bytes", ErrMalformed, MaxMessageBytes)
			}
		}
	case *Ack:
		if err := checkName("node", m.Node); err != nil {
			return nil, err
		}
		if err := checkTable(m.Table); err != nil {
			return nil, err
		}
		b = []byte{wireVersion, msgAck}
		b = appendString(b, m.Node)
		b = appendString(b, m.Table)
		b = appendStamp(b, m.Applied)
	case *HistoryPull:
		if err := m.check(); err != nil {
			return nil, err
		}
		b = []byte{wireVersion, msgHistoryPull}
		b = appendString(b, m.Tag)
		b = binary.BigEndian.AppendUint64(b, uint64(m.After))
		b = binary.BigEndian.AppendUint64(b, uint64(m.Before))
		b = binary.BigEndian.AppendUint32(b, m.Limit)
	case *HistoryBatch:
		if err := m.check(); err != nil {
			return nil, err
		}
		b = make([]byte, 0, 4+len(m.Samples)*historySampleBytes)
		b = append(b, wireVersion, msgHistoryBatch, boolByte(m.More))
		b = binary.AppendUvarint(b, uint64(len(m.Samples)))
		for _, x := range m.Samples {
			b = binary.BigEndian.AppendUint64(b, uint64(x.At))
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(x.Value))
			b = binary.BigEndian.AppendUint32(b, x.Status)
		}
	default:
		return nil, fmt.Errorf("replication: cannot encode %T", m)
	}
	return b, nil
}

// Decode reads exactly one message of the type of m (a *Pull, *Batch or
// *Ack) from b. Anything else — another type, a bad length, an unknown
// table, a malformed stamp, a tombstone with a row, trailing bytes, over
// the limits — is refused with ErrMalformed and m is left unchanged.
func Decode(b []byte, m any) error {
	msg, ok := m.(message)
	if !ok {
		return fmt.Errorf("replication: cannot decode into %T", m)
	}
	if len(b) > MaxMessageBytes {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(b), MaxMessageBytes)
	}
	if len(b) < 2 || b[0] != wireVersion || b[1] != msg.msgType() {
		return fmt.Errorf("%w: not a version %d message of type %d", ErrMalformed, wireVersion, msg.msgType())
	}
	r := reader{b: b[2:]}
	switch m := m.(type) {
	case *Pull:
		p := Pull{Node: r.string(maxName), Table: r.string(maxName), After: r.stamp(true), Limit: r.uint32()}
		if err := r.end(); err != nil {
			return err
		}
		if err := p.check(); err != nil {
			return err
		}
		*m = p
	case *Batch:
		v, err := decodeBatch(&r)
		if err != nil {
			return err
		}
		*m = v
	case *Ack:
		a := Ack{Node: r.string(maxName), Table: r.string(maxName), Applied: r.stamp(true)}
		if err := r.end(); err != nil {
			return err
		}
		if err := errors.Join(checkName("node", a.Node), checkTable(a.Table)); err != nil {
			return err
		}
		*m = a
	case *HistoryPull:
		p := HistoryPull{Tag: r.string(maxTag), After: int64(r.uint64()), Before: int64(r.uint64()), Limit: r.uint32()}
		if err := r.end(); err != nil {
			return err
		}
		if err := p.check(); err != nil {
			return err
		}
		*m = p
	case *HistoryBatch:
		v, err := decodeHistoryBatch(&r)
		if err != nil {
			return err
		}
		*m = v
	}
	return nil
}

func decodeHistoryBatch(r *reader) (HistoryBatch, error) {
	var v HistoryBatch
	v.More = r.bool()
	n := r.uvarint()
	if r.err == nil && (n > MaxHistorySamples || n*historySampleBytes != uint64(len(r.b))) {
		return HistoryBatch{}, fmt.Errorf("%w: %d samples in %d bytes, at most %d", ErrMalformed, n, len(r.b), MaxHistorySamples)
	}
	if n > 0 && r.err == nil {
		v.Samples = make([]Sample, 0, n)
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		v.Samples = append(v.Samples, Sample{At: int64(r.uint64()), Value: math.Float64frombits(r.uint64()), Status: r.uint32()})
	}
	if err := r.end(); err != nil {
		return HistoryBatch{}, err
	}
	if err := v.check(); err != nil {
		return HistoryBatch{}, err
	}
	return v, nil
}

func decodeBatch(r *reader) (Batch, error) {
	var v Batch
	v.More = r.bool()
	n := r.uvarint()
	if r.err == nil && n > MaxBatchChanges {
		return Batch{}, fmt.Errorf("%w: %d changes, at most %d", ErrMalformed, n, MaxBatchChanges)
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		c := localdb.Change{Table: r.string(maxName), Key: r.string(maxKey), Stamp: r.stamp(false), Deleted: r.bool()}
		if row := r.string(MaxMessageBytes); row != "" {
			c.Row = []byte(row)
		}
		if r.err != nil {
			break
		}
		if err := checkChange(c); err != nil {
			return Batch{}, fmt.Errorf("change %d: %w", i, err)
		}
		v.Changes = append(v.Changes, c)
	}
	if err := r.end(); err != nil {
		return Batch{}, err
	}
	return v, nil
}

func (p *Pull) check() error {
	if err := errors.Join(checkName("node", p.Node), checkTable(p.Table)); err != nil {
		return err
	}
	if p.Limit < 1 || p.Limit > MaxBatchChanges {
		return fmt.Errorf("%w: limit %d, accepted 1..%d", ErrMalformed, p.Limit, MaxBatchChanges)
	}
	if !p.After.IsZero() {
		if err := p.After.Check(); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	return nil
}

// checkChange refuses what no LocalDb writes: an unknown table, a zero or
// malformed stamp, a tombstone with a row, a row-less upsert, a long key.
func checkChange(c localdb.Change) error {
	if err := checkTable(c.Table); err != nil {
		return err
	}
	if err := c.Stamp.Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	switch {
	case c.Key == "" || len(c.Key) > maxKey:
		return fmt.Errorf("%w: key of %d bytes, accepted 1..%d", ErrMalformed, len(c.Key), maxKey)
	case c.Deleted && len(c.Row) != 0:
		return fmt.Errorf("%w: a tombstone carries a row", ErrMalformed)
	case !c.Deleted && len(c.Row) == 0:
		return fmt.Errorf("%w: a row change carries no row", ErrMalformed)
	}
	return nil
}

// replicatedTables is localdb.ReplicatedTables, copied once: checkTable
// runs for every change encoded or decoded.
var replicatedTables = localdb.ReplicatedTables()

func checkTable(t string) error {
	if !slices.Contains(replicatedTables, t) {
		return fmt.Errorf("%w: table %q is not replicated", ErrMalformed, t)
	}
	return nil
}

func checkName(what, s string) error {
	if err := hlc.CheckNode(s); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
	}
	return nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStamp(b []byte, s hlc.Stamp) []byte {
	out, err := s.AppendBinary(b)
	if err != nil {
		panic("replication: stamps are checked before encoding: " + err.Error())
	}
	return out
}

// reader consumes b; the first error sticks and later reads return zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad length")
		return 0
	}
	if n != len(binary.AppendUvarint(nil, v)) {
		r.fail("length not in its shortest form")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) string(limit int) string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(limit) || n > uint64(len(r.b)) {
		r.fail("string of %d bytes (limit %d, %d left)", n, limit, len(r.b))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) bool() bool {
	if r.err != nil {
		return false
	}
	if len(r.b) < 1 || r.b[0] > 1 {
		r.fail("bad boolean")
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

func (r *reader) uint32() uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 4 {
		r.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) uint64() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) stamp(zeroOK bool) hlc.Stamp {
	if r.err != nil {
		return hlc.Stamp{}
	}
	s, rest, err := hlc.DecodeBinary(r.b)
	if err != nil {
		r.fail("%v", err)
		return hlc.Stamp{}
	}
	if s.IsZero() && !zeroOK {
		r.fail("zero stamp")
		return hlc.Stamp{}
	}
	r.b = rest
	return s
}

// end reports the first error, or trailing bytes.
func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the message", len(r.b))
	}
	return r.err
}
