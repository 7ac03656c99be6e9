package uaserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

var histT0 = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

// fakeHistory holds events in Time order and answers ReadEvents as
// EventHistory documents it. Events come in groups of three sharing a
// Time, so that pages end in the middle of equal times.
type fakeHistory struct {
	evs []events.Event
	err error

	mu    sync.Mutex
	asked []uint32 // max of each call
}

func newFakeHistory(n int, payload int) *fakeHistory {
	h := &fakeHistory{}
	for k := range n {
		ev := events.Event{
			EventID:    []byte(fmt.Sprintf("ev-%04d", k)),
			EventType:  events.BaseEventType,
			SourceNode: nodeTemp, SourceName: "Temp",
			Time:     histT0.Add(time.Duration(k/3) * time.Second),
			Message:  ua.NewLocalizedText(fmt.Sprintf("event %d%s", k, strings.Repeat("x", payload))),
			Severity: uint16(k + 1),
		}
		h.evs = append(h.evs, ev)
	}
	return h
}

func (h *fakeHistory) ReadEvents(_ context.Context, notifier *ua.NodeID, start, end time.Time, max uint32) ([]events.Event, error) {
	h.mu.Lock()
	h.asked = append(h.asked, max)
	h.mu.Unlock()
	if h.err != nil {
		return nil, h.err
	}
	if !notifier.Equal(nodeObjects) {
		return nil, errors.New("fake history: unknown notifier")
	}
	var out []events.Event
	switch {
	case start.Before(end):
		for _, ev := range h.evs {
			if !ev.Time.Before(start) && ev.Time.Before(end) {
				out = append(out, ev)
			}
		}
	case start.Equal(end):
		for _, ev := range h.evs {
			if ev.Time.Equal(start) {
				out = append(out, ev)
			}
		}
	default:
		for _, ev := range slices.Backward(h.evs) {
			if ev.Time.After(end) && !ev.Time.After(start) {
				out = append(out, ev)
			}
		}
	}
	if uint32(len(out)) > max {
		out = out[:max]
	}
	return out, nil
}

// fakeCatalog knows BaseEventType and its standard fields.
type fakeCatalog struct{}

func (fakeCatalog) CheckEventType(typ *ua.NodeID) ua.StatusCode {
	if typ != nil && typ.Namespace() == 0 && typ.IntID() == id.BaseEventType {
		return ua.StatusGood
	}
	return ua.StatusBadNodeIDUnknown
}

func (c fakeCatalog) CheckEventField(typ *ua.NodeID, path []*ua.QualifiedName) ua.StatusCode {
	if st := c.CheckEventType(typ); st != ua.StatusGood {
		return st
	}
	if len(path) == 1 && slices.Contains([]string{"EventId", "EventType", "SourceNode", "SourceName", "Time", "ReceiveTime", "Message", "Severity", "LocalTime"}, path[0].Name) {
		return ua.StatusGood
	}
	return ua.StatusBadBrowseNameInvalid
}

func (c fakeCatalog) EventTypes(typ *ua.NodeID) ([]*ua.NodeID, error) {
	if c.CheckEventType(typ) != ua.StatusGood {
		return nil, errors.New("fake catalog: not an event type")
	}
	return []*ua.NodeID{events.BaseEventType}, nil
}

var _ EventCatalog = fakeCatalog{}

func histSelect(names ...string) *ua.EventFilter {
	f := &ua.EventFilter{WhereClause: &ua.ContentFilter{}}
	for _, n := range names {
		f.SelectClauses = append(f.SelectClauses, &ua.SimpleAttributeOperand{
			TypeDefinitionID: events.BaseEventType, BrowsePath: []*ua.QualifiedName{{Name: n}}, AttributeID: ua.AttributeIDValue})
	}
	return f
}

func histReq(d *ua.ReadEventDetails, release bool, nodes ...*ua.HistoryReadValueID) *ua.HistoryReadRequest {
	return &ua.HistoryReadRequest{
		HistoryReadDetails:        ua.NewExtensionObject(d),
		TimestampsToReturn:        ua.TimestampsToReturnBoth,
		ReleaseContinuationPoints: release,
		NodesToRead:               nodes,
	}
}

func histNode(n *ua.NodeID, cp []byte) *ua.HistoryReadValueID {
	return &ua.HistoryReadValueID{NodeID: n, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}
}

// historyEvents returns the events of a result.
func historyEvents(t *testing.T, r *ua.HistoryReadResult) []*ua.HistoryEventFieldList {
	t.Helper()
	if r.HistoryData == nil || r.HistoryData.Value == nil {
		return nil
	}
	he, ok := r.HistoryData.Value.(*ua.HistoryEvent)
	if !ok {
		t.Fatalf("HistoryData %T, want *ua.HistoryEvent", r.HistoryData.Value)
	}
	return he.Events
}

