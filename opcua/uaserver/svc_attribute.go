package uaserver

import (
	"math"

	"github.com/gopcua/opcua/ua"
)

// checkCount validates the length of a request's operation list; a list
// over limit counts as a refusal of LimitOperationsPerCall.
func (s *Server) checkCount(n, limit int) error {
	switch {
	case n == 0:
		return ua.StatusBadNothingToDo
	case n > limit:
		s.counters.refuse(LimitOperationsPerCall)
		return ua.StatusBadTooManyOperations
	}
	return nil
}

func badValue(code ua.StatusCode) *ua.DataValue {
	return &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: code}
}

// read implements Read (Part 4 §5.10.2).
func (s *Server) read(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.ReadRequest](c)
	if err != nil {
		return nil, err
	}
	if err := s.checkCount(len(req.NodesToRead), s.cfg.MaxNodesPerRead); err != nil {
		return nil, err
	}
	if math.IsNaN(req.MaxAge) || req.MaxAge < 0 {
		return nil, ua.StatusBadMaxAgeInvalid
	}
	if req.TimestampsToReturn > ua.TimestampsToReturnNeither {
		return nil, ua.StatusBadTimestampsToReturnInvalid
	}
	results := make([]*ua.DataValue, len(req.NodesToRead))
	allowed := c.sess.may(RightRead)
	for i, rv := range req.NodesToRead {
		if !allowed {
			results[i] = badValue(ua.StatusBadUserAccessDenied)
			continue
		}
		if rv == nil || rv.NodeID == nil {
			results[i] = badValue(ua.StatusBadNodeIDInvalid)
			continue
		}
		dv := s.nodes.Read(rv, req.TimestampsToReturn)
		if dv == nil {
			dv = badValue(ua.StatusBadInternalError)
		}
		results[i] = dv
	}
	return &ua.ReadResponse{Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
}

// write implements Write (Part 4 §5.10.4).
func (s *Server) write(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.WriteRequest](c)
	if err != nil {
		return nil, err
	}
	if err := s.checkCount(len(req.NodesToWrite), s.cfg.MaxNodesPerWrite); err != nil {
		return nil, err
	}
	results := make([]ua.StatusCode, len(req.NodesToWrite))
	// The rights are checked here, before the NodeStore (and so a tag's
	// write hook, the Primary gate and the device) sees the write.
	allowed := c.sess.may(RightWrite)
	for i, wv := range req.NodesToWrite {
		switch {
		case !allowed:
			results[i] = ua.StatusBadUserAccessDenied
		case wv == nil || wv.NodeID == nil:
			results[i] = ua.StatusBadNodeIDInvalid
		case wv.Value == nil:
			results[i] = ua.StatusBadTypeMismatch
		default:
			results[i] = s.writeOne(c, i, wv)
		}
	}
	return &ua.WriteResponse{Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
}

// writeOne hands one WriteValue to the NodeStore, naming the writer when
// the store takes it (WriterStore).
func (s *Server) writeOne(c *call, i int, wv *ua.WriteValue) ua.StatusCode {
	if ws, ok := s.nodes.(WriterStore); ok {
		return ws.WriteAs(Writer{Session: c.sess.info(), Handle: c.hdr.RequestHandle, Index: i}, wv)
	}
	return s.nodes.Write(wv)
}
