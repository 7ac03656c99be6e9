package uaserver

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/history/aggregate"
	"github.com/otopcua/otopcua/opcua/events"
)

// ValueHistory is the archive of past values that HistoryRead reads with
// ReadRawModifiedDetails, ReadAtTimeDetails and ReadProcessedDetails
// (Part 11 §6.4): the node's history store.
//
// Both methods run on the worker goroutine of the client's secure
// channel, whose later requests wait for them: a read should answer
// within a few hundred milliseconds (HistoryRead asks in pieces). ctx is
// cancelled when that channel closes. An error that is a ua.StatusCode
// (errors.As) answers that code for the node; any other error answers
// BadNoCommunication. It must be safe for concurrent use.
type ValueHistory interface {
	// Historized describes the archive of node's values; false when they
	// are not recorded.
	Historized(node *ua.NodeID) (HistorizedNode, bool)
	// ReadValues calls fn for node's values with from ≤ At < to, oldest
	// first, one per time, until fn returns false.
	ReadValues(ctx context.Context, node *ua.NodeID, from, to time.Time, fn func(HistoryValue) bool) error
}

// HistorizedNode describes the archive of one Variable's values.
type HistorizedNode struct {
	// DataType is the numeric id (namespace 0) of the Variable's DataType:
	// id.Boolean, id.Int16, id.UInt16, id.Int32, id.UInt32, id.Float or
	// id.Double. Values are returned in it.
	DataType uint32
	// Stepped: the value holds until the next one (a bool, a setpoint);
	// otherwise it moves along a line between two values (Part 11 §5.2.2).
	Stepped bool
	// Start is the time of the first value archived, End the time up to
	// which the archive is complete; zero when unknown.
	Start, End time.Time
}

// HistoryValue is one archived value.
type HistoryValue struct {
	At     time.Time
	Value  float64
	Status ua.StatusCode
}

// SetValueHistory makes HistoryRead of values read h; nil removes it
// (HistoryRead of values then answers BadHistoryOperationUnsupported per
// node, and continuation points made with the old one are refused).
func (s *Server) SetValueHistory(h ValueHistory) {
	if h == nil {
		s.history.v.Store(nil)
		return
	}
	s.history.v.Store(&valueSource{h: h})
}

type valueSource struct{ h ValueHistory }

// oneTick is an OPC UA DateTime's resolution.
const oneTick = 100 * time.Nanosecond

// valueSliceBudget bounds the time one node's piece of a processed read
// spends before it returns what it has with a continuation point, so that
// a read over years never holds the channel's other requests for long.
const valueSliceBudget = 200 * time.Millisecond

// valueBytes is what one DataValue of a result is counted as against the
// response's size: a Variant of up to 8 bytes, a status and two times.
const valueBytes = 32

// valueDetails is one of the values' HistoryReadDetails.
type valueDetails struct {
	raw       *ua.ReadRawModifiedDetails
	atTime    *ua.ReadAtTimeDetails
	processed *ua.ReadProcessedDetails
}

// valueDetailsOf returns the values' details in eo, false for any other.
func valueDetailsOf(eo *ua.ExtensionObject) (valueDetails, bool) {
	if eo == nil || eo.Value == nil {
		return valueDetails{}, false
	}
	switch v := eo.Value.(type) {
	case *ua.ReadRawModifiedDetails:
		return valueDetails{raw: v}, v != nil
	case ua.ReadRawModifiedDetails:
		return valueDetails{raw: &v}, true
	case *ua.ReadAtTimeDetails:
		return valueDetails{atTime: v}, v != nil
	case ua.ReadAtTimeDetails:
		return valueDetails{atTime: &v}, true
	case *ua.ReadProcessedDetails:
		return valueDetails{processed: v}, v != nil
	case ua.ReadProcessedDetails:
		return valueDetails{processed: &v}, true
	}
	return valueDetails{}, false
}

// valueQuery is where a value read stands: the state a continuation
// point keeps between pieces.
type valueQuery struct {
	src  *valueSource
	node *ua.NodeID
	info HistorizedNode

	// Raw: next is where the next piece starts (inclusive), end the other
	// end (exclusive); backward reads from next down to end. left counts
	// down NumValuesPerNode when it bounds the whole read (one time
	// given); per is the client's piece size otherwise (0: the server's).
	next, end time.Time
	backward  bool
	per       int
	bounded   bool
	left      uint32
	bounds    bool // ReturnBounds: the end's bound is still owed
	started   bool // the first piece (and the start's bound) was sent

	// Processed: the intervals from start to end by processing, the next
	// one's index, the aggregate and its configuration.
	processed  bool
	start      time.Time
	processing time.Duration
	total, at  int
	kind       aggregate.Kind
	cfg        aggregate.Config
}