// readAll pages through node with d, following continuation points, and
// returns every event's Severity in order and the number of pages.
func readAll(t *testing.T, rc *rawClient, d *ua.ReadEventDetails) (sev []uint16, pages int) {
	t.Helper()
	var cp []byte
	for {
		resp := rc.mustDo(histReq(d, false, histNode(nodeObjects, cp))).(*ua.HistoryReadResponse)
		r := resp.Results[0]
		if r.StatusCode != ua.StatusOK && r.StatusCode != ua.StatusGoodNoData {
			t.Fatalf("page %d: %v", pages, r.StatusCode)
		}
		pages++
		for _, e := range historyEvents(t, r) {
			sev = append(sev, e.EventFields[0].Value().(uint16))
		}
		if len(r.ContinuationPoint) == 0 {
			return sev, pages
		}
		cp = r.ContinuationPoint
		if pages > 1000 {
			t.Fatal("no end of continuation points")
		}
	}
}

func seq(from, to int) []uint16 { // from..to inclusive, either direction
	var out []uint16
	step := 1
	if to < from {
		step = -1
	}
	for k := from; ; k += step {
		out = append(out, uint16(k))
		if k == to {
			return out
		}
	}
}

// TestHistoryReadEventsPages: 250 stored events read with NumValuesPerNode
// 100 come in three pages through continuation points, forward and
// backward, with the selected fields; pages cut through events of equal
// Time without losing or repeating one.
func TestHistoryReadEventsPages(t *testing.T) {
	h := newFakeHistory(250, 0)
	ts := startServer(t, nil)
	ts.SetEventHistory(h, fakeCatalog{})
	rc := dialRaw(t, ts.url)
	rc.session(60000)

	end := histT0.Add(time.Hour)
	fwd := &ua.ReadEventDetails{NumValuesPerNode: 100, StartTime: histT0, EndTime: end, Filter: histSelect("Severity", "Message", "EventId", "LocalTime")}
	sev, pages := readAll(t, rc, fwd)
	if pages != 3 || !slices.Equal(sev, seq(1, 250)) {
		t.Fatalf("forward: %d pages, severities %v", pages, sev)
	}
	// The fields of one event, a missing one null.
	resp := rc.mustDo(histReq(fwd, false, histNode(nodeObjects, nil))).(*ua.HistoryReadResponse)
	f := historyEvents(t, resp.Results[0])[4].EventFields
	if f[1].Value().(*ua.LocalizedText).Text != "event 4" || !bytes.Equal(f[2].Value().([]byte), []byte("ev-0004")) || f[3].Value() != nil {
		t.Fatalf("fields %v %v %v", f[1].Value(), f[2].Value(), f[3].Value())
	}

	// EndTime before StartTime: newest first; the domain excludes EndTime
	// and includes StartTime.
	back := &ua.ReadEventDetails{NumValuesPerNode: 100, StartTime: h.evs[249].Time, EndTime: h.evs[2].Time, Filter: histSelect("Severity")}
	sev, pages = readAll(t, rc, back)
	if pages != 3 || !slices.Equal(sev, seq(250, 4)) {
		t.Fatalf("backward: %d pages, %d events %v…", pages, len(sev), sev[:min(5, len(sev))])
	}
	// Only EndTime and a count: backward from just before EndTime.
	sev, _ = readAll(t, rc, &ua.ReadEventDetails{NumValuesPerNode: 5, EndTime: h.evs[9].Time, Filter: histSelect("Severity")})
	if !slices.Equal(sev, seq(9, 5)) {
		t.Fatalf("only EndTime: %v", sev)
	}
	// Only StartTime and a count: forward from StartTime, inclusive.
	sev, _ = readAll(t, rc, &ua.ReadEventDetails{NumValuesPerNode: 4, StartTime: h.evs[3].Time, Filter: histSelect("Severity")})
	if !slices.Equal(sev, seq(4, 7)) {
		t.Fatalf("only StartTime: %v", sev)
	}
	// StartTime equal to EndTime: the events at that instant.
	sev, _ = readAll(t, rc, &ua.ReadEventDetails{StartTime: h.evs[6].Time, EndTime: h.evs[6].Time, Filter: histSelect("Severity")})
	if !slices.Equal(sev, seq(7, 9)) {
		t.Fatalf("one instant: %v", sev)
	}
	// Nothing in the domain: GoodNoData.
	resp = rc.mustDo(histReq(&ua.ReadEventDetails{StartTime: end, EndTime: end.Add(time.Hour), Filter: histSelect("Severity")},
		false, histNode(nodeObjects, nil))).(*ua.HistoryReadResponse)
	if r := resp.Results[0]; r.StatusCode != ua.StatusGoodNoData || len(r.ContinuationPoint) != 0 {
		t.Fatalf("empty domain: %v cp %x", r.StatusCode, r.ContinuationPoint)
	}
}

