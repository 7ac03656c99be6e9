package hlc

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMaxSkew is how far ahead of the local wall clock a remote stamp may
// be before Update refuses it.
const DefaultMaxSkew = 60 * time.Second

// MaxNodeLen is the longest node id a stamp carries, in bytes.
const MaxNodeLen = 64

// ErrSkew is wrapped by Update when a remote stamp is too far ahead of the
// local wall clock.
var ErrSkew = errors.New("hlc: remote stamp is too far in the future")

// ErrMalformed is wrapped by Parse, UnmarshalBinary and Check for a stamp
// that is not well formed.
var ErrMalformed = errors.New("hlc: malformed stamp")

// Stamp is one point of the hybrid logical clock. The zero Stamp sorts
// before every stamp a Clock returns.
type Stamp struct {
	// WallMs is physical time, Unix milliseconds.
	WallMs int64
	// Counter orders stamps within one WallMs.
	Counter uint32
	// Node is the id of the node whose clock made the stamp.
	Node string
}

// IsZero reports whether s is the zero Stamp.
func (s Stamp) IsZero() bool { return s == Stamp{} }

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b.
func Compare(a, b Stamp) int {
	if c := cmp.Compare(a.WallMs, b.WallMs); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Counter, b.Counter); c != 0 {
		return c
	}
	return strings.Compare(a.Node, b.Node)
}

// Less reports whether s sorts before t.
func (s Stamp) Less(t Stamp) bool { return Compare(s, t) < 0 }

// Max returns the later of a and b: the last-writer-wins merge of two stamps.
func Max(a, b Stamp) Stamp {
	if Compare(a, b) >= 0 {
		return a
	}
	return b
}

// CheckNode refuses a node id a stamp cannot carry: empty, longer than
// MaxNodeLen, or holding a byte outside printable ASCII ('!'..'~').
func CheckNode(node string) error {
	if node == "" || len(node) > MaxNodeLen {
		return fmt.Errorf("%w: node id %q: accepted are 1 to %d printable ASCII characters", ErrMalformed, node, MaxNodeLen)
	}
	for i := 0; i < len(node); i++ {
		if node[i] < '!' || node[i] > '~' {
			return fmt.Errorf("%w: node id %q: accepted are 1 to %d printable ASCII characters without spaces", ErrMalformed, node, MaxNodeLen)
		}
	}
	return nil
}

// Check refuses a stamp no Clock makes: a negative WallMs or a bad node id.
// The zero Stamp is refused too.
func (s Stamp) Check() error {
	if s.WallMs < 0 || s.WallMs > maxWallMs {
		return fmt.Errorf("%w: wall time %d ms is outside 0..%d", ErrMalformed, s.WallMs, int64(maxWallMs))
	}
	return CheckNode(s.Node)
}

// maxWallMs keeps the text form fixed-width (15 decimal digits, year ~33658).
const maxWallMs = 999_999_999_999_999

const (
	wallDigits    = 15
	counterDigits = 10
	textPrefixLen = wallDigits + 1 + counterDigits + 1
)

// String is the sortable text form: 15 decimal digits of WallMs, '.', 10
// digits of Counter, '.', Node. Byte order of the text is Compare's order.
func (s Stamp) String() string {
	var b strings.Builder
	b.Grow(textPrefixLen + len(s.Node))
	w := strconv.FormatInt(s.WallMs, 10)
	b.WriteString(strings.Repeat("0", max(0, wallDigits-len(w))))
	b.WriteString(w)
	b.WriteByte('.')
	c := strconv.FormatUint(uint64(s.Counter), 10)
	b.WriteString(strings.Repeat("0", counterDigits-len(c)))
	b.WriteString(c)
	b.WriteByte('.')
	b.WriteString(s.Node)
	return b.String()
}

// Parse reads the text form. It accepts exactly what String writes for a
// stamp that passes Check.
func Parse(text string) (Stamp, error) {
	if len(text) <= textPrefixLen || text[wallDigits] != '.' || text[textPrefixLen-1] != '.' {
		return Stamp{}, fmt.Errorf("%w: %q is not WWWWWWWWWWWWWWW.CCCCCCCCCC.node", ErrMalformed, text)
	}
	wall, err := digits(text[:wallDigits])
	if err != nil {
		return Stamp{}, fmt.Errorf("%w: %q: wall time: %v", ErrMalformed, text, err)
	}
	c, err := digits(text[wallDigits+1 : textPrefixLen-1])
	if err != nil || c > math.MaxUint32 {
		return Stamp{}, fmt.Errorf("%w: %q: counter is not 0..%d", ErrMalformed, text, uint32(math.MaxUint32))
	}
	s := Stamp{WallMs: int64(wall), Counter: uint32(c), Node: text[textPrefixLen:]}
	if err := s.Check(); err != nil {
		return Stamp{}, err
	}
	return s, nil
}

func digits(s string) (uint64, error) {
	var v uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("not decimal digits")
		}
		v = v*10 + uint64(s[i]-'0')
	}
	return v, nil
}

// binaryLen is the encoded size of s: 8 bytes WallMs, 4 Counter, 1 node
// length, the node.
func (s Stamp) binaryLen() int { return 13 + len(s.Node) }