// historyReadValues answers a HistoryRead of values.
func (s *Server) historyReadValues(c *call, req *ua.HistoryReadRequest, d valueDetails) (ua.Response, error) {
	if err := s.checkCount(len(req.NodesToRead), s.cfg.MaxNodesPerHistoryReadData); err != nil {
		return nil, err
	}
	if req.TimestampsToReturn == ua.TimestampsToReturnNeither || req.TimestampsToReturn > ua.TimestampsToReturnNeither {
		return nil, ua.StatusBadTimestampsToReturnInvalid
	}
	if p := d.processed; p != nil && !req.ReleaseContinuationPoints && len(p.AggregateType) != len(req.NodesToRead) {
		return nil, ua.StatusBadAggregateListMismatch
	}
	results := make([]*ua.HistoryReadResult, len(req.NodesToRead))
	src := s.history.v.Load()
	switch {
	case req.ReleaseContinuationPoints:
		for i, n := range req.NodesToRead {
			results[i] = s.releaseHistoryCP(c.sess, n)
		}
	case src == nil:
		for i := range results {
			results[i] = valueResult(ua.StatusBadHistoryOperationUnsupported, nil, nil)
		}
	default:
		r := &valueReader{s: s, ctx: c.ch.ctx, sess: c.sess, src: src, d: d, ts: req.TimestampsToReturn,
			budget: max(1<<10, (s.cfg.MaxResponseSize-historyRequestOverhead)/len(req.NodesToRead))}
		for i, n := range req.NodesToRead {
			results[i] = r.node(i, n)
		}
	}
	return &ua.HistoryReadResponse{Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
}

func valueResult(code ua.StatusCode, cp []byte, dvs []*ua.DataValue) *ua.HistoryReadResult {
	r := &ua.HistoryReadResult{StatusCode: code, ContinuationPoint: cp, HistoryData: ua.NewExtensionObject(nil)}
	if dvs != nil {
		r.HistoryData = ua.NewExtensionObject(&ua.HistoryData{DataValues: dvs})
	}
	return r
}

// valueReader reads the nodes of one HistoryRead of values.
type valueReader struct {
	s      *Server
	ctx    context.Context
	sess   *session
	src    *valueSource
	d      valueDetails
	ts     ua.TimestampsToReturn
	budget int // encoded bytes of values per node
}

// node answers one HistoryReadValueID (i: its index, for the aggregate).
func (r *valueReader) node(i int, n *ua.HistoryReadValueID) *ua.HistoryReadResult {
	if n == nil || n.NodeID == nil {
		return valueResult(ua.StatusBadNodeIDInvalid, nil, nil)
	}
	var q *valueQuery
	if len(n.ContinuationPoint) > 0 {
		if cp := r.sess.takeHistoryCP(n.ContinuationPoint); cp != nil {
			q = cp.val
		}
		if q == nil || !events.SameNode(q.node, n.NodeID) || q.src != r.src || (q.processed != (r.d.processed != nil)) {
			return valueResult(ua.StatusBadContinuationPointInvalid, nil, nil)
		}
	}
	info, code := r.historized(n.NodeID)
	if code != ua.StatusOK {
		return valueResult(code, nil, nil)
	}
	var dvs []*ua.DataValue
	more := false
	switch {
	case r.d.atTime != nil:
		dvs, code = r.atTime(n.NodeID, info)
	case r.d.raw != nil:
		if q == nil {
			if q, code = r.newRaw(n.NodeID, info); code != ua.StatusOK {
				return valueResult(code, nil, nil)
			}
		}
		dvs, more, code = r.rawPiece(q)
	default:
		if q == nil {
			if q, code = r.newProcessed(n.NodeID, info, r.d.processed.AggregateType[i]); code != ua.StatusOK {
				return valueResult(code, nil, nil)
			}
		}
		dvs, more, code = r.processedPiece(q)
	}
	if code != ua.StatusOK {
		return valueResult(code, nil, nil)
	}
	var cp []byte
	if more {
		if cp = r.sess.addHistoryCP(&historyCP{val: q}, r.s.cfg.MaxHistoryContinuationPoints); cp == nil {
			return valueResult(ua.StatusBadSessionClosed, nil, nil)
		}
	}
	if len(dvs) == 0 && !more {
		return valueResult(ua.StatusGoodNoData, nil, []*ua.DataValue{})
	}
	return valueResult(ua.StatusOK, cp, dvs)
}

// historized checks that n is a Variable whose AccessLevel has the
// HistoryRead bit and whose values the archive holds.
func (r *valueReader) historized(n *ua.NodeID) (HistorizedNode, ua.StatusCode) {
	dv := r.s.nodes.Read(&ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDAccessLevel, DataEncoding: &ua.QualifiedName{}},
		ua.TimestampsToReturnNeither)
	switch {
	case dv == nil:
		return HistorizedNode{}, ua.StatusBadInternalError
	case dv.Status == ua.StatusBadNodeIDUnknown:
		return HistorizedNode{}, ua.StatusBadNodeIDUnknown
	case dv.Status != ua.StatusOK || dv.Value == nil:
		return HistorizedNode{}, ua.StatusBadHistoryOperationUnsupported // not a Variable
	}
	if bits, ok := dv.Value.Value().(byte); !ok || bits&byte(ua.AccessLevelTypeHistoryRead) == 0 {
		return HistorizedNode{}, ua.StatusBadHistoryOperationUnsupported
	}
	info, ok := r.src.h.Historized(n)
	if !ok {
		return HistorizedNode{}, ua.StatusBadHistoryOperationUnsupported
	}
	return info, ua.StatusOK
}