// TestHistoryReadUnboundedIsSliced: a client asking for everything
// (NumValuesPerNode 0) gets MaxHistoryEventsPerNode events per page, and
// a page is cut short when its events would pass the node's share of
// MaxResponseSize; the continuation points deliver the rest.
func TestHistoryReadUnboundedIsSliced(t *testing.T) {
	h := newFakeHistory(600, 0)
	ts := startServer(t, func(c *Config) { c.MaxHistoryEventsPerNode = 100 })
	ts.SetEventHistory(h, fakeCatalog{})
	rc := dialRaw(t, ts.url)
	rc.session(60000)
	all := &ua.ReadEventDetails{StartTime: histT0, EndTime: histT0.Add(time.Hour), Filter: histSelect("Severity")}
	sev, pages := readAll(t, rc, all)
	if pages != 6 || !slices.Equal(sev, seq(1, 600)) {
		t.Fatalf("%d pages, %d events", pages, len(sev))
	}
	for _, max := range h.asked {
		if max > 100+3+1 { // a page, the events already seen at its start time, one to see more
			t.Fatalf("the provider was asked for %d events", max)
		}
	}

	big := newFakeHistory(60, 4000) // ~4 kB per event
	ts2 := startServer(t, func(c *Config) { c.MaxResponseSize = 64 << 10 })
	ts2.SetEventHistory(big, fakeCatalog{})
	rc2 := dialRaw(t, ts2.url)
	rc2.session(60000)
	d := &ua.ReadEventDetails{StartTime: histT0, EndTime: histT0.Add(time.Hour), Filter: histSelect("Severity", "Message")}
	resp := rc2.mustDo(histReq(d, false, histNode(nodeObjects, nil))).(*ua.HistoryReadResponse)
	if n := len(historyEvents(t, resp.Results[0])); n == 0 || n >= 60 || len(resp.Results[0].ContinuationPoint) == 0 {
		t.Fatalf("first page of large events: %d events, cp %x", n, resp.Results[0].ContinuationPoint)
	}
	sev, _ = readAll(t, rc2, d)
	if !slices.Equal(sev, seq(1, 60)) {
		t.Fatalf("large events: %v", sev)
	}
}

// historyCPs returns the number of HistoryRead continuation points held.
func (s *session) historyCPs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hcps)
}

// TestHistoryContinuationPoints: a released, an unknown and a foreign
// continuation point are refused; a client that never releases its points
// holds at most MaxHistoryContinuationPoints of them, the oldest released.
func TestHistoryContinuationPoints(t *testing.T) {
	h := newFakeHistory(30, 0)
	ts := startServer(t, nil)
	ts.SetEventHistory(h, fakeCatalog{})
	rc := dialRaw(t, ts.url)
	rc.session(60000)
	d := &ua.ReadEventDetails{NumValuesPerNode: 1, StartTime: histT0, EndTime: histT0.Add(time.Hour), Filter: histSelect("Severity")}
	first := func() []byte {
		resp := rc.mustDo(histReq(d, false, histNode(nodeObjects, nil))).(*ua.HistoryReadResponse)
		if len(resp.Results[0].ContinuationPoint) == 0 {
			t.Fatal("no continuation point")
		}
		return resp.Results[0].ContinuationPoint
	}
	result := func(release bool, n *ua.HistoryReadValueID) ua.StatusCode {
		resp := rc.mustDo(histReq(d, release, n)).(*ua.HistoryReadResponse)
		return resp.Results[0].StatusCode
	}
	cp := first()
	if st := result(true, histNode(nodeObjects, cp)); st != ua.StatusOK {
		t.Fatalf("release: %v", st)
	}
	for name, n := range map[string]*ua.HistoryReadValueID{
		"released": histNode(nodeObjects, cp),
		"unknown":  histNode(nodeObjects, []byte("no such point")),
		"foreign":  histNode(nodeTemp, first()), // another node's point
	} {
		if st := result(false, n); st != ua.StatusBadContinuationPointInvalid {
			t.Errorf("%s point: %v", name, st)
		}
	}
	if st := result(true, histNode(nodeObjects, []byte("no such point"))); st != ua.StatusBadContinuationPointInvalid {
		t.Errorf("release of an unknown point: %v", st)
	}

	// 10,000 points asked for (100 requests of 100 nodes), none released.
	var points [][]byte
	for range 100 {
		nodes := make([]*ua.HistoryReadValueID, 100)
		for k := range nodes {
			nodes[k] = histNode(nodeObjects, nil)
		}
		resp := rc.mustDo(histReq(d, false, nodes...)).(*ua.HistoryReadResponse)
		for _, r := range resp.Results {
			points = append(points, r.ContinuationPoint)
		}
	}
	sess := ts.sessions.lookup(rc.token)
	if n := sess.historyCPs(); n != DefaultMaxHistoryContinuationPoints {
		t.Fatalf("the session holds %d continuation points, want %d", n, DefaultMaxHistoryContinuationPoints)
	}
	if st := result(false, histNode(nodeObjects, points[0])); st != ua.StatusBadContinuationPointInvalid {
		t.Fatalf("the oldest point: %v, want released", st)
	}
	if st := result(false, histNode(nodeObjects, points[len(points)-1])); st != ua.StatusOK {
		t.Fatalf("the newest point: %v", st)
	}
}

