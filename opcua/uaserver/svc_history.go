package uaserver

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver/uabin"
)

// Bounds of the time domain an EventHistory is asked for when the client
// left one end unspecified (Part 11 §6.5.2.2: DateTime.MinValue means
// "not specified"). MinTime is the first instant an OPC UA DateTime holds.
var (
	MinTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// EventHistory is the store of past events that HistoryRead with
// ReadEventDetails reads (Part 11 §6.5.2): the historian adapter.
//
// ReadEvents returns events notifier reported whose Time lies in the time
// domain from start to end, in the domain's order, at most max of them:
//
//   - start before end: start ≤ Time < end, oldest first;
//   - start equal to end: Time equal to start;
//   - end before start: end < Time ≤ start, newest first.
//
// start and end are never zero: an end the client left unspecified is
// MinTime or MaxTime. max is at least 1. Events of equal Time must come in
// the same order every time: a continuation resumes at the Time of the
// last event returned and skips the events already returned at it.
//
// The events need not be prepared: HistoryRead completes each one
// (events.Event.Prepare, with the event type's ancestry from the address
// space, ReceiveTime defaulting to Time) before it applies the client's
// filter. An event whose EventType the address space does not know keeps
// only its standard fields and matches only BaseEventType.
//
// ReadEvents runs on the worker goroutine of the client's secure channel,
// whose later requests wait for it: it should answer within a few hundred
// milliseconds. ctx is cancelled when that channel closes. An error that
// is a ua.StatusCode (errors.As) answers that code for the node; any other
// error answers BadNoCommunication (the store is unreachable). It must be
// safe for concurrent use.
type EventHistory interface {
	ReadEvents(ctx context.Context, notifier *ua.NodeID, start, end time.Time, max uint32) ([]events.Event, error)
}

// EventCatalog is what HistoryRead needs of the address space to validate
// a filter and complete stored events: *addrspace.AddressSpace is one.
type EventCatalog interface {
	subscription.EventTypeChecker
	// EventTypes returns typ and its supertypes up to BaseEventType,
	// nearest first, or an error for a type that is not an event type.
	EventTypes(typ *ua.NodeID) ([]*ua.NodeID, error)
}

// historyConfig holds the event history provider.
type historyConfig struct {
	p atomic.Pointer[historySource]
	v atomic.Pointer[valueSource]
}

type historySource struct {
	events  EventHistory
	catalog EventCatalog
}

// historyCP is one HistoryRead continuation point: an event read's or a
// value read's.
type historyCP struct {
	ev  *eventQuery
	val *valueQuery
}

// SetEventHistory makes HistoryRead with ReadEventDetails read h, checking
// filters and completing events with catalog. A nil h (or catalog) removes
// the provider: HistoryRead then answers BadHistoryOperationUnsupported
// per node. It may be called at any time; a read in progress finishes with
// the provider it started with, and continuation points made with a
// removed provider are refused.
func (s *Server) SetEventHistory(h EventHistory, catalog EventCatalog) {
	if h == nil || catalog == nil {
		s.history.p.Store(nil)
		return
	}
	s.history.p.Store(&historySource{events: h, catalog: catalog})
}

// historyRequestOverhead is what a HistoryReadResponse takes besides its
// results' events: the header, the result structures and their
// continuation points, well rounded up.
const historyRequestOverhead = 8 << 10

// historyRead implements HistoryRead (Part 4 §5.10.3) for ReadEventDetails
// (Part 11 §6.5.2) and, in svc_historydata.go, for the values' details
// (ReadRawModifiedDetails, ReadAtTimeDetails, ReadProcessedDetails). Any
// other details answer BadHistoryOperationUnsupported for each node.
func (s *Server) historyRead(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.HistoryReadRequest](c)
	if err != nil {
		return nil, err
	}
	if vd, ok := valueDetailsOf(req.HistoryReadDetails); ok {
		return s.historyReadValues(c, req, vd)
	}
	if err := s.checkCount(len(req.NodesToRead), s.cfg.MaxNodesPerHistoryReadEvents); err != nil {
		return nil, err
	}
	details, ok := readEventDetails(req.HistoryReadDetails)
	if !ok {
		return nil, ua.StatusBadHistoryOperationInvalid
	}
	results := make([]*ua.HistoryReadResult, len(req.NodesToRead))
	src := s.history.p.Load()
	switch {
	case req.ReleaseContinuationPoints:
		for i, n := range req.NodesToRead {
			results[i] = s.releaseHistoryCP(c.sess, n)
		}
	case details == nil || src == nil:
		for i := range results {
			results[i] = historyResult(ua.StatusBadHistoryOperationUnsupported, nil, nil)
		}
	default:
		r := &historyReader{s: s, ctx: c.ch.ctx, sess: c.sess, src: src, details: details,
			budget: max(1<<10, (s.cfg.MaxResponseSize-historyRequestOverhead)/len(req.NodesToRead))}
		for i, n := range req.NodesToRead {
			results[i] = r.node(n)
		}
	}
	return &ua.HistoryReadResponse{Results: results, DiagnosticInfos: []*ua.DiagnosticInfo{}}, nil
}