// newRaw checks a ReadRawModified's times (Part 11 §6.4.3.2) and returns
// the query of its first piece.
func (r *valueReader) newRaw(n *ua.NodeID, info HistorizedNode) (*valueQuery, ua.StatusCode) {
	d := r.d.raw
	if d.IsReadModified {
		return nil, ua.StatusBadHistoryOperationUnsupported // the archive keeps no modified values
	}
	q := &valueQuery{src: r.src, node: n, info: info, bounds: d.ReturnBounds}
	hasStart, hasEnd := specified(d.StartTime), specified(d.EndTime)
	switch {
	case hasStart && hasEnd:
		q.next, q.end = d.StartTime, d.EndTime
		q.backward = d.EndTime.Before(d.StartTime)
		q.per = int(min(d.NumValuesPerNode, 1<<30))
		if d.StartTime.Equal(d.EndTime) {
			q.end = d.EndTime.Add(oneTick) // the values at that time
		}
	case hasStart && d.NumValuesPerNode > 0:
		q.next, q.end = d.StartTime, MaxTime
		q.bounded, q.left = true, d.NumValuesPerNode
	case hasEnd && d.NumValuesPerNode > 0:
		// Backward from EndTime, which the domain excludes.
		q.next, q.end, q.backward = d.EndTime.Add(-oneTick), MinTime, true
		q.bounded, q.left = true, d.NumValuesPerNode
	default:
		return nil, ua.StatusBadInvalidTimestampArgument
	}
	return q, ua.StatusOK
}

// rawPiece reads the next piece of q and advances q past it.
func (r *valueReader) rawPiece(q *valueQuery) (out []*ua.DataValue, more bool, code ua.StatusCode) {
	want := min(r.s.cfg.MaxHistoryValuesPerNode, max(1, r.budget/valueBytes))
	if q.per > 0 {
		want = min(want, q.per)
	}
	if q.bounded {
		want = min(want, int(q.left))
	}
	out = []*ua.DataValue{}
	if !q.started && q.bounds {
		b, err := r.startBound(q)
		if err != nil {
			return nil, false, r.failed(q, err)
		}
		if b != nil {
			out = append(out, b)
			want = max(1, want-1)
		}
	}
	q.started = true
	var vs []HistoryValue
	var err error
	if q.backward {
		vs, err = r.readBack(q.node, q.end.Add(oneTick), q.next.Add(oneTick), want+1) // (end, next]
	} else {
		vs, err = r.read(q.node, q.next, q.end, want+1)
	}
	if err != nil {
		return nil, false, r.failed(q, err)
	}
	if len(vs) > want {
		// More remain: the next piece starts at the first value not sent.
		q.next = vs[want].At
		vs = vs[:want]
		more = true
	}
	for _, v := range vs {
		out = append(out, r.dataValue(q.info, v.At, v.Value, v.Status, true))
	}
	if q.bounded {
		q.left -= uint32(len(vs))
		if q.left == 0 {
			more = false
		}
	}
	if !more && q.bounds && !q.bounded {
		b, err := r.endBound(q)
		if err != nil {
			return nil, false, r.failed(q, err)
		}
		out = append(out, b)
	}
	return out, more, ua.StatusOK
}

