package opcua

import (
	"context"
	"fmt"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/client"
)

// maxReadPerCall bounds one Read request of the check (the upstream's
// MaxNodesPerRead is often 1,000 or more; smaller calls cost little).
const maxReadPerCall = 500

// Problem is why a tag is not mirrored: its upstream node is unknown, has
// another DataType than the document says, or its namespace URI is not
// served upstream. It names the tag.
type Problem struct {
	Tag        string
	NodeID     string // the tag's nodeId, or the node its browsePath resolved to
	BrowsePath string // the tag's browsePath, if it has one
	Status     ua.StatusCode
	Why        string
}

func (p Problem) String() string {
	switch {
	case p.BrowsePath != "" && p.NodeID != "":
		return fmt.Sprintf("tag %s (browsePath %s, node %s): %s", p.Tag, p.BrowsePath, p.NodeID, p.Why)
	case p.BrowsePath != "":
		return fmt.Sprintf("tag %s (browsePath %s): %s", p.Tag, p.BrowsePath, p.Why)
	}
	return fmt.Sprintf("tag %s (nodeId %s): %s", p.Tag, p.NodeID, p.Why)
}

// check resolves every tag's nodeId on the upstream (nsu= through its
// NamespaceArray), reads each node's DataType and compares it with the
// tag's type. A tag that fails is Bad with its own status (BadNodeIdUnknown,
// BadTypeMismatch, BadConfigurationError) and left out of the
// subscription; its problem is logged and kept in Health.LastError. It
// returns the items to monitor and, by client handle, the tag index.
func (d *Driver) check(ctx context.Context, cl *client.Client, sink drivers.ChangeSink) ([]client.Item, []int, error) {
	nsArray, err := d.namespaces(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	problems := map[int]Problem{}
	nodes := make([]*ua.NodeID, len(d.dev.Tags))
	var byPath []int
	for i, t := range d.dev.Tags {
		if t.BrowsePath != "" {
			byPath = append(byPath, i)
			continue
		}
		n, p := resolve(t, nsArray)
		if p != nil {
			problems[i] = *p
			continue
		}
		nodes[i] = n
	}
	if err := d.translate(ctx, cl, byPath, nsArray, nodes, problems); err != nil {
		return nil, nil, err
	}
	var ids []*ua.ReadValueID
	var idx []int
	for i, n := range nodes {
		if n != nil {
			ids = append(ids, &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDDataType, DataEncoding: &ua.QualifiedName{}})
			idx = append(idx, i)
		}
	}
	for start := 0; start < len(ids); start += maxReadPerCall {
		end := min(start+maxReadPerCall, len(ids))
		res, err := cl.ReadAttributes(ctx, ids[start:end])
		if err != nil {
			return nil, nil, fmt.Errorf("read the DataType of the tags: %w", err)
		}
		for k, dv := range res {
			i := idx[start+k]
			if p := typeProblem(d.dev.Tags[i], nodes[i], dv); p != nil {
				problems[i] = *p
			}
		}
	}
	d.report(problems, sink)
	var items []client.Item
	var handles []int
	d.mu.Lock()
	for i, t := range d.dev.Tags {
		if _, bad := problems[i]; bad {
			d.nodes[i] = nil
			continue
		}
		d.nodes[i] = nodes[i]
		si := t.EffectiveSamplingInterval(&d.dev).Std()
		var db float64
		if t.Deadband != nil {
			db = *t.Deadband
		}
		items = append(items, client.Item{Node: nodes[i], Sampling: si, Deadband: db})
		handles = append(handles, i)
	}
	d.mu.Unlock()
	return items, handles, nil
}

// namespaces is the upstream's NamespaceArray when a tag names a
// namespace by URI, else nil.
func (d *Driver) namespaces(ctx context.Context, cl *client.Client) ([]string, error) {
	need := d.dev.Mirror != nil
	for _, t := range d.dev.Tags {
		if t.BrowsePath != "" {
			p, _ := deployment.ParseBrowsePath(t.BrowsePath)
			for _, st := range p {
				need = need || st.NamespaceURI != ""
			}
		} else if r, _ := deployment.ParseNodeRef(t.NodeId); r.NamespaceURI != "" {
			need = true
		}
		if need {
			break
		}
	}
	if !need {
		return nil, nil
	}
	res, err := cl.ReadAttributes(ctx, []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_NamespaceArray), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}})
	if err != nil {
		return nil, fmt.Errorf("read the upstream's NamespaceArray: %w", err)
	}
	if res[0] == nil || res[0].Status != ua.StatusOK || res[0].Value == nil {
		return nil, fmt.Errorf("the upstream's NamespaceArray is unreadable")
	}
	arr, ok := res[0].Value.Value().([]string)
	if !ok {
		return nil, fmt.Errorf("the upstream's NamespaceArray is a %T, not strings", res[0].Value.Value())
	}
	return arr, nil
}

