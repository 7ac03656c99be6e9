package membership

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Ordering is the causal relation between two vector clocks.
type Ordering uint8

// Vector clock orderings.
const (
	Same Ordering = iota
	Before
	After
	Concurrent
)

func (o Ordering) String() string {
	return [...]string{"Same", "Before", "After", "Concurrent"}[o]
}

// VectorClock is an immutable vector clock keyed by node name (see
// VClockNode). The zero value is the empty clock. Every method returns a new
// clock and leaves the receiver unchanged.
type VectorClock struct {
	v map[string]uint64
}

// VClockNode is the vector clock entry name of a member: `host:port-uid`,
// as Akka's ClusterCoreDaemon.VclockName.
func VClockNode(u UniqueAddress) string { return u.NodeID() + "-" + strconv.FormatUint(u.UID, 10) }

// NewVectorClock builds a clock from its entries (for decoders); entries
// with a zero counter are left out, as a missing entry counts as 0.
func NewVectorClock(entries map[string]uint64) VectorClock {
	n := make(map[string]uint64, len(entries))
	for k, t := range entries {
		if t > 0 {
			n[k] = t
		}
	}
	return VectorClock{v: n}
}

// Get returns the counter of node (0 when absent).
func (vc VectorClock) Get(node string) uint64 { return vc.v[node] }

// Len is the number of entries.
func (vc VectorClock) Len() int { return len(vc.v) }

// Nodes returns the entry names in sorted order.
func (vc VectorClock) Nodes() []string { return slices.Sorted(maps.Keys(vc.v)) }

// Increment returns a clock with node's counter advanced by one.
func (vc VectorClock) Increment(node string) VectorClock {
	n := make(map[string]uint64, len(vc.v)+1)
	maps.Copy(n, vc.v)
	n[node]++
	return VectorClock{v: n}
}

// Merge returns the entry-wise maximum of both clocks.
func (vc VectorClock) Merge(o VectorClock) VectorClock {
	n := make(map[string]uint64, len(vc.v)+len(o.v))
	maps.Copy(n, vc.v)
	for k, t := range o.v {
		if t > n[k] {
			n[k] = t
		}
	}
	return VectorClock{v: n}
}

// Prune drops node's entry (done when the member is removed).
func (vc VectorClock) Prune(node string) VectorClock {
	if _, ok := vc.v[node]; !ok {
		return vc
	}
	n := maps.Clone(vc.v)
	delete(n, node)
	return VectorClock{v: n}
}

// Compare reports how vc relates to o: Same, Before (o dominates), After (vc
// dominates) or Concurrent. A missing entry counts as 0.
func (vc VectorClock) Compare(o VectorClock) Ordering {
	less, more := false, false
	for k, t := range vc.v {
		switch u := o.v[k]; {
		case t < u:
			less = true
		case t > u:
			more = true
		}
	}
	for k, u := range o.v {
		if _, ok := vc.v[k]; !ok && u > 0 {
			less = true
		}
	}
	switch {
	case less && more:
		return Concurrent
	case less:
		return Before
	case more:
		return After
	default:
		return Same
	}
}

func (vc VectorClock) String() string {
	parts := make([]string, 0, len(vc.v))
	for _, k := range vc.Nodes() {
		parts = append(parts, k+":"+strconv.FormatUint(vc.v[k], 10))
	}
	return "{" + strings.Join(parts, " ") + "}"
}
