package history_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/histfill"
	"github.com/otopcua/otopcua/tests/procs"
)

// hostileValues is the history of the hostile reads: 2,000,000 values;
// 500,000 under the race detector, which makes filling and reading them
// four to six times slower, to keep the test well under a minute (the
// bounds are the same: 50 responses instead of 200).
var hostileValues = map[bool]int{false: 2000000, true: 500000}[raceBuild]

// The server's limits of docs/history.md "Limits" (the defaults).
const (
	limitValuesPerNode  = 10000
	limitNodesPerRead   = 100
	limitCPsPerSession  = 10
	limitIntervals      = 1000000
	hostileEvery        = 100 * time.Millisecond
	subscriptionMaxGap  = 300 * time.Millisecond
	hostileCallDeadline = 10 * time.Second
)

// TestHostileHistoryReads: a real node holding 2,000,000 values of one tag
// (500,000 under the race detector)
// answers hostile HistoryReads within their bounds — a raw read of all of
// them (10,000 values a response at most, continuation points followed to
// the end), 100 nodes at once and 101 refused, 2,000 continuation points
// in one session of which only the newest 10 stay valid, a processed read
// with a 1 ms interval over a year refused and one over the whole history
// answered in slices, 10,001 ReadAtTime times refused — while another
// client's 100 ms subscription on the same node keeps receiving its
// notifications no more than 300 ms apart.
func TestHostileHistoryReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history")
	from := time.Now().Add(-time.Duration(hostileValues)*hostileEvery - time.Hour).Truncate(time.Second)
	to := from.Add(time.Duration(hostileValues) * hostileEvery)
	began := time.Now()
	if err := histfill.Fill(dir, "sim/Big", from, hostileEvery, hostileValues, histfill.Analog); err != nil {
		t.Fatal(err)
	}
	t.Logf("store filled with %d values in %v", hostileValues, time.Since(began).Round(time.Millisecond))

	cfg := singleNode(t)
	cfg["History"] = map[string]any{"Path": dir}
	n := procs.Start(t, "h", cfg)
	n.WaitReady(30 * time.Second)
	procs.Deploy(t, cfg, fmt.Sprintf(`{"clusterId": %q, "devices": [{"name": "sim", "driver": "simulated", "pollInterval": "50ms",
  "tags": [{"name": "Big", "type": "float64", "signal": "constant", "min": 50, "historize": true},
           {"name": "Ramp", "type": "float64", "signal": "ramp", "period": "10s", "min": 0, "max": 100}]}]}`, clusterID))

	c := connect(t, n)
	ns := c.namespace()
	big, ramp := ua.NewStringNodeID(ns, "sim/Big"), ua.NewStringNodeID(ns, "sim/Ramp")
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		if _, st := c.history(big, to.Add(-time.Second), to); st != ua.StatusOK {
			return fmt.Errorf("the filled history: %v", st)
		}
		return nil
	})

	sub := subscribe(t, n.Endpoint(), ramp)
	sub.waitFlowing(t)
	hostileFrom := time.Now()

	h := &hostile{t: t, c: c}
	for _, step := range []func(*ua.NodeID, time.Time, time.Time){h.rawAll, h.manyNodes, h.continuationPoints, h.processed, h.atTime} {
		began := time.Now()
		step(big, from, to)
		t.Logf("… in %v", time.Since(began).Round(time.Millisecond))
	}
	hostileTo := time.Now()

	gaps, count := sub.gaps(hostileFrom, hostileTo)
	worst := slices.Max(gaps)
	t.Logf("hostile reads for %v (slowest call %v); the subscription got %d notifications meanwhile, longest gap %v",
		hostileTo.Sub(hostileFrom).Round(time.Millisecond), h.slowest.Round(time.Millisecond), count, worst.Round(time.Millisecond))
	if worst > subscriptionMaxGap {
		t.Fatalf("the subscription's notifications came up to %v apart during the hostile reads (want ≤ %v)", worst, subscriptionMaxGap)
	}
	if want := int(hostileTo.Sub(hostileFrom)/(100*time.Millisecond)) * 8 / 10; count < want {
		t.Fatalf("%d notifications in %v, want at least %d", count, hostileTo.Sub(hostileFrom), want)
	}
}

// hostile runs the hostile reads on one session and times each call.
type hostile struct {
	t       *testing.T
	c       *session
	slowest time.Duration
}

