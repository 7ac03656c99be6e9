package addrspace

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/schema"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// template is namespace 0 decoded from the standard nodeset's compiled
// table; an AddressSpace instantiates its own mutable copy of it and then
// drops it (see standardNodes). A template is immutable after
// decodeTemplate or compileNodeSet returns.
type template struct {
	nodes []tmplNode
	refs  int // total number of refs over all nodes (both directions)
}

type tmplNode struct {
	n     node          // attributes; refs, super and v unset
	value *ua.DataValue // the nodeset's Value, nil when it has none
	refs  []tmplRef
	super int32 // index of the supertype, -1 when none
}

type tmplRef struct {
	typ, target int32
	forward     bool
}

// standardNodes decodes namespace 0 from the embedded table (see
// ns0Table). It is decoded for each address space rather than kept for the
// life of the process: a node holds one address space, and the template
// alone is ≈ 1.2 MB of heap that nothing reads once instantiate has copied
// it (the decode costs a few milliseconds per New).
func standardNodes() *template {
	t, err := decodeTemplate(ns0Table)
	if err != nil {
		panic("addrspace: the embedded namespace 0 table does not load (go generate ./opcua/addrspace): " + err.Error())
	}
	return t
}

// compileStandardNodeSet compiles gopcua's embedded standard nodeset, the
// source of ns0Table.
func compileStandardNodeSet() (*template, error) {
	return compileNodeSet(schema.OpcUaNodeSet2)
}

// instantiate builds the node table of one address space from t.
func (t *template) instantiate(as *AddressSpace) map[nodeKey]*node {
	nodes := make([]node, len(t.nodes))
	refs := make([]ref, 0, t.refs)
	m := make(map[nodeKey]*node, len(t.nodes)+1024)
	for i := range t.nodes {
		tn := &t.nodes[i]
		n := &nodes[i]
		*n = tn.n
		start := len(refs)
		for _, r := range tn.refs {
			refs = append(refs, ref{typ: &nodes[r.typ], target: &nodes[r.target], forward: r.forward})
		}
		n.refs = refs[start:len(refs):len(refs)] // full slice: an append copies
		if tn.super >= 0 {
			n.super = &nodes[tn.super]
		}
		if n.class == ua.NodeClassVariable || n.class == ua.NodeClassVariableType {
			newVariable(as, n, tn.value)
		}
		if n.eventNotifier&SubscribeToEvents != 0 {
			n.notifier = new(watchList[*events.Event])
		}
		m[n.key] = n
	}
	return m
}

// compileNodeSet parses a UANodeSet document into a template.
func compileNodeSet(doc []byte) (*template, error) {
	var set schema.UANodeSet
	if err := xml.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("parse nodeset: %w", err)
	}
	raw, err := scanVariables(doc)
	if err != nil {
		return nil, err
	}
	c := &compiler{aliases: map[string]string{}, index: map[nodeKey]int32{}, raw: raw}
	if set.Aliases != nil {
		for _, a := range set.Aliases.Alias {
			c.aliases[a.AliasAttr] = strings.TrimSpace(a.Value)
		}
	}
	if err := c.addAll(&set); err != nil {
		return nil, err
	}
	if err := c.link(); err != nil {
		return nil, err
	}
	return &c.t, nil
}

type compiler struct {
	t       template
	aliases map[string]string
	index   map[nodeKey]int32
	raw     map[nodeKey]rawVariable
	xmlRefs [][]*schema.Reference // per node, as written in the nodeset
}