// startBound is the value at the start of a raw read with ReturnBounds
// when none lies exactly there: the last before it (forward) or the
// first after it (backward), or BadBoundNotFound at the start. nil when a
// value lies on the start (it is the bound and comes with the values).
func (r *valueReader) startBound(q *valueQuery) (*ua.DataValue, error) {
	at, err := r.read(q.node, q.next, q.next.Add(oneTick), 1)
	if err != nil || len(at) > 0 {
		return nil, err
	}
	var vs []HistoryValue
	if q.backward {
		vs, err = r.read(q.node, q.next.Add(oneTick), MaxTime, 1)
	} else {
		vs, err = r.readBack(q.node, MinTime, q.next, 1)
	}
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return r.dataValue(q.info, q.next, 0, ua.StatusBadBoundNotFound, false), nil
	}
	return r.dataValue(q.info, vs[0].At, vs[0].Value, vs[0].Status, true), nil
}

// endBound is the value at or after the end (forward), at or before it
// (backward), or BadBoundNotFound at the end.
func (r *valueReader) endBound(q *valueQuery) (*ua.DataValue, error) {
	var vs []HistoryValue
	var err error
	if q.backward {
		vs, err = r.readBack(q.node, MinTime, q.end.Add(oneTick), 1)
	} else {
		vs, err = r.read(q.node, q.end, MaxTime, 1)
	}
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return r.dataValue(q.info, q.end, 0, ua.StatusBadBoundNotFound, false), nil
	}
	return r.dataValue(q.info, vs[0].At, vs[0].Value, vs[0].Status, true), nil
}

// atTime answers a ReadAtTime (Part 11 §6.4.5): the value at each
// requested time, the archived one when one lies there, else interpolated
// (stepped for a stepped Variable) from the values around it, with the
// Part 13 Interpolative status.
func (r *valueReader) atTime(n *ua.NodeID, info HistorizedNode) ([]*ua.DataValue, ua.StatusCode) {
	d := r.d.atTime
	if len(d.ReqTimes) == 0 {
		return nil, ua.StatusBadInvalidArgument
	}
	if len(d.ReqTimes) > r.s.cfg.MaxHistoryValuesPerNode {
		r.s.counters.refuse(LimitOperationsPerCall)
		return nil, ua.StatusBadTooManyOperations
	}
	cfg := aggregate.DefaultConfig()
	cfg.TreatUncertainAsBad = false
	cfg.Stepped = info.Stepped || d.UseSimpleBounds
	cfg.DataStart, cfg.DataEnd = info.Start, info.End
	out := make([]*ua.DataValue, 0, len(d.ReqTimes))
	start := time.Now()
	for _, t := range d.ReqTimes {
		if time.Since(start) > 4*valueSliceBudget {
			return nil, ua.StatusBadTimeout
		}
		raw, err := r.around(n, cfg, t, t)
		if err != nil {
			return nil, r.failedNode(n, err)
		}
		res := aggregate.Compute(aggregate.Interpolative, cfg, aggregate.Interval{Start: t, End: t.Add(oneTick)}, raw)
		out = append(out, r.result(info, aggregate.Interpolative, res))
	}
	return out, ua.StatusOK
}

