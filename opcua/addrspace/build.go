package addrspace

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// AddFolder adds a FolderType object below parentID, referenced by
// Organizes. browseName is "Name" (in nodeID's namespace) or "ns:Name";
// an empty displayName takes the name.
func (as *AddressSpace) AddFolder(nodeID *ua.NodeID, browseName, displayName string, parentID *ua.NodeID) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	n, err := as.newNode(nodeID, ua.NodeClassObject, browseName, displayName)
	if err != nil {
		return err
	}
	return as.attach(n, parentID, id.Organizes, id.FolderType)
}

// AddObject adds an object of type typeDef (BaseObjectType when nil) below
// parentID, referenced by Organizes from a folder and HasComponent from any
// other parent.
func (as *AddressSpace) AddObject(nodeID *ua.NodeID, browseName, displayName string, parentID, typeDef *ua.NodeID) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	n, err := as.newNode(nodeID, ua.NodeClassObject, browseName, displayName)
	if err != nil {
		return err
	}
	return as.attachTyped(n, parentID, typeDef, id.BaseObjectType)
}

// AddVariable adds a BaseDataVariableType variable below parentID
// (Organizes from a folder, HasComponent otherwise) and returns its handle.
// dataType is the NodeId of its DataType; initial is its first value (any
// type ua.NewVariant accepts; nil for a null value) and also fixes its
// ValueRank: 1 for a slice, -1 (Scalar) otherwise. accessLevel is both the
// AccessLevel and the UserAccessLevel (ua.AccessLevelType bits).
func (as *AddressSpace) AddVariable(nodeID *ua.NodeID, browseName, displayName string, parentID, dataType *ua.NodeID, initial any, accessLevel byte) (*Variable, error) {
	return as.addVariable(nodeID, browseName, displayName, parentID, dataType, initial, accessLevel, false)
}

// AddProperty adds a read-only PropertyType variable to parentID,
// referenced by HasProperty; otherwise as AddVariable.
func (as *AddressSpace) AddProperty(nodeID *ua.NodeID, browseName string, parentID, dataType *ua.NodeID, initial any) (*Variable, error) {
	return as.addVariable(nodeID, browseName, "", parentID, dataType, initial, byte(ua.AccessLevelTypeCurrentRead), true)
}

