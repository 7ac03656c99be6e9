package addrspace

import (
	"github.com/gopcua/opcua/ua"
)

// Watch registers fn to be called with every new Value DataValue of variable
// nodeID, on the writer's goroutine, synchronously inside Set, SetDataValue
// and client writes (possibly concurrently for different variables). fn must
// not block and must not modify the DataValue. Variables whose Value comes
// from a Getter notify only when their owner also calls Set. The returned
// cancel removes the registration and may be called more than once.
// Status: BadNodeIdUnknown, BadAttributeIdInvalid (not a Variable).
func (as *AddressSpace) Watch(nodeID *ua.NodeID, fn func(*ua.DataValue)) (cancel func(), status ua.StatusCode) {
	as.mu.RLock()
	n := as.lookup(nodeID)
	as.mu.RUnlock()
	switch {
	case n == nil:
		return func() {}, ua.StatusBadNodeIDUnknown
	case n.class != ua.NodeClassVariable:
		return func() {}, ua.StatusBadAttributeIDInvalid
	}
	return n.v.watch(fn), ua.StatusOK
}

// Source is the address space as the subscription engine sees it
// (subscription.Source). Its Read takes a NodeId and an attribute where the
// service layer's Read takes a ReadValueID, so it is a separate type.
type Source struct {
	as *AddressSpace
}

// Source returns the view of as that the subscription engine reads.
func (as *AddressSpace) Source() *Source { return &Source{as: as} }

// Read returns attribute attr of node nodeID. The Value carries the
// timestamps it was stored with (source time and the server time of the
// change); other attributes carry none. A failed read is a DataValue whose
// Status is BadNodeIdUnknown or BadAttributeIdInvalid.
func (s *Source) Read(nodeID *ua.NodeID, attr ua.AttributeID) *ua.DataValue {
	if nodeID == nil {
		return statusValue(ua.StatusBadNodeIDUnknown)
	}
	dv, st := s.as.readAttribute(nodeID, attr)
	if st != ua.StatusOK {
		return statusValue(st)
	}
	return dv
}

// Watch is AddressSpace.Watch.
func (s *Source) Watch(nodeID *ua.NodeID, fn func(*ua.DataValue)) (cancel func(), status ua.StatusCode) {
	return s.as.Watch(nodeID, fn)
}
