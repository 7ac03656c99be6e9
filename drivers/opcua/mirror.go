package opcua

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/client"
)

// mirrorDeadline bounds one browse of a mirrored subtree (every Browse,
// Read and TranslateBrowsePaths request of it together).
const mirrorDeadline = 20 * time.Second

// tree is a browsed upstream subtree: its nodes, parents first, and the
// upstream NodeId of each.
type tree struct {
	nodes []drivers.MirrorNode
	ids   []*ua.NodeID
	sum   [sha256.Size]byte
}

// mirrorable are the built-in DataTypes a mirrored Variable may have.
var mirrorable = map[uint32]bool{
	id.Boolean: true, id.SByte: true, id.Byte: true, id.Int16: true, id.UInt16: true,
	id.Int32: true, id.UInt32: true, id.Int64: true, id.UInt64: true, id.Float: true,
	id.Double: true, id.String: true, id.DateTime: true,
}

// pending is a node found by the browse, not yet described.
type pending struct {
	node   drivers.MirrorNode
	id     *ua.NodeID
	depth  int
	folder bool
}

// discover browses the device's mirrored subtree within mirrorDeadline:
// breadth first from its root, at most MaxNodes nodes and MaxDepth
// folder levels (a larger subtree is cut, with a Warn line), then reads
// the attributes of every Variable and its EURange and EngineeringUnits.
// Variables of another DataType than the built-in scalars and
// one-dimensional arrays of them are left out (counted in the log).
func (d *Driver) discover(ctx context.Context, cl *client.Client, nsArray []string) (*tree, error) {
	m := d.dev.Mirror
	ctx, cancel := context.WithTimeout(ctx, mirrorDeadline)
	defer cancel()
	root, err := d.mirrorRoot(ctx, cl, nsArray)
	if err != nil {
		return nil, err
	}
	found, cut, err := d.browseTree(ctx, cl, root, m.EffectiveMaxNodes(), m.EffectiveMaxDepth())
	if err != nil {
		return nil, err
	}
	if cut != "" {
		d.log.Warn("opcua: the mirrored subtree is larger than its bounds; mirroring what fits, breadth first", "why", cut,
			"nodes", len(found), "maxNodes", m.EffectiveMaxNodes(), "maxDepth", m.EffectiveMaxDepth())
	}
	if err := d.describe(ctx, cl, found); err != nil {
		return nil, err
	}
	t := &tree{}
	skipped, parents := 0, map[string]bool{}
	for _, p := range found {
		parentOK := len(p.node.Path) == 1 || parents[drivers.MirrorKey(p.node.Path[:len(p.node.Path)-1])]
		switch {
		case !parentOK:
			continue
		case !p.folder && (!mirrorable[p.node.DataType] || (p.node.ValueRank != -1 && p.node.ValueRank != 1)):
			skipped++
			continue
		}
		if p.folder {
			parents[p.node.Key] = true
		}
		t.nodes = append(t.nodes, p.node)
		t.ids = append(t.ids, p.id)
	}
	if skipped > 0 {
		d.log.Info("opcua: mirrored subtree: variables of other DataTypes (structures, enumerations, matrices) left out", "skipped", skipped)
	}
	t.sum = sumOf(t)
	return t, nil
}

// mirrorRoot is the upstream NodeId of the mirror's root.
func (d *Driver) mirrorRoot(ctx context.Context, cl *client.Client, nsArray []string) (*ua.NodeID, error) {
	m := d.dev.Mirror
	if m.BrowsePath == "" {
		n, p := resolve(deployment.Tag{Name: "mirror", NodeId: m.NodeId}, nsArray)
		if p != nil {
			return nil, fmt.Errorf("the mirror's root %s: %s", m.NodeId, p.Why)
		}
		return n, nil
	}
	nodes := make([]*ua.NodeID, 1)
	problems := map[int]Problem{}
	probe := &Driver{dev: deployment.Device{Tags: []deployment.Tag{{Name: "mirror", BrowsePath: m.BrowsePath}}}}
	if err := probe.translate(ctx, cl, []int{0}, nsArray, nodes, problems); err != nil {
		return nil, err
	}
	if p, bad := problems[0]; bad {
		return nil, fmt.Errorf("the mirror's root %s: %s", m.BrowsePath, p.Why)
	}
	return nodes[0], nil
}

