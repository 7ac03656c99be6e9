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

// UpstreamTag is what the upstream says of one tag of a device
// (UpstreamTypes): the node it resolves to, its DataType and ValueRank,
// or why it does not resolve.
type UpstreamTag struct {
	// Node is the upstream node the tag's nodeId or browsePath resolved
	// to (its text).
	Node string
	// DataType names the node's DataType: its OPC UA name for a built-in
	// type ("Double"), else its NodeId.
	DataType string
	// Type is the document's tag type of DataType, "" when no tag type
	// holds it (String, a structure, …).
	Type string
	// ValueRank is the node's ValueRank (-1 scalar, 1 one dimension, …).
	ValueRank int32
	// Problem, when not nil, is why the tag does not resolve or its
	// attributes are unreadable; the fields above are then zero.
	Problem *Problem
}

// UpstreamTypes asks dev's upstream about every tag of dev, as the deploy
// command does before it stores a document: it connects once with the
// device's own settings (endpoints, security with opts.Identity, user
// with opts.Getenv), resolves each nodeId (nsu= through the NamespaceArray)
// and browsePath (TranslateBrowsePathsToNodeIds, at most maxPathsPerCall
// paths a request), and reads each node's DataType and ValueRank (at most
// maxReadPerCall attributes a request). ctx bounds it all, connecting
// included. The result has one entry per tag; an error means the upstream
// could not be asked (unreachable, refused, a request that failed).
func UpstreamTypes(ctx context.Context, dev deployment.Device, opts drivers.Options) ([]UpstreamTag, error) {
	d, err := New(dev, opts)
	if err != nil {
		return nil, err
	}
	o, err := d.clientOptions(func([]drivers.Change) {})
	if err != nil {
		return nil, err
	}
	// One question, then gone: no failover mode, no event handling, each
	// request bounded by what is left of ctx.
	o.Mode, o.OnEvent, o.PublishRequests = client.ModeWarm, nil, 0
	if dl, ok := ctx.Deadline(); ok {
		o.Timeout = max(time.Until(dl), 100*time.Millisecond)
	}
	cl, err := client.Dial(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() { go cl.Close() }()
	return d.upstreamTypes(ctx, cl)
}

// upstreamTypes is UpstreamTypes on a connected client.
func (d *Driver) upstreamTypes(ctx context.Context, cl *client.Client) ([]UpstreamTag, error) {
	nsArray, err := d.namespaces(ctx, cl)
	if err != nil {
		return nil, err
	}
	problems := map[int]Problem{}
	nodes := make([]*ua.NodeID, len(d.dev.Tags))
	var byPath []int
	for i, t := range d.dev.Tags {
		if t.BrowsePath != "" {
			byPath = append(byPath, i)
			continue
		}
		if n, p := resolve(t, nsArray); p != nil {
			problems[i] = *p
		} else {
			nodes[i] = n
		}
	}
	if err := d.translate(ctx, cl, byPath, nsArray, nodes, problems); err != nil {
		return nil, err
	}
	out := make([]UpstreamTag, len(d.dev.Tags))
	var ids []*ua.ReadValueID
	var idx []int
	for i, n := range nodes {
		if p, bad := problems[i]; bad {
			out[i].Problem = &p
			continue
		}
		ids = append(ids,
			&ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDDataType, DataEncoding: &ua.QualifiedName{}},
			&ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValueRank, DataEncoding: &ua.QualifiedName{}})
		idx = append(idx, i)
	}
	const per = maxReadPerCall / 2 * 2 // whole tags in a request
	for start := 0; start < len(ids); start += per {
		end := min(start+per, len(ids))
		res, err := cl.ReadAttributes(ctx, ids[start:end])
		if err != nil {
			return nil, fmt.Errorf("read the DataType of the tags: %w", err)
		}
		for k := 0; k+1 < len(res); k += 2 {
			i := idx[(start+k)/2]
			out[i] = upstreamTag(d.dev.Tags[i], nodes[i], res[k], res[k+1])
		}
	}
	return out, nil
}

// upstreamTag is a tag's entry from the read of its node's DataType (dt)
// and ValueRank (vr).
func upstreamTag(t deployment.Tag, n *ua.NodeID, dt, vr *ua.DataValue) UpstreamTag {
	p := &Problem{Tag: t.Name, NodeID: t.NodeId, BrowsePath: t.BrowsePath}
	if t.BrowsePath != "" {
		p.NodeID = n.String()
	}
	for _, dv := range []*ua.DataValue{dt, vr} {
		switch {
		case dv == nil:
			p.Status, p.Why = ua.StatusBadCommunicationError, "no DataType or ValueRank in the upstream's answer"
			return UpstreamTag{Problem: p}
		case dv.Status != ua.StatusOK:
			p.Status, p.Why = dv.Status, "the upstream answers "+dv.Status.Error()
			return UpstreamTag{Problem: p}
		}
	}
	var typ *ua.NodeID
	if dt.Value != nil {
		typ, _ = dt.Value.Value().(*ua.NodeID)
	}
	if typ == nil {
		p.Status, p.Why = ua.StatusBadTypeMismatch, "the upstream's DataType attribute is not a NodeId"
		return UpstreamTag{Problem: p}
	}
	u := UpstreamTag{Node: n.String(), DataType: typ.String()}
	if typ.Namespace() == 0 {
		if name := id.Name(typ.IntID()); name != "" {
			u.DataType = name
		}
		if tn := typeName(typ); tn != typ.String() {
			u.Type = tn
		}
	}
	if vr.Value != nil {
		u.ValueRank, _ = vr.Value.Value().(int32)
	}
	return u
}
