package uaserver

import (
	"github.com/gopcua/opcua/ua"
)

// browse implements Browse (Part 4 §5.8.2). A node with more references
// than RequestedMaxReferencesPerNode (0 = no limit) gets the first page and
// a continuation point held by the session.
func (s *Server) browse(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.BrowseRequest](c)
	if err != nil {
		return nil, err
	}
	if err := s.checkCount(len(req.NodesToBrowse), s.cfg.MaxNodesPerBrowse); err != nil {
		return nil, err
	}
	if req.View != nil && !isNullNodeID(req.View.ViewID) {
		return nil, ua.StatusBadViewIDUnknown
	}
	results := make([]*ua.BrowseResult, len(req.NodesToBrowse))
	size := 0 // lower bound of the encoded response
	for i, d := range req.NodesToBrowse {
		if d == nil || d.NodeID == nil {
			results[i] = &ua.BrowseResult{StatusCode: ua.StatusBadNodeIDInvalid, References: []*ua.ReferenceDescription{}}
			continue
		}
		refs, code := s.nodes.Browse(d)
		if code != ua.StatusOK {
			results[i] = &ua.BrowseResult{StatusCode: code, References: []*ua.ReferenceDescription{}}
			continue
		}
		results[i] = s.page(c.sess, sanitizeRefs(refs), req.RequestedMaxReferencesPerNode)
		// Stop building an answer that cannot be sent (a small request
		// asking for the same large node many times).
		if size += resultBytes(results[i]); size > s.cfg.MaxResponseSize {
			s.counters.refuse(LimitResponseSize)
			return nil, ua.StatusBadResponseTooLarge
		}
	}
	return &ua.BrowseResponse{Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
}

// resultBytes is a lower bound of the encoded size of r: the fixed part of
// each reference and its names.
func resultBytes(r *ua.BrowseResult) int {
	n := 12 + len(r.ContinuationPoint)
	for _, ref := range r.References {
		n += 20 + len(ref.BrowseName.Name) + len(ref.DisplayName.Text)
	}
	return n
}

// browseNext implements BrowseNext (Part 4 §5.8.3).
func (s *Server) browseNext(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.BrowseNextRequest](c)
	if err != nil {
		return nil, err
	}
	if err := s.checkCount(len(req.ContinuationPoints), s.cfg.MaxNodesPerBrowse); err != nil {
		return nil, err
	}
	results := make([]*ua.BrowseResult, len(req.ContinuationPoints))
	for i, id := range req.ContinuationPoints {
		cp := c.sess.takeCP(id)
		switch {
		case cp == nil:
			results[i] = &ua.BrowseResult{StatusCode: ua.StatusBadContinuationPointInvalid, References: []*ua.ReferenceDescription{}}
		case req.ReleaseContinuationPoints:
			results[i] = &ua.BrowseResult{StatusCode: ua.StatusOK, References: []*ua.ReferenceDescription{}}
		default:
			results[i] = s.page(c.sess, cp.refs, cp.max)
		}
	}
	return &ua.BrowseNextResponse{Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
}

// page returns the first max references of refs (all when max is 0) and,
// when more remain, a continuation point for them.
func (s *Server) page(sess *session, refs []*ua.ReferenceDescription, max uint32) *ua.BrowseResult {
	if max == 0 || uint64(len(refs)) <= uint64(max) {
		return &ua.BrowseResult{StatusCode: ua.StatusOK, References: refs}
	}
	cp := sess.addCP(refs[max:], max, s.cfg.MaxContinuationPoints)
	if cp == nil {
		return &ua.BrowseResult{StatusCode: ua.StatusBadSessionClosed, References: []*ua.ReferenceDescription{}}
	}
	return &ua.BrowseResult{StatusCode: ua.StatusOK, ContinuationPoint: cp, References: refs[:max:max]}
}

