package addrspace

import (
	"math"

	"github.com/gopcua/opcua/ua"
)

// Browse returns the references of desc.NodeID that match desc
// (uaserver.NodeStore). A null ReferenceTypeID matches every reference;
// a NodeClassMask of 0 matches every class. Of each ReferenceDescription
// only NodeID and the fields ResultMask asks for are filled; the others hold
// zero values that encode (never nil pointers). TypeDefinition is set for
// Object and Variable targets only.
func (as *AddressSpace) Browse(desc *ua.BrowseDescription) ([]*ua.ReferenceDescription, ua.StatusCode) {
	if desc == nil || desc.NodeID == nil {
		return nil, ua.StatusBadNodeIDUnknown
	}
	if desc.BrowseDirection > ua.BrowseDirectionBoth {
		return nil, ua.StatusBadBrowseDirectionInvalid
	}
	as.mu.RLock()
	defer as.mu.RUnlock()
	n := as.lookup(desc.NodeID)
	if n == nil {
		return nil, ua.StatusBadNodeIDUnknown
	}
	filter, st := as.refFilter(desc.ReferenceTypeID, desc.IncludeSubtypes)
	if st != ua.StatusOK {
		return nil, st
	}
	mask := ua.BrowseResultMask(desc.ResultMask)
	var out []*ua.ReferenceDescription
	for _, r := range n.refs {
		switch {
		case desc.BrowseDirection == ua.BrowseDirectionForward && !r.forward,
			desc.BrowseDirection == ua.BrowseDirectionInverse && r.forward,
			!filter.matches(r.typ),
			desc.NodeClassMask != 0 && desc.NodeClassMask&uint32(r.target.class) == 0:
			continue
		}
		out = append(out, describe(r, mask))
	}
	return out, ua.StatusOK
}

// refFilter selects references by type.
type refFilter struct {
	typ      *node // nil: every reference
	subtypes bool
}

func (f refFilter) matches(t *node) bool {
	switch {
	case f.typ == nil:
		return true
	case f.subtypes:
		return t.isSubtypeOf(f.typ)
	default:
		return t == f.typ
	}
}

// refFilter resolves a ReferenceTypeId of a request. mu must be held.
func (as *AddressSpace) refFilter(refType *ua.NodeID, subtypes bool) (refFilter, ua.StatusCode) {
	if isNull(refType) {
		return refFilter{}, ua.StatusOK
	}
	t := as.lookup(refType)
	if t == nil || t.class != ua.NodeClassReferenceType {
		return refFilter{}, ua.StatusBadReferenceTypeIDInvalid
	}
	return refFilter{typ: t, subtypes: subtypes}, ua.StatusOK
}

// describe builds the ReferenceDescription of r. mu must be held.
func describe(r ref, mask ua.BrowseResultMask) *ua.ReferenceDescription {
	d := &ua.ReferenceDescription{
		ReferenceTypeID: ua.NewTwoByteNodeID(0),
		NodeID:          ua.NewExpandedNodeID(r.target.id, "", 0),
		BrowseName:      &ua.QualifiedName{},
		DisplayName:     &ua.LocalizedText{},
		TypeDefinition:  ua.NewTwoByteExpandedNodeID(0),
	}
	t := r.target
	if mask&ua.BrowseResultMaskReferenceTypeID != 0 {
		d.ReferenceTypeID = r.typ.id
	}
	if mask&ua.BrowseResultMaskIsForward != 0 {
		d.IsForward = r.forward
	}
	if mask&ua.BrowseResultMaskNodeClass != 0 {
		d.NodeClass = t.class
	}
	if mask&ua.BrowseResultMaskBrowseName != 0 {
		d.BrowseName = t.browseName
	}
	if mask&ua.BrowseResultMaskDisplayName != 0 {
		d.DisplayName = t.displayName
	}
	if mask&ua.BrowseResultMaskTypeDefinition != 0 &&
		(t.class == ua.NodeClassObject || t.class == ua.NodeClassVariable) {
		if td := t.typeDefinition(); td != nil {
			d.TypeDefinition = ua.NewExpandedNodeID(td.id, "", 0)
		}
	}
	return d
}

// TranslateBrowsePath resolves one BrowsePath (uaserver.NodeStore, Part 4
// §5.8.4). Each element follows the references of its type (every type when
// null; subtypes when IncludeSubtypes) in the direction IsInverse says, to
// targets whose BrowseName equals TargetName. Only the last element may have
// an empty TargetName, which matches every target. Results: Good with the
// targets (RemainingPathIndex = MaxUint32), BadNodeIdUnknown,
// BadNothingToDo (empty path), BadBrowseNameInvalid, BadNoMatch.
func (as *AddressSpace) TranslateBrowsePath(p *ua.BrowsePath) *ua.BrowsePathResult {
	fail := func(st ua.StatusCode) *ua.BrowsePathResult {
		return &ua.BrowsePathResult{StatusCode: st, Targets: []*ua.BrowsePathTarget{}}
	}
	if p == nil || p.StartingNode == nil {
		return fail(ua.StatusBadNodeIDUnknown)
	}
	if p.RelativePath == nil || len(p.RelativePath.Elements) == 0 {
		return fail(ua.StatusBadNothingToDo)
	}
	elems := p.RelativePath.Elements
	for i, e := range elems {
		if e == nil || (i < len(elems)-1 && (e.TargetName == nil || e.TargetName.Name == "")) {
			return fail(ua.StatusBadBrowseNameInvalid)
		}
	}
	as.mu.RLock()
	defer as.mu.RUnlock()
	start := as.lookup(p.StartingNode)
	if start == nil {
		return fail(ua.StatusBadNodeIDUnknown)
	}
	cur := []*node{start}
	for _, e := range elems {
		filter, st := as.refFilter(e.ReferenceTypeID, e.IncludeSubtypes)
		if st != ua.StatusOK {
			return fail(ua.StatusBadNoMatch)
		}
		cur = step(cur, filter, !e.IsInverse, e.TargetName)
		if len(cur) == 0 {
			return fail(ua.StatusBadNoMatch)
		}
	}
	res := &ua.BrowsePathResult{StatusCode: ua.StatusOK}
	for _, n := range cur {
		res.Targets = append(res.Targets, &ua.BrowsePathTarget{
			TargetID:           ua.NewExpandedNodeID(n.id, "", 0),
			RemainingPathIndex: math.MaxUint32,
		})
	}
	return res
}

// step follows one RelativePathElement from every node of from and returns
// the distinct targets. mu must be held.
func step(from []*node, f refFilter, forward bool, name *ua.QualifiedName) []*node {
	var out []*node
	seen := map[*node]bool{}
	for _, n := range from {
		for _, r := range n.refs {
			if r.forward != forward || !f.matches(r.typ) || seen[r.target] {
				continue
			}
			if name != nil && name.Name != "" && !sameName(r.target.browseName, name) {
				continue
			}
			seen[r.target] = true
			out = append(out, r.target)
		}
	}
	return out
}

func sameName(a, b *ua.QualifiedName) bool {
	return a.NamespaceIndex == b.NamespaceIndex && a.Name == b.Name
}