// readEventDetails returns the ReadEventDetails in eo; nil with ok true
// for other (valid) history details, ok false when there are none.
func readEventDetails(eo *ua.ExtensionObject) (*ua.ReadEventDetails, bool) {
	if eo == nil || eo.Value == nil {
		return nil, false
	}
	switch v := eo.Value.(type) {
	case *ua.ReadEventDetails:
		return v, v != nil
	case ua.ReadEventDetails:
		return &v, true
	}
	return nil, true
}

func historyResult(code ua.StatusCode, cp []byte, evs []*ua.HistoryEventFieldList) *ua.HistoryReadResult {
	r := &ua.HistoryReadResult{StatusCode: code, ContinuationPoint: cp, HistoryData: ua.NewExtensionObject(nil)}
	if evs != nil {
		r.HistoryData = ua.NewExtensionObject(&ua.HistoryEvent{Events: evs})
	}
	return r
}

// releaseHistoryCP releases the continuation point of n: Good (also for
// a node without one), BadContinuationPointInvalid for an unknown point.
func (s *Server) releaseHistoryCP(sess *session, n *ua.HistoryReadValueID) *ua.HistoryReadResult {
	if n == nil || len(n.ContinuationPoint) == 0 {
		return historyResult(ua.StatusOK, nil, nil)
	}
	if sess.takeHistoryCP(n.ContinuationPoint) == nil {
		return historyResult(ua.StatusBadContinuationPointInvalid, nil, nil)
	}
	return historyResult(ua.StatusOK, nil, nil)
}

// eventQuery is where an event read stands: the state a continuation
// point keeps between pages.
type eventQuery struct {
	src    *historySource
	node   *ua.NodeID
	filter *subscription.CompiledEventFilter
	// start is where the next page begins (inclusive), end the domain's
	// other end as EventHistory takes them.
	start, end time.Time
	// skip is how many events at Time == start were already consumed
	// (returned or filtered out).
	skip int
	// per is the client's page size (NumValuesPerNode with both times
	// given), 0 for the server's.
	per int
	// bounded is set when NumValuesPerNode bounds the whole read (only one
	// of the times given, Part 11 §6.5.2.2: "the time range shall extend
	// to return this number"); left is how many events it may still get.
	bounded bool
	left    uint32
}

// historyReader reads the nodes of one HistoryRead request.
type historyReader struct {
	s       *Server
	ctx     context.Context
	sess    *session
	src     *historySource
	details *ua.ReadEventDetails
	budget  int // encoded bytes of events per node
	scratch []byte

	// The request's filter, the same for every node: parsed once, when
	// the first node needs it.
	parsed   bool
	filter   *subscription.CompiledEventFilter
	filterSt ua.StatusCode
	// types holds the ancestry of each event type met so far: a page's
	// events are mostly of one or two types.
	types map[events.NodeKey][]*ua.NodeID
}