func TestHistoryReadRefusals(t *testing.T) {
	h := newFakeHistory(5, 0)
	ts := startServer(t, nil)
	rc := dialRaw(t, ts.url)
	rc.session(60000)
	good := &ua.ReadEventDetails{NumValuesPerNode: 10, StartTime: histT0, EndTime: histT0.Add(time.Hour), Filter: histSelect("Severity")}
	one := func(d any, n *ua.NodeID) ua.StatusCode {
		t.Helper()
		req := histReq(good, false, histNode(n, nil))
		req.HistoryReadDetails = ua.NewExtensionObject(d)
		return rc.mustDo(req).(*ua.HistoryReadResponse).Results[0].StatusCode
	}
	if st := one(good, nodeObjects); st != ua.StatusBadHistoryOperationUnsupported {
		t.Fatalf("no provider: %v", st)
	}
	ts.SetEventHistory(h, fakeCatalog{})
	for _, tc := range []struct {
		name string
		d    any
		n    *ua.NodeID
		want ua.StatusCode
	}{
		{"good", good, nodeObjects, ua.StatusOK},
		{"raw data", &ua.ReadRawModifiedDetails{StartTime: histT0, EndTime: histT0.Add(time.Hour)}, nodeObjects, ua.StatusBadHistoryOperationUnsupported},
		{"a variable", good, nodeTemp, ua.StatusBadHistoryOperationUnsupported},
		{"unknown node", good, ua.NewStringNodeID(1, "Ghost"), ua.StatusBadNodeIDUnknown},
		{"no select clause", &ua.ReadEventDetails{StartTime: histT0, EndTime: histT0.Add(time.Hour), Filter: &ua.EventFilter{WhereClause: &ua.ContentFilter{}}}, nodeObjects, ua.StatusBadEventFilterInvalid},
		{"unknown field", &ua.ReadEventDetails{StartTime: histT0, EndTime: histT0.Add(time.Hour), Filter: histSelect("Nope")}, nodeObjects, ua.StatusBadEventFilterInvalid},
		{"only StartTime", &ua.ReadEventDetails{StartTime: histT0, Filter: histSelect("Severity")}, nodeObjects, ua.StatusBadInvalidTimestampArgument},
		{"only a count", &ua.ReadEventDetails{NumValuesPerNode: 3, Filter: histSelect("Severity")}, nodeObjects, ua.StatusBadInvalidTimestampArgument},
	} {
		if st := one(tc.d, tc.n); st != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, st, tc.want)
		}
	}
	rc.wantStatus(&ua.HistoryReadRequest{HistoryReadDetails: ua.NewExtensionObject(nil), NodesToRead: []*ua.HistoryReadValueID{histNode(nodeObjects, nil)}},
		ua.StatusBadHistoryOperationInvalid)
	rc.wantStatus(histReq(good, false), ua.StatusBadNothingToDo)
	many := make([]*ua.HistoryReadValueID, DefaultMaxNodesPerHistoryReadEvents+1)
	for k := range many {
		many[k] = histNode(nodeObjects, nil)
	}
	rc.wantStatus(histReq(good, false, many...), ua.StatusBadTooManyOperations)

	h.err = ua.StatusBadTimeout
	if st := one(good, nodeObjects); st != ua.StatusBadTimeout {
		t.Errorf("provider status error: %v", st)
	}
	h.err = errors.New("database unreachable")
	if st := one(good, nodeObjects); st != ua.StatusBadNoCommunication {
		t.Errorf("provider error: %v", st)
	}
	ts.SetEventHistory(nil, nil)
	if st := one(good, nodeObjects); st != ua.StatusBadHistoryOperationUnsupported {
		t.Errorf("provider removed: %v", st)
	}
}