func (as *AddressSpace) addVariable(nodeID *ua.NodeID, browseName, displayName string, parentID, dataType *ua.NodeID, initial any, accessLevel byte, property bool) (*Variable, error) {
	var vr *ua.Variant
	switch x := initial.(type) {
	case *ua.Variant:
		vr = x
	default:
		var err error
		if vr, err = ua.NewVariant(initial); err != nil {
			return nil, fmt.Errorf("addrspace: initial value of %s: %w", nodeID, err)
		}
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	dt := as.lookup(dataType)
	if dt == nil || dt.class != ua.NodeClassDataType {
		return nil, fmt.Errorf("%w: data type %s of %s", ErrUnknownNode, dataType, nodeID)
	}
	n, err := as.newNode(nodeID, ua.NodeClassVariable, browseName, displayName)
	if err != nil {
		return nil, err
	}
	n.dataType = dt.id
	n.valueRank = -1
	if vr.Has(ua.VariantArrayValues) {
		n.valueRank = 1
		n.arrayDimensions = []uint32{0}
	}
	n.accessLevel, n.userAccessLevel = accessLevel, accessLevel
	if property {
		err = as.attach(n, parentID, id.HasProperty, id.PropertyType)
	} else {
		err = as.attachTyped(n, parentID, nil, id.BaseDataVariableType)
	}
	if err != nil {
		return nil, err
	}
	now := as.clock.Now()
	return newVariable(as, n, &ua.DataValue{
		EncodingMask:    ua.DataValueValue | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
		Value:           vr,
		SourceTimestamp: now,
		ServerTimestamp: now,
	}), nil
}

// newNode validates a new node's identity and builds it, unlinked. mu must
// be held.
func (as *AddressSpace) newNode(nodeID *ua.NodeID, class ua.NodeClass, browseName, displayName string) (*node, error) {
	switch {
	case nodeID == nil || isNull(nodeID):
		return nil, fmt.Errorf("%w: null NodeId", ErrUnknownNode)
	case nodeID.Namespace() == 0:
		return nil, fmt.Errorf("%w: %s", ErrStandardNodeID, nodeID)
	case int(nodeID.Namespace()) >= len(as.namespaces):
		return nil, fmt.Errorf("%w: %s", ErrBadNamespace, nodeID)
	case as.lookup(nodeID) != nil:
		return nil, fmt.Errorf("%w: %s", ErrNodeExists, nodeID)
	}
	bn := parseQualifiedName(browseName, nodeID.Namespace())
	if displayName == "" {
		displayName = bn.Name
	}
	return &node{
		id:          nodeID,
		key:         keyOf(nodeID),
		class:       class,
		browseName:  bn,
		displayName: ua.NewLocalizedText(displayName),
	}, nil
}

// attachTyped links n below parentID with type definition typeDef (def when
// nil): Organizes from a folder, HasComponent otherwise. mu must be held.
func (as *AddressSpace) attachTyped(n *node, parentID, typeDef *ua.NodeID, def uint32) error {
	parent := as.lookup(parentID)
	if parent == nil {
		return fmt.Errorf("%w: parent %s of %s", ErrUnknownNode, parentID, n.id)
	}
	refType := uint32(id.HasComponent)
	if td := parent.typeDefinition(); td != nil && td.isSubtypeOf(as.nodes[numKey(id.FolderType)]) {
		refType = id.Organizes
	}
	if typeDef == nil {
		return as.attach(n, parentID, refType, def)
	}
	td := as.lookup(typeDef)
	if td == nil || (td.class != ua.NodeClassObjectType && td.class != ua.NodeClassVariableType) {
		return fmt.Errorf("%w: type definition %s of %s", ErrUnknownNode, typeDef, n.id)
	}
	as.attachTo(n, parent, as.nodes[numKey(refType)], td)
	return nil
}

// attach links n below parentID by refType with type definition typeDef
// (both namespace 0). mu must be held.
func (as *AddressSpace) attach(n *node, parentID *ua.NodeID, refType, typeDef uint32) error {
	parent := as.lookup(parentID)
	if parent == nil {
		return fmt.Errorf("%w: parent %s of %s", ErrUnknownNode, parentID, n.id)
	}
	as.attachTo(n, parent, as.nodes[numKey(refType)], as.nodes[numKey(typeDef)])
	return nil
}

// attachTo links the new node n and adds it to the table. mu must be held.
func (as *AddressSpace) attachTo(n, parent, refType, typeDef *node) {
	hasTD := as.nodes[numKey(id.HasTypeDefinition)]
	// n is new: none of these references can exist yet.
	link(parent, refType, n)
	link(n, hasTD, typeDef)
	as.nodes[n.key] = n
}

// link stores the reference src --typ--> dst in both directions. mu must be
// held.
func link(src, typ, dst *node) {
	src.refs = append(src.refs, ref{typ: typ, target: dst, forward: true})
	dst.refs = append(dst.refs, ref{typ: typ, target: src, forward: false})
	if typ.key == numKey(id.HasSubtype) {
		dst.super = src
	}
}

// AddReference adds the reference source --refType--> target (and its
// inverse). Adding a reference that exists is a no-op. Namespace 0 nodes
// may be linked too (the Server object's redundancy nodes are).
func (as *AddressSpace) AddReference(source, refType, target *ua.NodeID) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	src, typ, dst, err := as.refEnds(source, refType, target)
	if err != nil {
		return err
	}
	// Scan the shorter list: a type definition may hold an inverse
	// reference per instance.
	if len(src.refs) <= len(dst.refs) {
		if src.hasRef(typ, dst, true) {
			return nil
		}
	} else if dst.hasRef(typ, src, false) {
		return nil
	}
	link(src, typ, dst)
	return nil
}

// DeleteReference removes the reference source --refType--> target and its
// inverse. Removing a reference that does not exist is a no-op.
func (as *AddressSpace) DeleteReference(source, refType, target *ua.NodeID) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	src, typ, dst, err := as.refEnds(source, refType, target)
	if err != nil {
		return err
	}
	src.refs = removeRefs(src.refs, func(r ref) bool { return r.forward && r.typ == typ && r.target == dst })
	dst.refs = removeRefs(dst.refs, func(r ref) bool { return !r.forward && r.typ == typ && r.target == src })
	if typ.key == numKey(id.HasSubtype) && dst.super == src {
		dst.super = nil
	}
	return nil
}