// node answers one HistoryReadValueID: a first page, or the next page of
// its continuation point.
func (r *historyReader) node(n *ua.HistoryReadValueID) *ua.HistoryReadResult {
	if n == nil || n.NodeID == nil {
		return historyResult(ua.StatusBadNodeIDInvalid, nil, nil)
	}
	var q *eventQuery
	if len(n.ContinuationPoint) > 0 {
		if cp := r.sess.takeHistoryCP(n.ContinuationPoint); cp != nil {
			q = cp.ev
		}
		if q == nil || !events.SameNode(q.node, n.NodeID) || q.src != r.src {
			return historyResult(ua.StatusBadContinuationPointInvalid, nil, nil)
		}
	} else {
		var code ua.StatusCode
		if q, code = r.newQuery(n.NodeID); code != ua.StatusOK {
			return historyResult(code, nil, nil)
		}
	}
	evs, more, code := r.page(q)
	if code != ua.StatusOK {
		return historyResult(code, nil, nil)
	}
	var cp []byte
	if more {
		if cp = r.sess.addHistoryCP(&historyCP{ev: q}, r.s.cfg.MaxHistoryContinuationPoints); cp == nil {
			return historyResult(ua.StatusBadSessionClosed, nil, nil)
		}
	}
	if len(evs) == 0 && !more {
		return historyResult(ua.StatusGoodNoData, nil, evs)
	}
	return historyResult(ua.StatusOK, cp, evs)
}

// newQuery checks the node and the request's details and returns the
// query of a first page.
func (r *historyReader) newQuery(n *ua.NodeID) (*eventQuery, ua.StatusCode) {
	dv := r.s.nodes.Read(&ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDEventNotifier, DataEncoding: &ua.QualifiedName{}},
		ua.TimestampsToReturnNeither)
	switch {
	case dv == nil:
		return nil, ua.StatusBadInternalError
	case dv.Status == ua.StatusBadNodeIDUnknown:
		return nil, ua.StatusBadNodeIDUnknown
	case dv.Status != ua.StatusOK || dv.Value == nil:
		return nil, ua.StatusBadHistoryOperationUnsupported // no EventNotifier: not an object
	}
	if bits, ok := dv.Value.Value().(byte); !ok || bits&historyReadBit == 0 {
		return nil, ua.StatusBadHistoryOperationUnsupported
	}
	f, st := r.compiledFilter()
	if st != ua.StatusGood {
		return nil, ua.StatusBadEventFilterInvalid
	}
	start, end, st := eventDomain(r.details)
	if st != ua.StatusOK {
		return nil, st
	}
	q := &eventQuery{src: r.src, node: n, filter: f, start: start, end: end}
	if specified(r.details.StartTime) && specified(r.details.EndTime) {
		q.per = int(min(r.details.NumValuesPerNode, 1<<30))
	} else {
		q.bounded, q.left = true, r.details.NumValuesPerNode
	}
	return q, ua.StatusOK
}

// compiledFilter returns the request's filter, validated on first use.
func (r *historyReader) compiledFilter() (*subscription.CompiledEventFilter, ua.StatusCode) {
	if !r.parsed {
		r.parsed = true
		r.filter, _, r.filterSt = subscription.ParseEventFilter(r.details.Filter, r.src.catalog)
	}
	return r.filter, r.filterSt
}

// historyReadBit is the HistoryRead bit of EventNotifier (Part 3 §5.4).
const historyReadBit = 0x04

// eventDomain turns the client's StartTime, EndTime and NumValuesPerNode
// into EventHistory's start and end (Part 11 §6.5.2.2): at least two of
// the three must be given (BadInvalidTimestampArgument otherwise); with
// only StartTime the read goes forward to MaxTime, with only EndTime it
// goes backward from just before EndTime to MinTime.
func eventDomain(d *ua.ReadEventDetails) (start, end time.Time, st ua.StatusCode) {
	hasStart, hasEnd := specified(d.StartTime), specified(d.EndTime)
	switch {
	case hasStart && hasEnd:
		return d.StartTime, d.EndTime, ua.StatusOK
	case hasStart && d.NumValuesPerNode > 0:
		return d.StartTime, MaxTime, ua.StatusOK
	case hasEnd && d.NumValuesPerNode > 0:
		// Backward from EndTime, which the domain excludes (Part 11
		// §3.1.9); an OPC UA DateTime has 100 ns resolution.
		return d.EndTime.Add(-time.Nanosecond), MinTime, ua.StatusOK
	}
	return time.Time{}, time.Time{}, ua.StatusBadInvalidTimestampArgument
}