// sanitizeRefs drops nil references and fills the fields a ResultMask left
// nil (the encoder needs every field), copying instead of mutating the
// store's values.
func sanitizeRefs(refs []*ua.ReferenceDescription) []*ua.ReferenceDescription {
	out := make([]*ua.ReferenceDescription, 0, len(refs))
	for _, r := range refs {
		if r == nil {
			continue
		}
		if r.ReferenceTypeID == nil || r.NodeID == nil || r.BrowseName == nil || r.DisplayName == nil || r.TypeDefinition == nil {
			cp := *r
			if cp.ReferenceTypeID == nil {
				cp.ReferenceTypeID = ua.NewTwoByteNodeID(0)
			}
			if cp.NodeID == nil {
				cp.NodeID = ua.NewTwoByteExpandedNodeID(0)
			}
			if cp.BrowseName == nil {
				cp.BrowseName = &ua.QualifiedName{}
			}
			if cp.DisplayName == nil {
				cp.DisplayName = &ua.LocalizedText{}
			}
			if cp.TypeDefinition == nil {
				cp.TypeDefinition = ua.NewTwoByteExpandedNodeID(0)
			}
			r = &cp
		}
		out = append(out, r)
	}
	return out
}

// translate implements TranslateBrowsePathsToNodeIds (Part 4 §5.8.4).
func (s *Server) translate(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.TranslateBrowsePathsToNodeIDsRequest](c)
	if err != nil {
		return nil, err
	}
	if err := s.checkCount(len(req.BrowsePaths), s.cfg.MaxNodesPerTranslate); err != nil {
		return nil, err
	}
	results := make([]*ua.BrowsePathResult, len(req.BrowsePaths))
	for i, p := range req.BrowsePaths {
		var r *ua.BrowsePathResult
		switch {
		case p == nil || p.StartingNode == nil:
			r = &ua.BrowsePathResult{StatusCode: ua.StatusBadNodeIDInvalid}
		case p.RelativePath == nil || len(p.RelativePath.Elements) == 0:
			r = &ua.BrowsePathResult{StatusCode: ua.StatusBadNothingToDo}
		default:
			r = s.nodes.TranslateBrowsePath(p)
			if r == nil {
				r = &ua.BrowsePathResult{StatusCode: ua.StatusBadInternalError}
			}
		}
		results[i] = sanitizeTargets(r)
	}
	return &ua.TranslateBrowsePathsToNodeIDsResponse{Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
}

// sanitizeTargets returns r with nil targets dropped, copying r when it
// must change.
func sanitizeTargets(r *ua.BrowsePathResult) *ua.BrowsePathResult {
	clean := r.Targets != nil
	for _, t := range r.Targets {
		if t == nil || t.TargetID == nil {
			clean = false
		}
	}
	if clean {
		return r
	}
	out := &ua.BrowsePathResult{StatusCode: r.StatusCode, Targets: []*ua.BrowsePathTarget{}}
	for _, t := range r.Targets {
		if t != nil && t.TargetID != nil {
			out.Targets = append(out.Targets, t)
		}
	}
	return out
}

// registerNodes implements RegisterNodes (Part 4 §5.8.5): the ids are
// returned unchanged, as the address space has no faster alias.
func (s *Server) registerNodes(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.RegisterNodesRequest](c)
	if err != nil {
		return nil, err
	}
	if err := s.checkCount(len(req.NodesToRegister), s.cfg.MaxNodesPerRegister); err != nil {
		return nil, err
	}
	ids := make([]*ua.NodeID, len(req.NodesToRegister))
	for i, n := range req.NodesToRegister {
		if n == nil {
			return nil, ua.StatusBadNodeIDInvalid
		}
		ids[i] = n
	}
	return &ua.RegisterNodesResponse{RegisteredNodeIDs: ids}, nil
}

// unregisterNodes implements UnregisterNodes (Part 4 §5.8.6).
func (s *Server) unregisterNodes(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.UnregisterNodesRequest](c)
	if err != nil {
		return nil, err
	}
	if err := s.checkCount(len(req.NodesToUnregister), s.cfg.MaxNodesPerRegister); err != nil {
		return nil, err
	}
	return &ua.UnregisterNodesResponse{}, nil
}

// isNullNodeID reports whether n is absent or ns=0;i=0.
func isNullNodeID(n *ua.NodeID) bool {
	if n == nil {
		return true
	}
	switch n.Type() {
	case ua.NodeIDTypeTwoByte, ua.NodeIDTypeFourByte, ua.NodeIDTypeNumeric:
		return n.Namespace() == 0 && n.IntID() == 0
	}
	return false
}