// call sends req and fails the test when no answer comes within
// hostileCallDeadline; it returns the response or the service's refusal.
func (h *hostile) call(req ua.Request) (ua.Response, error) {
	h.t.Helper()
	began := time.Now()
	resp, err := h.c.ch.Call(context.Background(), req, h.c.s.Auth(), hostileCallDeadline)
	h.slowest = max(h.slowest, time.Since(began))
	var code ua.StatusCode
	if err != nil && !errors.As(err, &code) {
		h.t.Fatalf("%T: %v", req, err)
	}
	return resp, err
}

func rawRequest(from, to time.Time, per uint32, nodes ...*ua.HistoryReadValueID) *ua.HistoryReadRequest {
	return &ua.HistoryReadRequest{TimestampsToReturn: ua.TimestampsToReturnSource,
		HistoryReadDetails: ua.NewExtensionObject(&ua.ReadRawModifiedDetails{StartTime: from, EndTime: to, NumValuesPerNode: per}),
		NodesToRead:        nodes}
}

func valueID(n *ua.NodeID, cp []byte) *ua.HistoryReadValueID {
	return &ua.HistoryReadValueID{NodeID: n, DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}
}

func dataValues(r *ua.HistoryReadResult) []*ua.DataValue {
	if hd, ok := r.HistoryData.Value.(*ua.HistoryData); ok {
		return hd.DataValues
	}
	return nil
}

// rawAll reads every value, asking for all of them at once (0 per node):
// pieces of at most limitValuesPerNode, continuation points to the end,
// every value once in time order.
func (h *hostile) rawAll(n *ua.NodeID, from, to time.Time) {
	h.t.Helper()
	var cp []byte
	total, calls := 0, 0
	var last time.Time
	for {
		resp, err := h.call(rawRequest(from, to, 0, valueID(n, cp)))
		if err != nil {
			h.t.Fatalf("raw read of everything, call %d: %v", calls, err)
		}
		calls++
		r := resp.(*ua.HistoryReadResponse).Results[0]
		dvs := dataValues(r)
		if r.StatusCode != ua.StatusOK || len(dvs) > limitValuesPerNode {
			h.t.Fatalf("raw read of everything, call %d: %v with %d values", calls, r.StatusCode, len(dvs))
		}
		for _, dv := range dvs {
			if !dv.SourceTimestamp.After(last) {
				h.t.Fatalf("value %d at %v after one at %v", total, dv.SourceTimestamp, last)
			}
			last = dv.SourceTimestamp
			total++
		}
		if cp = r.ContinuationPoint; len(cp) == 0 {
			break
		}
	}
	if total != hostileValues {
		h.t.Fatalf("raw read of everything: %d values in %d calls, want %d", total, calls, hostileValues)
	}
	h.t.Logf("raw read of %d values in %d calls", total, calls)
}

// manyNodes reads the whole history of the tag for 100 nodes at once
// (answered, each with a share of the response) and for 101 (refused).
func (h *hostile) manyNodes(n *ua.NodeID, from, to time.Time) {
	h.t.Helper()
	ids := make([]*ua.HistoryReadValueID, limitNodesPerRead+1)
	for i := range ids {
		ids[i] = valueID(n, nil)
	}
	if _, err := h.call(rawRequest(from, to, 0, ids...)); !errors.Is(err, ua.StatusBadTooManyOperations) {
		h.t.Fatalf("%d nodes in one HistoryRead: %v, want BadTooManyOperations", len(ids), err)
	}
	resp, err := h.call(rawRequest(from, to, 0, ids[:limitNodesPerRead]...))
	if err != nil {
		h.t.Fatalf("%d nodes in one HistoryRead: %v", limitNodesPerRead, err)
	}
	values := 0
	var release []*ua.HistoryReadValueID
	for i, r := range resp.(*ua.HistoryReadResponse).Results {
		if r.StatusCode != ua.StatusOK || len(r.ContinuationPoint) == 0 || len(dataValues(r)) == 0 || len(dataValues(r)) > limitValuesPerNode {
			h.t.Fatalf("node %d of %d: %v, %d values, continuation point %x", i, limitNodesPerRead, r.StatusCode, len(dataValues(r)), r.ContinuationPoint)
		}
		values += len(dataValues(r))
		release = append(release, valueID(n, r.ContinuationPoint))
	}
	h.release(release)
	h.t.Logf("%d nodes at once: %d values in the response", limitNodesPerRead, values)
}