// specified reports whether t is a time the client gave: not the zero or
// minimum DateTime.
func specified(t time.Time) bool { return t.After(MinTime) }

// page reads the next page of q and advances q past it. more reports
// whether events may remain.
func (r *historyReader) page(q *eventQuery) (out []*ua.HistoryEventFieldList, more bool, code ua.StatusCode) {
	want := r.s.cfg.MaxHistoryEventsPerNode
	if q.per > 0 {
		want = min(want, q.per)
	}
	if q.bounded {
		want = min(want, int(q.left))
	}
	ask := want + q.skip + 1 // one more than needed: are there more?
	evs, err := q.src.events.ReadEvents(r.ctx, q.node, q.start, q.end, uint32(min(ask, 1<<31-1)))
	if err != nil {
		var sc ua.StatusCode
		if errors.As(err, &sc) {
			return nil, false, sc
		}
		r.s.log.Warn("uaserver: event history read failed", "node", q.node.String(), "err", err)
		return nil, false, ua.StatusBadNoCommunication
	}
	// The first skip events at q.start were consumed by earlier pages.
	from := 0
	for from < q.skip && from < len(evs) && evs[from].Time.Equal(q.start) {
		from++
	}
	out = []*ua.HistoryEventFieldList{}
	size, used := 0, from
	for used < len(evs) && len(out) < want {
		p := r.prepare(evs[used])
		if q.filter.Passes(p) {
			fields := q.filter.Fields(p)
			n := r.encodedSize(fields)
			if len(out) > 0 && size+n > r.budget {
				break // the rest goes on the next page
			}
			size += n
			out = append(out, &ua.HistoryEventFieldList{EventFields: fields})
		}
		used++
	}
	if q.bounded {
		q.left -= uint32(len(out))
	}
	more = used < len(evs) || len(evs) >= ask
	if q.bounded && q.left == 0 {
		more = false // the client has the NumValuesPerNode it asked for
	}
	if used > from {
		// Resume at the last consumed event's Time, skipping every event
		// at that Time consumed so far (those of earlier pages at q.start
		// are among evs[:used] too).
		last := evs[used-1].Time
		n := 0
		for _, ev := range evs[:used] {
			if ev.Time.Equal(last) {
				n++
			}
		}
		q.start, q.skip = last, n
	}
	return out, more, ua.StatusOK
}

// prepare completes a stored event for filtering: a prepared one (Types
// set) is used as is.
func (r *historyReader) prepare(ev events.Event) *events.Event {
	if len(ev.Types) > 0 && len(ev.Fields) > 0 {
		return &ev
	}
	at := ev.ReceiveTime
	if at.IsZero() {
		at = ev.Time
	}
	return ev.Prepare(at, r.eventTypes(ev.EventType))
}

// eventTypes returns typ's ancestry from the catalog, asked once per type
// and request; a type the catalog does not know is BaseEventType.
func (r *historyReader) eventTypes(typ *ua.NodeID) []*ua.NodeID {
	if typ == nil {
		return baseEventTypes
	}
	k := events.KeyOf(typ)
	if types, ok := r.types[k]; ok {
		return types
	}
	types, err := r.src.catalog.EventTypes(typ)
	if err != nil {
		types = baseEventTypes
	}
	if r.types == nil {
		r.types = make(map[events.NodeKey][]*ua.NodeID)
	}
	r.types[k] = types
	return types
}

var baseEventTypes = []*ua.NodeID{events.BaseEventType}

// encodedSize is the encoded size of one HistoryEventFieldList of fields.
func (r *historyReader) encodedSize(fields []*ua.Variant) int {
	n := 4
	for _, f := range fields {
		// AppendVariant falls back to Variant.Encode itself: an error
		// means the field cannot be encoded at all.
		b, err := uabin.AppendVariant(r.scratch[:0], f)
		if err != nil {
			n += 64
			continue
		}
		r.scratch = b
		n += len(b)
	}
	return n
}