// resolve is a tag's upstream NodeId, its nsu= namespace looked up in
// nsArray.
func resolve(t deployment.Tag, nsArray []string) (*ua.NodeID, *Problem) {
	r, err := deployment.ParseNodeRef(t.NodeId)
	if err != nil {
		return nil, &Problem{Tag: t.Name, NodeID: t.NodeId, Status: ua.StatusBadNodeIDInvalid, Why: err.Error()}
	}
	ns := r.Namespace
	if r.NamespaceURI != "" {
		found := false
		for k, u := range nsArray {
			if u == r.NamespaceURI {
				ns, found = uint16(k), true
				break
			}
		}
		if !found {
			return nil, &Problem{Tag: t.Name, NodeID: t.NodeId, Status: ua.StatusBadNodeIDUnknown,
				Why: "the upstream serves no namespace " + r.NamespaceURI}
		}
	}
	n, err := ua.ParseNodeID(fmt.Sprintf("ns=%d;%s", ns, r.ID))
	if err != nil {
		return nil, &Problem{Tag: t.Name, NodeID: t.NodeId, Status: ua.StatusBadNodeIDInvalid, Why: err.Error()}
	}
	return n, nil
}

// typeProblem compares the DataType the upstream read returned with the
// tag's type.
func typeProblem(t deployment.Tag, n *ua.NodeID, dv *ua.DataValue) *Problem {
	p := &Problem{Tag: t.Name, NodeID: t.NodeId, BrowsePath: t.BrowsePath}
	if t.BrowsePath != "" {
		p.NodeID = n.String()
	}
	switch {
	case dv == nil:
		p.Status, p.Why = ua.StatusBadCommunicationError, "no DataType in the upstream's answer"
		return p
	case dv.Status != ua.StatusOK:
		p.Status, p.Why = dv.Status, "the upstream answers "+dv.Status.Error()
		return p
	}
	var dt *ua.NodeID
	if dv.Value != nil {
		dt, _ = dv.Value.Value().(*ua.NodeID)
	}
	if dt == nil || dt.Namespace() != 0 || dt.IntID() != drivers.DataTypeOf(t.Type) {
		p.Status, p.Why = ua.StatusBadTypeMismatch, fmt.Sprintf("the upstream's DataType is %s, the document says %s", typeName(dt), t.Type)
		return p
	}
	return nil
}

// report marks the tags with problems Bad with their status, logs each
// (the first ten in full) and keeps them for Health.
func (d *Driver) report(problems map[int]Problem, sink drivers.ChangeSink) {
	d.sinkMu.Lock()
	defer d.sinkMu.Unlock()
	now := d.clock.Now()
	var changes []drivers.Change
	d.mu.Lock()
	d.problemed = make(map[int]string, len(problems))
	var first error
	for i := range d.dev.Tags {
		p, bad := problems[i]
		if !bad {
			continue
		}
		d.problemed[i] = p.String()
		d.readings.Failed(i, p.Status, now)
		changes = append(changes, drivers.Change{Index: i})
		if first == nil {
			first = fmt.Errorf("%d tags not mirrored; first: %s", len(problems), p)
		}
	}
	snap := d.readings.Snapshot()
	for k := range changes {
		changes[k].Reading = snap[changes[k].Index]
	}
	if first != nil {
		d.health.LastError = first
	}
	d.mu.Unlock()
	n := 0
	for i := range d.dev.Tags {
		if p, bad := problems[i]; bad {
			if n < 10 {
				args := []any{"tag", p.Tag, "nodeId", p.NodeID, "status", p.Status.Error(), "problem", p.Why}
				if p.BrowsePath != "" {
					args = append(args, "browsePath", p.BrowsePath)
				}
				d.log.Error("opcua: tag not mirrored: it does not match the upstream", args...)
			}
			n++
		}
	}
	if len(changes) > 0 {
		sink(changes)
	}
}

// sourceTime is when an upstream value was taken: its SourceTimestamp,
// else its ServerTimestamp, else at.
func sourceTime(v *ua.DataValue, at time.Time) time.Time {
	switch {
	case !v.SourceTimestamp.IsZero():
		return v.SourceTimestamp
	case !v.ServerTimestamp.IsZero():
		return v.ServerTimestamp
	}
	return at
}