// AppendBinary appends the binary form (big-endian WallMs, Counter, a length
// byte and the node id) to b.
func (s Stamp) AppendBinary(b []byte) ([]byte, error) {
	if err := s.Check(); err != nil && !s.IsZero() {
		return nil, err
	}
	b = binary.BigEndian.AppendUint64(b, uint64(s.WallMs))
	b = binary.BigEndian.AppendUint32(b, s.Counter)
	b = append(b, byte(len(s.Node)))
	return append(b, s.Node...), nil
}

// MarshalBinary is AppendBinary to a new slice.
func (s Stamp) MarshalBinary() ([]byte, error) { return s.AppendBinary(make([]byte, 0, s.binaryLen())) }

// DecodeBinary reads one stamp from the front of b and returns the rest. The
// zero Stamp (a "from the beginning" cursor) decodes; any other stamp must
// pass Check.
func DecodeBinary(b []byte) (Stamp, []byte, error) {
	if len(b) < 13 {
		return Stamp{}, nil, fmt.Errorf("%w: %d bytes, a stamp needs at least 13", ErrMalformed, len(b))
	}
	n := int(b[12])
	if len(b) < 13+n {
		return Stamp{}, nil, fmt.Errorf("%w: node id of %d bytes is truncated", ErrMalformed, n)
	}
	w := binary.BigEndian.Uint64(b)
	if w > maxWallMs {
		return Stamp{}, nil, fmt.Errorf("%w: wall time %d ms is outside 0..%d", ErrMalformed, w, int64(maxWallMs))
	}
	s := Stamp{WallMs: int64(w), Counter: binary.BigEndian.Uint32(b[8:]), Node: string(b[13 : 13+n])}
	if !s.IsZero() {
		if err := s.Check(); err != nil {
			return Stamp{}, nil, err
		}
	}
	return s, b[13+n:], nil
}

// UnmarshalBinary reads exactly one stamp.
func (s *Stamp) UnmarshalBinary(b []byte) error {
	v, rest, err := DecodeBinary(b)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after the stamp", ErrMalformed, len(rest))
	}
	*s = v
	return nil
}

// Clock is one node's hybrid logical clock. It is safe for concurrent use.
type Clock struct {
	node    string
	wall    func() int64
	maxSkew int64 // ms

	mu   sync.Mutex
	last Stamp // mu must be held.
}

// New returns the clock of node. wall returns physical time in Unix
// milliseconds; maxSkew ≤ 0 means DefaultMaxSkew. It panics on a node id
// CheckNode refuses (a programming error: node ids are checked at Open).
func New(node string, wall func() int64, maxSkew time.Duration) *Clock {
	if err := CheckNode(node); err != nil {
		panic("hlc: New needs a valid node id: " + err.Error())
	}
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	return &Clock{node: node, wall: wall, maxSkew: maxSkew.Milliseconds()}
}

// Node is the node id the clock stamps with.
func (c *Clock) Node() string { return c.node }

// MaxSkew is how far ahead of the wall clock Update accepts a remote stamp.
func (c *Clock) MaxSkew() time.Duration { return time.Duration(c.maxSkew) * time.Millisecond }

// Now returns a stamp later than every stamp returned or accepted before.
func (c *Clock) Now() Stamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = next(c.last, c.wall(), c.node)
	return c.last
}

// Last returns the latest stamp made or accepted, without advancing.
func (c *Clock) Last() Stamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Update merges a remote stamp into the clock: later local stamps sort after
// it. A stamp more than MaxSkew ahead of the wall clock is refused (ErrSkew)
// and the clock does not move; a malformed one is refused (ErrMalformed).
func (c *Clock) Update(remote Stamp) error {
	if err := c.CheckRemote(remote); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if Compare(remote, c.last) > 0 {
		c.last = Stamp{WallMs: remote.WallMs, Counter: remote.Counter, Node: c.node}
		if Compare(c.last, remote) < 0 { // same wall and counter, our node sorts first
			c.last = next(c.last, c.last.WallMs, c.node)
		}
	}
	return nil
}

// CheckRemote is Update's refusal without the merge: it reports whether a
// remote stamp would be accepted now.
func (c *Clock) CheckRemote(remote Stamp) error {
	if err := remote.Check(); err != nil {
		return err
	}
	if pt := c.wall(); remote.WallMs > pt+c.maxSkew {
		return fmt.Errorf("%w: stamp %s is %d ms ahead of this node's clock, at most %d ms accepted",
			ErrSkew, remote, remote.WallMs-pt, c.maxSkew)
	}
	return nil
}

// next is the stamp after last at wall time pt: the wall time when it moved
// past last, else last's wall time with the counter one up (a full counter
// moves the wall time on by 1 ms).
func next(last Stamp, pt int64, node string) Stamp {
	if pt > last.WallMs {
		return Stamp{WallMs: pt, Node: node}
	}
	if last.Counter == math.MaxUint32 {
		return Stamp{WallMs: last.WallMs + 1, Node: node}
	}
	return Stamp{WallMs: last.WallMs, Counter: last.Counter + 1, Node: node}
}