// newProcessed checks a ReadProcessed (Part 11 §6.4.4) for one node and
// returns the query of its first piece.
func (r *valueReader) newProcessed(n *ua.NodeID, info HistorizedNode, aggType *ua.NodeID) (*valueQuery, ua.StatusCode) {
	d := r.d.processed
	k, ok := aggregate.KindOf(aggType)
	if !ok {
		return nil, ua.StatusBadAggregateNotSupported
	}
	cfg := aggregate.DefaultConfig()
	if ac := d.AggregateConfiguration; ac != nil && !ac.UseServerCapabilitiesDefaults {
		cfg.TreatUncertainAsBad, cfg.PercentDataBad, cfg.PercentDataGood, cfg.UseSlopedExtrapolation =
			ac.TreatUncertainAsBad, ac.PercentDataBad, ac.PercentDataGood, ac.UseSlopedExtrapolation
	}
	cfg.Stepped = info.Stepped
	cfg.DataStart, cfg.DataEnd = info.Start, info.End
	if cfg.Validate() != nil {
		return nil, ua.StatusBadAggregateConfigurationRejected
	}
	if !specified(d.StartTime) || !specified(d.EndTime) || d.StartTime.Equal(d.EndTime) {
		return nil, ua.StatusBadInvalidTimestampArgument
	}
	if d.ProcessingInterval < 0 || math.IsNaN(d.ProcessingInterval) || math.IsInf(d.ProcessingInterval, 0) {
		return nil, ua.StatusBadInvalidArgument
	}
	processing := time.Duration(d.ProcessingInterval * float64(time.Millisecond))
	span := d.EndTime.Sub(d.StartTime)
	if span < 0 {
		span = -span
	}
	if processing > 0 && span >= math.MaxInt64/2 {
		return nil, ua.StatusBadInvalidTimestampArgument // centuries, in intervals: ask with ProcessingInterval 0
	}
	total := 1
	if processing > 0 && processing < span {
		total = int((span + processing - 1) / processing)
	}
	if total > r.s.cfg.MaxProcessedIntervals || total < 0 {
		r.s.counters.refuse(LimitOperationsPerCall)
		return nil, ua.StatusBadTooManyOperations
	}
	return &valueQuery{src: r.src, node: n, info: info, processed: true, start: d.StartTime, end: d.EndTime,
		processing: processing, total: total, kind: k, cfg: cfg}, ua.StatusOK
}

// processedPiece computes the next intervals of q, as many as the piece
// holds and the time slice allows, and advances q past them.
func (r *valueReader) processedPiece(q *valueQuery) ([]*ua.DataValue, bool, ua.StatusCode) {
	want := min(r.s.cfg.MaxHistoryValuesPerNode, max(1, r.budget/valueBytes), q.total-q.at)
	from := q.start
	dir := time.Duration(1)
	if q.end.Before(q.start) {
		dir = -1
	}
	if q.total > 1 {
		from = q.start.Add(dir * time.Duration(q.at) * q.processing)
	}
	to := q.end
	if q.at+want < q.total {
		to = q.start.Add(dir * time.Duration(q.at+want) * q.processing)
	}
	ivs, err := aggregate.Intervals(from, to, q.processing, want)
	if err != nil {
		return nil, false, ua.StatusBadInvalidArgument
	}
	out := make([]*ua.DataValue, 0, len(ivs))
	began := time.Now()
	for len(out) < len(ivs) && (len(out) == 0 || time.Since(began) <= valueSliceBudget) {
		rest := ivs[len(out):]
		raw, covered, err := r.run(q.node, q.cfg, rest)
		if err != nil {
			return nil, false, r.failed(q, err)
		}
		for _, iv := range rest[:covered] {
			if len(out) > 0 && time.Since(began) > valueSliceBudget {
				break
			}
			out = append(out, r.result(q.info, q.kind, aggregate.Compute(q.kind, q.cfg, iv, raw)))
		}
	}
	q.at += len(out)
	return out, q.at < q.total, ua.StatusOK
}

// processedRunValues bounds the raw values one run of a processed read
// holds (run): about 10 MB of samples.
var processedRunValues = 1 << 18