func (c *compiler) addAll(set *schema.UANodeSet) error {
	for _, x := range set.UAReferenceType {
		n, err := c.base(x.UAType.UANode, ua.NodeClassReferenceType)
		if err != nil {
			return err
		}
		n.isAbstract = x.IsAbstractAttr
		n.symmetric = x.SymmetricAttr
		if len(x.InverseName) > 0 {
			n.inverseName = localizedText(x.InverseName[0])
		}
	}
	for _, x := range set.UADataType {
		n, err := c.base(x.UAType.UANode, ua.NodeClassDataType)
		if err != nil {
			return err
		}
		n.isAbstract = x.IsAbstractAttr
	}
	for _, x := range set.UAObjectType {
		n, err := c.base(x.UAType.UANode, ua.NodeClassObjectType)
		if err != nil {
			return err
		}
		n.isAbstract = x.IsAbstractAttr
	}
	for _, x := range set.UAVariableType {
		n, err := c.base(x.UAType.UANode, ua.NodeClassVariableType)
		if err != nil {
			return err
		}
		n.isAbstract = x.IsAbstractAttr
		if err := c.variableAttrs(n, x.DataTypeAttr, x.ValueRankAttr, x.ArrayDimensionsAttr); err != nil {
			return err
		}
	}
	for _, x := range set.UAObject {
		n, err := c.base(x.UAInstance.UANode, ua.NodeClassObject)
		if err != nil {
			return err
		}
		n.eventNotifier = x.EventNotifierAttr
	}
	for _, x := range set.UAView {
		n, err := c.base(x.UAInstance.UANode, ua.NodeClassView)
		if err != nil {
			return err
		}
		n.eventNotifier = x.EventNotifierAttr
		n.containsNoLoops = x.ContainsNoLoopsAttr
	}
	for _, x := range set.UAMethod {
		n, err := c.base(x.UAInstance.UANode, ua.NodeClassMethod)
		if err != nil {
			return err
		}
		n.executable = x.ExecutableAttr
		n.userExecutable = x.UserExecutableAttr
	}
	for _, x := range set.UAVariable {
		n, err := c.base(x.UAInstance.UANode, ua.NodeClassVariable)
		if err != nil {
			return err
		}
		if err := c.variableAttrs(n, x.DataTypeAttr, x.ValueRankAttr, x.ArrayDimensionsAttr); err != nil {
			return err
		}
		// The nodeset omits attributes that have their schema default;
		// encoding/xml leaves them zero.
		n.accessLevel = byte(x.AccessLevelAttr)
		if n.accessLevel == 0 {
			n.accessLevel = byte(ua.AccessLevelTypeCurrentRead)
		}
		n.userAccessLevel = byte(x.UserAccessLevelAttr)
		if n.userAccessLevel == 0 {
			n.userAccessLevel = n.accessLevel
		}
		n.minSampling = x.MinimumSamplingIntervalAttr
		n.historizing = x.HistorizingAttr
	}
	return nil
}

// base adds the node described by x and fills the attributes every class has.
func (c *compiler) base(x *schema.UANode, class ua.NodeClass) (*node, error) {
	if x == nil {
		return nil, fmt.Errorf("nodeset: %v element without node attributes", class)
	}
	nid, err := c.nodeID(x.NodeIdAttr)
	if err != nil {
		return nil, err
	}
	k := keyOf(nid)
	if _, dup := c.index[k]; dup {
		return nil, fmt.Errorf("nodeset: node %s defined twice", nid)
	}
	bn := parseQualifiedName(x.BrowseNameAttr, nid.Namespace())
	tn := tmplNode{super: -1}
	tn.n = node{
		id:          nid,
		key:         k,
		class:       class,
		browseName:  bn,
		displayName: ua.NewLocalizedText(bn.Name),
		writeMask:   x.WriteMaskAttr,
	}
	if len(x.DisplayName) > 0 {
		tn.n.displayName = localizedText(x.DisplayName[0])
	}
	if len(x.Description) > 0 {
		tn.n.description = localizedText(x.Description[0])
	}
	if rv, ok := c.raw[k]; ok {
		tn.value = rv.value
	}
	c.index[k] = int32(len(c.t.nodes))
	c.t.nodes = append(c.t.nodes, tn)
	var refs []*schema.Reference
	if x.References != nil {
		refs = x.References.Reference
	}
	c.xmlRefs = append(c.xmlRefs, refs)
	return &c.t.nodes[len(c.t.nodes)-1].n, nil
}