// browseTree walks the subtree breadth first: the root (its BrowseName
// read), then each folder's Objects and Variables over hierarchical
// references other than HasProperty, each node once, until maxNodes or
// below maxDepth; cut says why it stopped early ("" when it did not).
func (d *Driver) browseTree(ctx context.Context, cl *client.Client, root *ua.NodeID, maxNodes, maxDepth int) (found []pending, cut string, err error) {
	res, err := cl.ReadAttributes(ctx, []*ua.ReadValueID{
		{NodeID: root, AttributeID: ua.AttributeIDBrowseName, DataEncoding: &ua.QualifiedName{}},
		{NodeID: root, AttributeID: ua.AttributeIDDisplayName, DataEncoding: &ua.QualifiedName{}},
		{NodeID: root, AttributeID: ua.AttributeIDNodeClass, DataEncoding: &ua.QualifiedName{}},
	})
	if err != nil {
		return nil, "", fmt.Errorf("read the mirror's root: %w", err)
	}
	qn, _ := valueOfDV(res[0]).(*ua.QualifiedName)
	class, _ := valueOfDV(res[2]).(int32)
	if qn == nil || qn.Name == "" || ua.NodeClass(class) != ua.NodeClassObject {
		return nil, "", fmt.Errorf("the mirror's root %s is not an Object (a folder) with a BrowseName", root)
	}
	name := []string{qn.Name}
	found = append(found, pending{node: drivers.MirrorNode{Path: name, Key: drivers.MirrorKey(name), Folder: true, DisplayName: textOf(valueOfDV(res[1]), qn.Name)}, id: root, folder: true})
	seen := map[string]bool{root.String(): true}
	keys := map[string]bool{found[0].node.Key: true}
	for next := 0; next < len(found); next++ {
		f := found[next]
		if !f.folder {
			continue
		}
		if f.depth > maxDepth {
			cut = fmt.Sprintf("folders deeper than maxDepth %d not browsed", maxDepth)
			continue
		}
		left := maxNodes - len(found)
		if left <= 0 {
			return found, fmt.Sprintf("maxNodes %d reached", maxNodes), nil
		}
		// HasProperty references count against the page: ask for a few more.
		refs, truncated, err := cl.BrowseLimit(ctx, f.id, left+32)
		if err != nil {
			return nil, "", fmt.Errorf("browse %s: %w", f.node.Key, err)
		}
		for _, r := range refs {
			if len(found) >= maxNodes {
				return found, fmt.Sprintf("maxNodes %d reached", maxNodes), nil
			}
			if r == nil || r.NodeID == nil || r.NodeID.NodeID == nil || r.NodeID.ServerIndex != 0 || r.NodeID.NamespaceURI != "" || r.BrowseName == nil ||
				r.ReferenceTypeID == nil || (r.ReferenceTypeID.Namespace() == 0 && r.ReferenceTypeID.IntID() == id.HasProperty) {
				continue
			}
			if r.NodeClass != ua.NodeClassObject && r.NodeClass != ua.NodeClassVariable {
				continue
			}
			path := append(append([]string(nil), f.node.Path...), r.BrowseName.Name)
			key := drivers.MirrorKey(path)
			if seen[r.NodeID.NodeID.String()] || keys[key] || r.BrowseName.Name == "" {
				continue // reached twice, or a second child of that name
			}
			seen[r.NodeID.NodeID.String()], keys[key] = true, true
			folder := r.NodeClass == ua.NodeClassObject
			dn := r.BrowseName.Name
			if r.DisplayName != nil && r.DisplayName.Text != "" {
				dn = r.DisplayName.Text
			}
			found = append(found, pending{node: drivers.MirrorNode{Path: path, Key: key, Folder: folder, DisplayName: dn}, id: r.NodeID.NodeID, depth: f.depth + 1, folder: folder})
		}
		if truncated && len(found) >= maxNodes {
			return found, fmt.Sprintf("maxNodes %d reached", maxNodes), nil
		}
	}
	return found, cut, nil
}

