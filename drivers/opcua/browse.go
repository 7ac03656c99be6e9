package opcua

import (
	"context"
	"fmt"
	"math"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/opcua/client"
)

// maxPathsPerCall bounds one TranslateBrowsePathsToNodeIds request of the
// check (servers commonly allow 1,000 or more per call).
const maxPathsPerCall = 500

// relativePath is a tag's browsePath as the request's RelativePath, its
// nsu= namespaces looked up in nsArray: elements follow forward
// HierarchicalReferences ('/') or Aggregates ('.'), subtypes included.
func relativePath(p deployment.BrowsePath, nsArray []string) (*ua.RelativePath, error) {
	rp := &ua.RelativePath{Elements: make([]*ua.RelativePathElement, len(p))}
	for k, st := range p {
		ns := st.Namespace
		if st.NamespaceURI != "" {
			i := indexOf(nsArray, st.NamespaceURI)
			if i < 0 {
				return nil, fmt.Errorf("the upstream serves no namespace %s", st.NamespaceURI)
			}
			ns = uint16(i)
		}
		ref := uint32(id.HierarchicalReferences)
		if st.Aggregates {
			ref = id.Aggregates
		}
		rp.Elements[k] = &ua.RelativePathElement{
			ReferenceTypeID: ua.NewNumericNodeID(0, ref), IncludeSubtypes: true,
			TargetName: &ua.QualifiedName{NamespaceIndex: ns, Name: st.Name},
		}
	}
	return rp, nil
}

// indexOf is the index of uri in nsArray, or -1.
func indexOf(nsArray []string, uri string) int {
	for k, u := range nsArray {
		if u == uri {
			return k
		}
	}
	return -1
}

// translate resolves the browsePath tags among want (tag indexes) on the
// upstream, in calls of at most maxPathsPerCall paths, into nodes; a tag
// that does not resolve gets a problem (BadNoMatch, or the upstream's
// status for its path). An error is a failed request.
func (d *Driver) translate(ctx context.Context, cl *client.Client, want []int, nsArray []string, nodes []*ua.NodeID, problems map[int]Problem) error {
	var paths []*ua.BrowsePath
	var idx []int
	for _, i := range want {
		t := d.dev.Tags[i]
		bp, err := deployment.ParseBrowsePath(t.BrowsePath)
		if err != nil {
			problems[i] = Problem{Tag: t.Name, BrowsePath: t.BrowsePath, Status: ua.StatusBadBrowseNameInvalid, Why: err.Error()}
			continue
		}
		rp, err := relativePath(bp, nsArray)
		if err != nil {
			problems[i] = Problem{Tag: t.Name, BrowsePath: t.BrowsePath, Status: ua.StatusBadNoMatch, Why: err.Error()}
			continue
		}
		paths = append(paths, &ua.BrowsePath{StartingNode: ua.NewNumericNodeID(0, id.ObjectsFolder), RelativePath: rp})
		idx = append(idx, i)
	}
	for start := 0; start < len(paths); start += maxPathsPerCall {
		end := min(start+maxPathsPerCall, len(paths))
		res, err := cl.TranslateBrowsePaths(ctx, paths[start:end])
		if err != nil {
			return fmt.Errorf("resolve the browsePath of the tags: %w", err)
		}
		for k, r := range res {
			i := idx[start+k]
			n, p := target(d.dev.Tags[i], r)
			if p != nil {
				problems[i] = *p
				continue
			}
			nodes[i] = n
		}
	}
	return nil
}

// target is the node a browse path resolved to: the first complete
// target on this server (a path that names several nodes takes the
// first the upstream lists).
func target(t deployment.Tag, r *ua.BrowsePathResult) (*ua.NodeID, *Problem) {
	prob := func(st ua.StatusCode, why string) (*ua.NodeID, *Problem) {
		return nil, &Problem{Tag: t.Name, BrowsePath: t.BrowsePath, Status: st, Why: why}
	}
	switch {
	case r == nil:
		return prob(ua.StatusBadNoMatch, "no result in the upstream's answer")
	case r.StatusCode != ua.StatusOK:
		return prob(r.StatusCode, "the upstream resolves no node: "+r.StatusCode.Error())
	}
	for _, tg := range r.Targets {
		if tg == nil || tg.TargetID == nil || tg.TargetID.NodeID == nil || tg.RemainingPathIndex != math.MaxUint32 {
			continue
		}
		if tg.TargetID.ServerIndex != 0 || tg.TargetID.NamespaceURI != "" {
			continue // on another server, or named by URI: not a node of this session
		}
		return tg.TargetID.NodeID, nil
	}
	return prob(ua.StatusBadNoMatch, "the upstream resolves no node on this server")
}