// removeRefs returns refs without the matching ones. Readers iterate refs
// only under mu, so the caller (holding mu for writing) may edit in place.
func removeRefs(refs []ref, match func(ref) bool) []ref {
	return slices.DeleteFunc(refs, match)
}

func (as *AddressSpace) refEnds(source, refType, target *ua.NodeID) (src, typ, dst *node, err error) {
	if src = as.lookup(source); src == nil {
		return nil, nil, nil, fmt.Errorf("%w: %s", ErrUnknownNode, source)
	}
	if dst = as.lookup(target); dst == nil {
		return nil, nil, nil, fmt.Errorf("%w: %s", ErrUnknownNode, target)
	}
	if typ = as.lookup(refType); typ == nil || typ.class != ua.NodeClassReferenceType {
		return nil, nil, nil, fmt.Errorf("%w: %s", ErrNotReference, refType)
	}
	return src, typ, dst, nil
}

// DeleteNode removes node nodeID and every reference to or from it. A
// Variable handle of a deleted node still accepts Set but nothing reads it.
// Namespace 0 nodes cannot be deleted.
func (as *AddressSpace) DeleteNode(nodeID *ua.NodeID) error {
	if nodeID == nil || nodeID.Namespace() == 0 {
		return fmt.Errorf("%w: %s", ErrStandardNodeID, nodeID)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	n := as.lookup(nodeID)
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	}
	for _, r := range n.refs {
		if r.target != n {
			r.target.refs = removeRefs(r.target.refs, func(x ref) bool { return x.target == n })
			if r.target.super == n {
				r.target.super = nil
			}
		}
	}
	n.refs = nil
	delete(as.nodes, n.key)
	return nil
}

// SetAccessLevel changes the AccessLevel and UserAccessLevel of variable
// nodeID (namespace 0 variables included).
func (as *AddressSpace) SetAccessLevel(nodeID *ua.NodeID, accessLevel, userAccessLevel byte) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	n := as.lookup(nodeID)
	switch {
	case n == nil:
		return fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	case n.class != ua.NodeClassVariable:
		return fmt.Errorf("%w: %s", ErrNotVariable, nodeID)
	}
	n.accessLevel, n.userAccessLevel = accessLevel, userAccessLevel
	return nil
}

// SetHistorizing changes the Historizing attribute of variable nodeID:
// whether its values are being recorded (Part 3 §5.6.2).
func (as *AddressSpace) SetHistorizing(nodeID *ua.NodeID, on bool) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	n := as.lookup(nodeID)
	switch {
	case n == nil:
		return fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	case n.class != ua.NodeClassVariable:
		return fmt.Errorf("%w: %s", ErrNotVariable, nodeID)
	}
	n.historizing = on
	return nil
}

// SetValueRank changes the ValueRank and ArrayDimensions of variable nodeID.
func (as *AddressSpace) SetValueRank(nodeID *ua.NodeID, valueRank int32, arrayDimensions []uint32) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	n := as.lookup(nodeID)
	switch {
	case n == nil:
		return fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	case n.class != ua.NodeClassVariable:
		return fmt.Errorf("%w: %s", ErrNotVariable, nodeID)
	}
	n.valueRank, n.arrayDimensions = valueRank, slices.Clone(arrayDimensions)
	return nil
}

// ErrNotMethod is returned by SetExecutable for a node that is not a
// Method.
var ErrNotMethod = errors.New("addrspace: node is not a method")

// SetExecutable sets the Executable and UserExecutable attributes of
// method nodeID (namespace 0 methods included). The standard nodeset's
// methods start not executable; the server marks those it implements.
func (as *AddressSpace) SetExecutable(nodeID *ua.NodeID, executable, userExecutable bool) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	n := as.lookup(nodeID)
	switch {
	case n == nil:
		return fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	case n.class != ua.NodeClassMethod:
		return fmt.Errorf("%w: %s", ErrNotMethod, nodeID)
	}
	n.executable, n.userExecutable = executable, userExecutable
	return nil
}

// SetDescription sets the Description attribute of a node of a
// namespace other than 0 (empty text: no description).
func (as *AddressSpace) SetDescription(nodeID *ua.NodeID, text string) error {
	if nodeID == nil || nodeID.Namespace() == 0 {
		return fmt.Errorf("%w: %s", ErrStandardNodeID, nodeID)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	n := as.lookup(nodeID)
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	}
	n.description = nil
	if text != "" {
		n.description = ua.NewLocalizedText(text)
	}
	return nil
}