// run reads one sorted run of raw values that serves the first `covered`
// intervals of ivs (covered ≥ 1): for intervals forward in time, every
// value from the second-latest usable one before the first interval on,
// at most processedRunValues of them, and, when that reaches past the last
// interval, on to the first usable value after it — so that each interval
// costs a binary search in the run instead of three reads of the archive
// (aggregate.Compute finds its interval in a longer run and gives the
// result it gives over its Window). Backward intervals, and an interval
// holding more values than a run, are read one by one (around).
func (r *valueReader) run(n *ua.NodeID, cfg aggregate.Config, ivs []aggregate.Interval) ([]aggregate.Sample, int, error) {
	first, last := ivs[0], ivs[len(ivs)-1]
	if first.End.Before(first.Start) || len(ivs) == 1 {
		raw, err := r.around(n, cfg, first.Start, first.End)
		return raw, 1, err
	}
	usable := usableIn(cfg)
	lo, hi := first.Start, last.End
	before, err := r.readBackUntil(n, lo, 2, usable)
	if err != nil {
		return nil, 0, err
	}
	out := make([]aggregate.Sample, 0, len(before)+64)
	for _, v := range before {
		out = append(out, aggregate.Sample{At: v.At, Value: v.Value, Status: v.Status})
	}
	mid := len(out)
	full := false
	if err := r.src.h.ReadValues(r.ctx, n, lo, hi.Add(oneTick), func(v HistoryValue) bool {
		out = append(out, aggregate.Sample{At: v.At, Value: v.Value, Status: v.Status})
		full = len(out)-mid >= processedRunValues
		return !full
	}); err != nil {
		return nil, 0, err
	}
	if full {
		// The intervals that end before the run's last usable value have
		// everything they need in it.
		var lastUsable time.Time
		for i := len(out) - 1; i >= mid; i-- {
			if usable(HistoryValue{Status: out[i].Status}) {
				lastUsable = out[i].At
				break
			}
		}
		covered := 0
		for covered < len(ivs) && ivs[covered].End.Before(lastUsable) {
			covered++
		}
		if covered == 0 {
			raw, err := r.around(n, cfg, first.Start, first.End)
			return raw, 1, err
		}
		return out, covered, nil
	}
	if err := r.src.h.ReadValues(r.ctx, n, hi.Add(oneTick), MaxTime, func(v HistoryValue) bool {
		out = append(out, aggregate.Sample{At: v.At, Value: v.Value, Status: v.Status})
		return !usable(v) && len(out) < mid+processedRunValues+1<<10
	}); err != nil {
		return nil, 0, err
	}
	return out, len(ivs), nil
}

// around reads the raw values an aggregate over [a, b] (either order)
// needs: everything between, back to the second-latest usable value
// before, and on to the first usable value after (aggregate.Window).
func (r *valueReader) around(n *ua.NodeID, cfg aggregate.Config, a, b time.Time) ([]aggregate.Sample, error) {
	lo, hi := a, b
	if hi.Before(lo) {
		lo, hi = hi, lo
	}
	usable := usableIn(cfg)
	before, err := r.readBackUntil(n, lo, 2, usable)
	if err != nil {
		return nil, err
	}
	var mid []HistoryValue
	if err := r.src.h.ReadValues(r.ctx, n, lo, hi.Add(oneTick), func(v HistoryValue) bool {
		mid = append(mid, v)
		return len(mid) <= 1<<20 // a bound on one interval's values
	}); err != nil {
		return nil, err
	}
	var after []HistoryValue
	if err := r.src.h.ReadValues(r.ctx, n, hi.Add(oneTick), MaxTime, func(v HistoryValue) bool {
		after = append(after, v)
		return !usable(v) && len(after) < 1<<10
	}); err != nil {
		return nil, err
	}
	out := make([]aggregate.Sample, 0, len(before)+len(mid)+len(after))
	for _, part := range [][]HistoryValue{before, mid, after} {
		for _, v := range part {
			out = append(out, aggregate.Sample{At: v.At, Value: v.Value, Status: v.Status})
		}
	}
	return out, nil
}

// usableIn reports whether a raw value is usable under cfg: not Bad, and
// not Uncertain when TreatUncertainAsBad is set.
func usableIn(cfg aggregate.Config) func(HistoryValue) bool {
	return func(v HistoryValue) bool {
		sev := uint32(v.Status) >> 30
		return sev == 0 || (sev == 1 && !cfg.TreatUncertainAsBad)
	}
}

// read returns at most n values with from ≤ At < to, oldest first.
func (r *valueReader) read(node *ua.NodeID, from, to time.Time, n int) ([]HistoryValue, error) {
	var out []HistoryValue
	err := r.src.h.ReadValues(r.ctx, node, from, to, func(v HistoryValue) bool {
		out = append(out, v)
		return len(out) < n
	})
	return out, err
}

// readBack returns at most n values with from ≤ At < to, newest first.
func (r *valueReader) readBack(node *ua.NodeID, from, to time.Time, n int) ([]HistoryValue, error) {
	vs, err := r.readBackUntil(node, to, n, func(HistoryValue) bool { return true }, from)
	slices.Reverse(vs)
	return vs, err
}