// continuationPoints opens 2,000 continuation points in one session (20
// requests of 100 nodes, one value each): only the newest
// limitCPsPerSession stay valid, every older one answers
// BadContinuationPointInvalid.
func (h *hostile) continuationPoints(n *ua.NodeID, from, to time.Time) {
	h.t.Helper()
	var cps [][]byte
	for range 20 {
		ids := make([]*ua.HistoryReadValueID, limitNodesPerRead)
		for i := range ids {
			ids[i] = valueID(n, nil)
		}
		resp, err := h.call(rawRequest(from, to, 1, ids...))
		if err != nil {
			h.t.Fatal(err)
		}
		for _, r := range resp.(*ua.HistoryReadResponse).Results {
			if r.StatusCode != ua.StatusOK || len(r.ContinuationPoint) == 0 {
				h.t.Fatalf("continuation point %d: %v", len(cps), r.StatusCode)
			}
			cps = append(cps, r.ContinuationPoint)
		}
	}
	var valid []int
	for at := 0; at < len(cps); at += limitNodesPerRead {
		ids := make([]*ua.HistoryReadValueID, limitNodesPerRead)
		for i := range ids {
			ids[i] = valueID(n, cps[at+i])
		}
		resp, err := h.call(rawRequest(from, to, 1, ids...))
		if err != nil {
			h.t.Fatal(err)
		}
		for i, r := range resp.(*ua.HistoryReadResponse).Results {
			switch r.StatusCode {
			case ua.StatusOK:
				valid = append(valid, at+i)
				h.release([]*ua.HistoryReadValueID{valueID(n, r.ContinuationPoint)})
			case ua.StatusBadContinuationPointInvalid:
			default:
				h.t.Fatalf("continuation point %d: %v", at+i, r.StatusCode)
			}
		}
	}
	want := make([]int, limitCPsPerSession)
	for i := range want {
		want[i] = len(cps) - limitCPsPerSession + i
	}
	if !slices.Equal(valid, want) {
		h.t.Fatalf("of %d continuation points these were still valid: %v, want the newest %d", len(cps), valid, limitCPsPerSession)
	}
	h.t.Logf("%d continuation points opened in one session: the newest %d valid, the others BadContinuationPointInvalid", len(cps), len(valid))
}

// release releases continuation points.
func (h *hostile) release(ids []*ua.HistoryReadValueID) {
	h.t.Helper()
	req := rawRequest(time.Time{}, time.Time{}, 0, ids...)
	req.ReleaseContinuationPoints = true
	if _, err := h.call(req); err != nil {
		h.t.Fatalf("release: %v", err)
	}
}

func processedRequest(from, to time.Time, interval time.Duration, n *ua.NodeID, cp []byte) *ua.HistoryReadRequest {
	return &ua.HistoryReadRequest{TimestampsToReturn: ua.TimestampsToReturnSource,
		HistoryReadDetails: ua.NewExtensionObject(&ua.ReadProcessedDetails{StartTime: from, EndTime: to,
			ProcessingInterval:     float64(interval) / float64(time.Millisecond),
			AggregateType:          []*ua.NodeID{ua.NewNumericNodeID(0, id.AggregateFunction_Average)},
			AggregateConfiguration: &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true}}),
		NodesToRead: []*ua.HistoryReadValueID{valueID(n, cp)}}
}

// processed: a 1 ms interval over a year is refused for the node; an
// Average per second over the whole history (200,000 intervals, within
// the limit) comes in slices with continuation points, one Good value per
// interval.
func (h *hostile) processed(n *ua.NodeID, from, to time.Time) {
	h.t.Helper()
	resp, err := h.call(processedRequest(to.Add(-366*24*time.Hour), to, time.Millisecond, n, nil))
	if err != nil {
		h.t.Fatal(err)
	}
	if st := resp.(*ua.HistoryReadResponse).Results[0].StatusCode; st != ua.StatusBadTooManyOperations {
		h.t.Fatalf("a 1 ms interval over a year: %v, want BadTooManyOperations", st)
	}
	width := time.Second
	want := int(to.Sub(from) / width)
	if want > limitIntervals {
		panic("processed: the read is over the limit")
	}
	var cp []byte
	got, calls := 0, 0
	for {
		resp, err := h.call(processedRequest(from, to, width, n, cp))
		if err != nil {
			h.t.Fatal(err)
		}
		calls++
		r := resp.(*ua.HistoryReadResponse).Results[0]
		if r.StatusCode != ua.StatusOK {
			h.t.Fatalf("Average per second, call %d: %v", calls, r.StatusCode)
		}
		for _, dv := range dataValues(r) {
			if dv.Status>>30 != 0 {
				h.t.Fatalf("Average per second %d at %v: %v", got, dv.SourceTimestamp, dv.Status)
			}
			got++
		}
		if cp = r.ContinuationPoint; len(cp) == 0 {
			break
		}
	}
	if got != want {
		h.t.Fatalf("Average per second over %v: %d values, want %d", to.Sub(from), got, want)
	}
	h.t.Logf("1 ms over a year refused; Average per second over %v: %d values in %d calls", to.Sub(from), got, calls)
}

