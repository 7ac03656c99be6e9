package client

// The de-duplication rule of the Hot modes is a pure decision over
// explicit timestamps (nanoseconds since any fixed origin): no clock is
// read here and the file imports no time package.
//
// In Hot (a) and Hot (b) the same monitored node is subscribed on more than
// one server of the set. Each node of an otopcua pair polls the field device
// itself, so one device value reaches the client from each server with a
// different SourceTimestamp (they differ by up to a poll interval plus the
// servers' clock skew). A notification is a duplicate when the same
// subscribed node already delivered a value that is equal (Variant equality,
// compared on its binary encoding) with the same StatusCode and a
// SourceTimestamp no more than Window away. A value older than the newest
// delivered one of that node by more than Window is a stale replay (a
// backup's Sampling queue reported at a failover) and is dropped too, and
// so is the first value of an item just created on a server (its current
// value, not a change) when it is older than the newest delivered one: a
// server placed later, or polling later, would otherwise hand the
// application an older value after a newer one.
//
// Limit: a value that goes A → B → A within Window is indistinguishable from
// a second copy of the first A, so the second A is dropped ("merged").

// DedupVerdict is what Dedup decides for one notification.
type DedupVerdict int

const (
	// Deliver: a new value; it is remembered.
	Deliver DedupVerdict = iota
	// Duplicate: an equal value with an equal status was delivered within
	// Window of its SourceTimestamp.
	Duplicate
	// Stale: its SourceTimestamp is older than the newest delivered one
	// of the node by more than Window.
	Stale
)

func (v DedupVerdict) String() string {
	switch v {
	case Deliver:
		return "deliver"
	case Duplicate:
		return "duplicate"
	case Stale:
		return "stale"
	}
	return "DedupVerdict(?)"
}

// Sample is one notification as Dedup sees it.
type Sample struct {
	// Node is the subscribed node (its client handle, as a string or
	// number formatted by the caller).
	Node string
	// Value is the value's binary encoding (Variant); equal values have
	// equal encodings.
	Value string
	// Status is the StatusCode.
	Status uint32
	// Source is the SourceTimestamp in nanoseconds; HasSource is false
	// when the server sent none (then the sample is always delivered and
	// not remembered: nothing to compare it by).
	Source    int64
	HasSource bool
	// Initial: the first value of an item just created on a server (its
	// current value then, not a change). One older than the newest value
	// delivered for the node is superseded: Stale.
	Initial bool
}

// MaxRemembered caps the values remembered per node whatever their rate:
// past it the oldest are forgotten (a duplicate of one of those would be
// delivered again).
const MaxRemembered = 4096

// Dedup remembers, per node, the values delivered within the last
// 2 × Window of the newest delivered SourceTimestamp (a value up to Window
// old can still match one up to Window older than itself), so its memory
// is bounded by what a node delivers in 2 × Window, and by MaxRemembered.
// Not safe for
// concurrent use.
type Dedup struct {
	// Window is the de-duplication window in nanoseconds (Options.DedupWindow).
	Window int64

	nodes map[string]*nodeMemory
}

type nodeMemory struct {
	newest int64
	recent []Sample // delivered, oldest first by arrival
}

// Offer decides whether s is delivered and, if so, remembers it.
func (d *Dedup) Offer(s Sample) DedupVerdict {
	if !s.HasSource {
		return Deliver
	}
	if d.nodes == nil {
		d.nodes = make(map[string]*nodeMemory)
	}
	m := d.nodes[s.Node]
	if m == nil {
		m = &nodeMemory{newest: s.Source}
		d.nodes[s.Node] = m
	}
	if m.newest-s.Source > d.Window || s.Initial && s.Source < m.newest {
		return Stale
	}
	for _, r := range m.recent {
		if r.Value == s.Value && r.Status == s.Status && abs(r.Source-s.Source) <= d.Window {
			return Duplicate
		}
	}
	m.newest = max(m.newest, s.Source)
	m.recent = append(m.recent, s)
	m.prune(2 * d.Window)
	if len(m.recent) > MaxRemembered {
		m.recent = append(m.recent[:0], m.recent[len(m.recent)-MaxRemembered:]...)
	}
	return Deliver
}

// Remembered is how many values are remembered for node (for tests and
// bounds checks).
func (d *Dedup) Remembered(node string) int {
	if m := d.nodes[node]; m != nil {
		return len(m.recent)
	}
	return 0
}

// prune drops what is older than keep before the newest.
func (m *nodeMemory) prune(keep int64) {
	n := 0
	for _, r := range m.recent {
		if m.newest-r.Source <= keep {
			m.recent[n] = r
			n++
		}
	}
	clear(m.recent[n:])
	m.recent = m.recent[:n]
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