func (c *compiler) variableAttrs(n *node, dataType string, valueRank int, dims string) error {
	n.dataType = ua.NewNumericNodeID(0, id.BaseDataType)
	if dataType != "" {
		dt, err := c.nodeID(dataType)
		if err != nil {
			return err
		}
		n.dataType = dt
	}
	// ValueRank defaults to -1 (Scalar) in the nodeset schema; an explicit
	// 0 (OneOrMoreDimensions) is recorded by scanVariables.
	n.valueRank = int32(valueRank)
	if valueRank == 0 && !c.raw[n.key].valueRankZero {
		n.valueRank = -1
	}
	if dims != "" {
		for _, f := range strings.Split(dims, ",") {
			d, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
			if err != nil {
				return fmt.Errorf("nodeset: node %s: ArrayDimensions %q: %w", n.id, dims, err)
			}
			n.arrayDimensions = append(n.arrayDimensions, uint32(d))
		}
	}
	return nil
}

// link resolves the references (the nodeset lists some in one direction,
// some in both), stores each once in both directions and sets supertypes.
func (c *compiler) link() error {
	type triple struct{ src, typ, dst int32 }
	seen := make(map[triple]struct{}, 2*len(c.t.nodes))
	hasSubtype := c.index[numKey(id.HasSubtype)]
	for i, refs := range c.xmlRefs {
		for _, r := range refs {
			typ, ok, err := c.resolve(r.ReferenceTypeAttr)
			if err != nil {
				return err
			}
			if !ok || c.t.nodes[typ].n.class != ua.NodeClassReferenceType {
				return fmt.Errorf("nodeset: node %s: unknown reference type %q", c.t.nodes[i].n.id, r.ReferenceTypeAttr)
			}
			other, ok, err := c.resolve(r.Value)
			if err != nil {
				return err
			}
			if !ok {
				continue // a target outside this nodeset
			}
			t := triple{src: int32(i), typ: typ, dst: other}
			if r.IsForwardAttr != nil && !*r.IsForwardAttr {
				t.src, t.dst = t.dst, t.src
			}
			if _, dup := seen[t]; dup {
				continue
			}
			seen[t] = struct{}{}
			src, dst := &c.t.nodes[t.src], &c.t.nodes[t.dst]
			src.refs = append(src.refs, tmplRef{typ: t.typ, target: t.dst, forward: true})
			dst.refs = append(dst.refs, tmplRef{typ: t.typ, target: t.src, forward: false})
			c.t.refs += 2
			if t.typ == hasSubtype {
				dst.super = t.src
			}
		}
	}
	c.xmlRefs = nil
	return nil
}

// resolve returns the index of the node named by s (a NodeId or an alias).
func (c *compiler) resolve(s string) (int32, bool, error) {
	nid, err := c.nodeID(s)
	if err != nil {
		return 0, false, err
	}
	i, ok := c.index[keyOf(nid)]
	return i, ok, nil
}

func (c *compiler) nodeID(s string) (*ua.NodeID, error) {
	s = strings.TrimSpace(s)
	if a, ok := c.aliases[s]; ok {
		s = a
	}
	nid, err := ua.ParseNodeID(s)
	if err != nil {
		return nil, fmt.Errorf("nodeset: NodeId %q: %w", s, err)
	}
	return nid, nil
}

func localizedText(l *schema.LocalizedText) *ua.LocalizedText {
	if l.LocaleAttr != "" {
		return ua.NewLocalizedTextWithLocale(l.Value, l.LocaleAttr)
	}
	return ua.NewLocalizedText(l.Value)
}

// parseQualifiedName reads the text form "ns:Name" of a QualifiedName; a name
// without a numeric prefix is in namespace defaultNS.
func parseQualifiedName(s string, defaultNS uint16) *ua.QualifiedName {
	if i := strings.IndexByte(s, ':'); i > 0 {
		if ns, err := strconv.ParseUint(s[:i], 10, 16); err == nil {
			return &ua.QualifiedName{NamespaceIndex: uint16(ns), Name: s[i+1:]}
		}
	}
	return &ua.QualifiedName{NamespaceIndex: defaultNS, Name: s}
}
