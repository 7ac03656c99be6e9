package addrspace

import (
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// nodeKey is a comparable form of a NodeId. The three numeric encodings
// (two-byte, four-byte, numeric) of the same identifier map to one key.
type nodeKey struct {
	ns   uint16
	kind ua.NodeIDType // NodeIDTypeNumeric for every numeric encoding
	num  uint32
	str  string // string, GUID or opaque identifier
}

func keyOf(nid *ua.NodeID) nodeKey {
	switch t := nid.Type(); t {
	case ua.NodeIDTypeTwoByte, ua.NodeIDTypeFourByte, ua.NodeIDTypeNumeric:
		return nodeKey{ns: nid.Namespace(), kind: ua.NodeIDTypeNumeric, num: nid.IntID()}
	default:
		return nodeKey{ns: nid.Namespace(), kind: t, str: nid.StringID()}
	}
}

func numKey(i uint32) nodeKey { return nodeKey{kind: ua.NodeIDTypeNumeric, num: i} }

// isNull reports whether id is absent or the null NodeId (ns=0;i=0).
func isNull(nid *ua.NodeID) bool {
	return nid == nil || keyOf(nid) == numKey(0)
}

// ref is one reference as seen from the node that holds it. Every reference
// is stored twice: forward on its source and inverse on its target.
type ref struct {
	typ     *node
	target  *node
	forward bool
}

// node is one node of the address space. Every field except those of v (see
// Variable) is guarded by AddressSpace.mu.
type node struct {
	id          *ua.NodeID
	key         nodeKey
	class       ua.NodeClass
	browseName  *ua.QualifiedName
	displayName *ua.LocalizedText
	description *ua.LocalizedText
	writeMask   uint32
	refs        []ref

	// super is the supertype of a type node (the source of its inverse
	// HasSubtype reference), nil for roots and instances.
	super *node

	// Type nodes.
	isAbstract bool
	// ReferenceType.
	symmetric   bool
	inverseName *ua.LocalizedText
	// View.
	containsNoLoops bool
	// Object and View.
	eventNotifier byte
	// notifier holds the event watchers of an Object or View whose
	// EventNotifier has had SubscribeToEvents; nil for other nodes. Once
	// set it never changes, so it may be used after mu is released.
	notifier *watchList[*events.Event]
	// Method.
	executable     bool
	userExecutable bool

	// Variable and VariableType.
	dataType        *ua.NodeID
	valueRank       int32
	arrayDimensions []uint32
	// Variable.
	accessLevel     byte
	userAccessLevel byte
	minSampling     float64
	historizing     bool

	// v holds the Value of a Variable (and the optional default Value of a
	// VariableType); nil for every other class.
	v *Variable
}

// typeDefinition returns the target of n's forward HasTypeDefinition
// reference, or nil. mu must be held.
func (n *node) typeDefinition() *node {
	for _, r := range n.refs {
		if r.forward && r.typ.key == numKey(id.HasTypeDefinition) {
			return r.target
		}
	}
	return nil
}

// isSubtypeOf reports whether n is base or a (transitive) subtype of it.
// mu must be held.
func (n *node) isSubtypeOf(base *node) bool {
	for t, depth := n, 0; t != nil && depth < maxTypeDepth; t, depth = t.super, depth+1 {
		if t == base {
			return true
		}
	}
	return false
}

// maxTypeDepth bounds walks up the type hierarchy so that a HasSubtype loop
// added by mistake cannot hang a reader.
const maxTypeDepth = 64

// hasRef reports whether n already holds the reference (typ, target, forward).
// mu must be held.
func (n *node) hasRef(typ, target *node, forward bool) bool {
	for _, r := range n.refs {
		if r.typ == typ && r.target == target && r.forward == forward {
			return true
		}
	}
	return false
}

func nodeIDPtr(n *node) *ua.NodeID {
	if n == nil {
		return ua.NewTwoByteNodeID(0)
	}
	return n.id
}