// atTime: 10,001 times in one ReadAtTime are refused for the node.
func (h *hostile) atTime(n *ua.NodeID, from, _ time.Time) {
	h.t.Helper()
	times := make([]time.Time, limitValuesPerNode+1)
	for i := range times {
		times[i] = from.Add(time.Duration(i) * time.Second)
	}
	resp, err := h.call(&ua.HistoryReadRequest{TimestampsToReturn: ua.TimestampsToReturnSource,
		HistoryReadDetails: ua.NewExtensionObject(&ua.ReadAtTimeDetails{ReqTimes: times}),
		NodesToRead:        []*ua.HistoryReadValueID{valueID(n, nil)}})
	if err != nil {
		h.t.Fatal(err)
	}
	if st := resp.(*ua.HistoryReadResponse).Results[0].StatusCode; st != ua.StatusBadTooManyOperations {
		h.t.Fatalf("ReadAtTime of %d times: %v, want BadTooManyOperations", len(times), st)
	}
}

// watcher is a client's subscription to one changing Variable, with the
// time each data change notification arrived.
type watcher struct {
	mu      sync.Mutex
	arrived []time.Time
}

// subscribe opens an independent session (gopcua's client) on endpoint
// with a 100 ms subscription to node (sampling 100 ms).
func subscribe(t *testing.T, endpoint string, node *ua.NodeID) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cl, err := gopcua.NewClient(endpoint, gopcua.SecurityMode(ua.MessageSecurityModeNone), gopcua.AutoReconnect(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close(context.Background()) })
	notes := make(chan *gopcua.PublishNotificationData, 256)
	sub, err := cl.Subscribe(ctx, &gopcua.SubscriptionParameters{Interval: 100 * time.Millisecond}, notes)
	if err != nil {
		t.Fatal(err)
	}
	req := gopcua.NewMonitoredItemCreateRequestWithDefaults(node, ua.AttributeIDValue, 1)
	req.RequestedParameters.SamplingInterval = 100
	if res, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, req); err != nil || res.Results[0].StatusCode != ua.StatusOK {
		t.Fatalf("monitor %v: %v %v", node, err, res)
	}
	w := &watcher{}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case msg := <-notes:
				if _, ok := msg.Value.(*ua.DataChangeNotification); ok && msg.Error == nil {
					now := time.Now()
					w.mu.Lock()
					w.arrived = append(w.arrived, now)
					w.mu.Unlock()
				}
			}
		}
	}()
	return w
}

// waitFlowing waits until ten notifications have arrived.
func (w *watcher) waitFlowing(t *testing.T) {
	t.Helper()
	procs.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.arrived) < 10 {
			return fmt.Errorf("%d notifications", len(w.arrived))
		}
		return nil
	})
}

// gaps are the times between consecutive notifications that arrived from
// the last one before from up to the first one after to, and how many
// arrived between from and to.
func (w *watcher) gaps(from, to time.Time) ([]time.Duration, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var gaps []time.Duration
	count := 0
	for i := 1; i < len(w.arrived); i++ {
		a, b := w.arrived[i-1], w.arrived[i]
		if b.Before(from) || a.After(to) {
			continue
		}
		gaps = append(gaps, b.Sub(a))
		if !b.After(to) {
			count++
		}
	}
	if last := w.arrived[len(w.arrived)-1]; last.Before(to) {
		gaps = append(gaps, to.Sub(last)) // silence up to the end counts too
	}
	return gaps, count
}