// describe reads each node's Description and, for Variables, DataType,
// ValueRank, UserAccessLevel, EURange and EngineeringUnits.
func (d *Driver) describe(ctx context.Context, cl *client.Client, found []pending) error {
	const perNode = 4
	var ids []*ua.ReadValueID
	for _, p := range found {
		for _, a := range []ua.AttributeID{ua.AttributeIDDescription, ua.AttributeIDDataType, ua.AttributeIDValueRank, ua.AttributeIDUserAccessLevel} {
			ids = append(ids, &ua.ReadValueID{NodeID: p.id, AttributeID: a, DataEncoding: &ua.QualifiedName{}})
		}
	}
	var vals []*ua.DataValue
	for start := 0; start < len(ids); start += maxReadPerCall {
		res, err := cl.ReadAttributes(ctx, ids[start:min(start+maxReadPerCall, len(ids))])
		if err != nil {
			return fmt.Errorf("read the mirrored nodes' attributes: %w", err)
		}
		vals = append(vals, res...)
	}
	for k := range found {
		n := &found[k].node
		n.Description = textOf(valueOfDV(vals[k*perNode]), "")
		if n.Folder {
			continue
		}
		if dt, ok := valueOfDV(vals[k*perNode+1]).(*ua.NodeID); ok && dt.Namespace() == 0 {
			n.DataType = dt.IntID()
		}
		n.ValueRank, _ = valueOfDV(vals[k*perNode+2]).(int32)
		al, _ := valueOfDV(vals[k*perNode+3]).(uint8)
		n.Writable = al&uint8(ua.AccessLevelTypeCurrentWrite) != 0
	}
	return d.properties(ctx, cl, found)
}

// properties reads the EURange and EngineeringUnits of the Variables.
func (d *Driver) properties(ctx context.Context, cl *client.Client, found []pending) error {
	names := []string{"EURange", "EngineeringUnits"}
	var paths []*ua.BrowsePath
	var owner []int
	for k, p := range found {
		if p.folder {
			continue
		}
		for _, name := range names {
			paths = append(paths, &ua.BrowsePath{StartingNode: p.id, RelativePath: &ua.RelativePath{Elements: []*ua.RelativePathElement{{
				ReferenceTypeID: ua.NewNumericNodeID(0, id.HasProperty), TargetName: &ua.QualifiedName{Name: name}}}}})
			owner = append(owner, k)
		}
	}
	var reads []*ua.ReadValueID
	var readOwner, readProp []int
	for start := 0; start < len(paths); start += maxPathsPerCall {
		end := min(start+maxPathsPerCall, len(paths))
		res, err := cl.TranslateBrowsePaths(ctx, paths[start:end])
		if err != nil {
			return fmt.Errorf("find the mirrored variables' properties: %w", err)
		}
		for j, r := range res {
			n, p := target(deployment.Tag{}, r)
			if p != nil {
				continue
			}
			reads = append(reads, &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
			readOwner, readProp = append(readOwner, owner[start+j]), append(readProp, (start+j)%len(names))
		}
	}
	for start := 0; start < len(reads); start += maxReadPerCall {
		end := min(start+maxReadPerCall, len(reads))
		res, err := cl.ReadAttributes(ctx, reads[start:end])
		if err != nil {
			return fmt.Errorf("read the mirrored variables' properties: %w", err)
		}
		for j, dv := range res {
			n := &found[readOwner[start+j]].node
			v := valueOfDV(dv)
			if eo, ok := v.(*ua.ExtensionObject); ok {
				v = eo.Value
			}
			switch x := v.(type) {
			case *ua.Range:
				if readProp[start+j] == 0 {
					n.EURange = x
				}
			case *ua.EUInformation:
				if readProp[start+j] == 1 {
					n.EngineeringUnits = x
				}
			}
		}
	}
	return nil
}

// valueOfDV is a Good DataValue's value, else nil.
func valueOfDV(dv *ua.DataValue) any {
	if dv == nil || dv.Status != ua.StatusOK || dv.Value == nil {
		return nil
	}
	return dv.Value.Value()
}

// textOf is the text of a LocalizedText value, else def.
func textOf(v any, def string) string {
	if lt, ok := v.(*ua.LocalizedText); ok && lt.Text != "" {
		return lt.Text
	}
	return def
}

// sumOf is a fingerprint of a tree's nodes and their upstream NodeIds:
// two browses that found the same subtree have the same sum.
func sumOf(t *tree) [sha256.Size]byte {
	h := sha256.New()
	for k, n := range t.nodes {
		fmt.Fprintf(h, "%q %v %q %q %d %d %v %s|", n.Key, n.Folder, n.DisplayName, n.Description, n.DataType, n.ValueRank, n.Writable, t.ids[k])
		if n.EURange != nil {
			fmt.Fprintf(h, "r%v %v|", n.EURange.Low, n.EURange.High)
		}
		if u := n.EngineeringUnits; u != nil {
			fmt.Fprintf(h, "u%q %d %v %v|", u.NamespaceURI, u.UnitID, u.DisplayName, u.Description)
		}
	}
	var s [sha256.Size]byte
	copy(s[:], h.Sum(nil))
	return s
}

// errMirrorChanged ends a session whose mirrored subtree changed
// upstream: the next session browses it again, updates our nodes and
// subscribes to the new set (the values stay meanwhile).
var errMirrorChanged = fmt.Errorf("%w: the mirrored upstream subtree changed", errRecheck)

// mirror browses the subtree at connect, hands it to OnMirror when it
// differs from the last one handed, and returns the items to add to the
// subscription (handles after the tags'). A failed browse keeps the
// nodes of the last one (their values are not subscribed this session)
// and is logged.
func (d *Driver) mirror(ctx context.Context, cl *client.Client, nsArray []string) ([]client.Item, []int) {
	t, err := d.discover(ctx, cl, nsArray)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("opcua: the upstream subtree cannot be mirrored; retrying at the next refresh", "err", err)
		}
		return nil, nil
	}
	d.mu.Lock()
	same := d.tree != nil && d.tree.sum == t.sum
	d.tree = t
	d.mirrorIdx = make(map[string]int, len(t.nodes))
	for k, n := range t.nodes {
		d.mirrorIdx[n.Key] = k
	}
	d.mu.Unlock()
	if !same && d.opts.OnMirror != nil {
		d.opts.OnMirror(t.nodes)
	}
	d.log.Info("opcua: upstream subtree mirrored", "nodes", len(t.nodes), "changed", !same)
	var items []client.Item
	var handles []int
	si := d.dev.EffectivePublishingInterval()
	for k, n := range t.nodes {
		if !n.Folder {
			items = append(items, client.Item{Node: t.ids[k], Sampling: si})
			handles = append(handles, len(d.dev.Tags)+k)
		}
	}
	return items, handles
}