// readBackUntil returns the values before `before`, oldest first, back to
// and including the n-th one that keep accepts (or to the archive's
// start, or to floor when given). The archive reads forward only: it
// reads windows before `before` that grow eightfold until they hold
// enough.
func (r *valueReader) readBackUntil(node *ua.NodeID, before time.Time, n int, keep func(HistoryValue) bool, floor ...time.Time) ([]HistoryValue, error) {
	low := MinTime
	if len(floor) > 0 && floor[0].After(low) {
		low = floor[0]
	}
	var got []HistoryValue // oldest first
	hi, w := before, time.Minute
	for hi.After(low) {
		from := hi.Add(-w)
		if from.Before(low) || from.After(hi) { // or overflowed
			from = low
		}
		var win []HistoryValue
		if err := r.src.h.ReadValues(r.ctx, node, from, hi, func(v HistoryValue) bool {
			win = append(win, v)
			return true
		}); err != nil {
			return nil, err
		}
		got = append(win, got...)
		kept := 0
		for i := len(got) - 1; i >= 0; i-- {
			if keep(got[i]) {
				kept++
				if kept == n {
					return got[i:], nil
				}
			}
		}
		if len(got) > 1<<20 {
			return got, nil // a bound on what one look back holds
		}
		hi, w = from, w*8
	}
	return got, nil
}

// failed maps a read error of q to its status.
func (r *valueReader) failed(q *valueQuery, err error) ua.StatusCode {
	return r.failedNode(q.node, err)
}

func (r *valueReader) failedNode(n *ua.NodeID, err error) ua.StatusCode {
	var sc ua.StatusCode
	if errors.As(err, &sc) {
		return sc
	}
	r.s.log.Warn("uaserver: value history read failed", "node", n.String(), "err", err)
	return ua.StatusBadNoCommunication
}

// result is an aggregate's Result as a DataValue.
func (r *valueReader) result(info HistorizedNode, k aggregate.Kind, res aggregate.Result) *ua.DataValue {
	if uint32(res.Status)>>30 == 2 { // Bad: no value
		return r.dataValue(info, res.At, 0, res.Status, false)
	}
	dt := info.DataType
	switch k {
	case aggregate.Average, aggregate.TimeAverage, aggregate.PercentGood, aggregate.PercentBad,
		aggregate.DurationGood, aggregate.DurationBad:
		dt = id.Double
	case aggregate.Count:
		dt = id.Int32
	}
	return r.dataValueAs(dt, res.At, res.Value, res.Status, true)
}

// dataValue is an archived value in the Variable's DataType.
func (r *valueReader) dataValue(info HistorizedNode, at time.Time, v float64, st ua.StatusCode, hasValue bool) *ua.DataValue {
	return r.dataValueAs(info.DataType, at, v, st, hasValue)
}

func (r *valueReader) dataValueAs(dt uint32, at time.Time, v float64, st ua.StatusCode, hasValue bool) *ua.DataValue {
	dv := &ua.DataValue{Status: st}
	if st != ua.StatusOK {
		dv.EncodingMask |= ua.DataValueStatusCode
	}
	if hasValue {
		dv.Value = ua.MustVariant(convert(dt, v))
		dv.EncodingMask |= ua.DataValueValue
	}
	if r.ts == ua.TimestampsToReturnSource || r.ts == ua.TimestampsToReturnBoth {
		dv.SourceTimestamp = at
		dv.EncodingMask |= ua.DataValueSourceTimestamp
	}
	if r.ts == ua.TimestampsToReturnServer || r.ts == ua.TimestampsToReturnBoth {
		dv.ServerTimestamp = at // the archive keeps one time: when the value was read
		dv.EncodingMask |= ua.DataValueServerTimestamp
	}
	return dv
}

// convert casts an archived float64 back to DataType dt (rounding to the
// nearest whole number, clamped to the type's range, for the integers).
func convert(dt uint32, v float64) any {
	clamp := func(lo, hi float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return math.Max(lo, math.Min(hi, math.Round(v)))
	}
	switch dt {
	case id.Boolean:
		return v != 0
	case id.Int16:
		return int16(clamp(math.MinInt16, math.MaxInt16))
	case id.UInt16:
		return uint16(clamp(0, math.MaxUint16))
	case id.Int32:
		return int32(clamp(math.MinInt32, math.MaxInt32))
	case id.UInt32:
		return uint32(clamp(0, math.MaxUint32))
	case id.Float:
		return float32(v)
	}
	return v
}