// refreshMirror browses the subtree every refresh period until ctx is
// done, and calls changed when it differs from the one subscribed.
func (d *Driver) refreshMirror(ctx context.Context, cl *client.Client, nsArray []string, changed func()) {
	every := d.dev.Mirror.EffectiveRefresh()
	for {
		t := d.clock.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.Chan():
		}
		nt, err := d.discover(ctx, cl, nsArray)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				d.log.Warn("opcua: browsing the mirrored subtree again failed; keeping the nodes", "err", err)
			}
			continue
		}
		d.mu.Lock()
		same := d.tree != nil && d.tree.sum == nt.sum
		d.mu.Unlock()
		if !same {
			d.log.Info("opcua: the upstream subtree changed: mirroring it again")
			changed()
			return
		}
	}
}

// mirrorChangeLocked is the change of mirrored node k from a
// notification: the upstream's value and status as they are. mu must be
// held.
func (d *Driver) mirrorChangeLocked(k int, n client.Notification) (drivers.Change, bool) {
	if d.tree == nil || k >= len(d.tree.nodes) {
		return drivers.Change{}, false
	}
	d.mirrorBad = 0
	r := drivers.Reading{Status: n.Value.Status, SourceTime: sourceTime(n.Value, n.At)}
	if n.Value.Value != nil {
		r.Value = n.Value.Value.Value()
	}
	if r.Status == ua.StatusOK && r.Value == nil {
		r.Status = ua.StatusBadNoData
	}
	return drivers.Change{Index: -1, Mirror: d.tree.nodes[k].Key, Reading: r}, true
}

// mirrorBadLocked are the changes that mark every mirrored Variable Bad
// with code. mu must be held.
func (d *Driver) mirrorBadLocked(code ua.StatusCode, at time.Time) []drivers.Change {
	if d.tree == nil || d.mirrorBad == code {
		return nil // already reported
	}
	d.mirrorBad = code
	var out []drivers.Change
	for _, n := range d.tree.nodes {
		if !n.Folder {
			out = append(out, drivers.Change{Index: -1, Mirror: n.Key, Reading: drivers.Reading{Status: code, SourceTime: at}})
		}
	}
	return out
}

// mirrorTarget is the upstream node of a writable mirrored Variable.
func (d *Driver) mirrorTarget(key string) (*ua.NodeID, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k, ok := d.mirrorIdx[key]
	switch {
	case !ok || d.tree == nil:
		return nil, fmt.Errorf("%w: %s", drivers.ErrUnknownTag, key)
	case d.tree.nodes[k].Folder || !d.tree.nodes[k].Writable:
		return nil, fmt.Errorf("%w: %s", drivers.ErrNotWritable, key)
	}
	return d.tree.ids[k], nil
}
