package uaserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/history/aggregate"
)

// fakeValues is an archive of nodeTemp: one value a second from histT0,
// value 1.5 × k, Bad at k = 10.
type fakeValues struct{ vs []HistoryValue }

func newFakeValues(n int) *fakeValues {
	f := &fakeValues{}
	for k := range n {
		st := ua.StatusOK
		if k == 10 {
			st = ua.StatusBadCommunicationError
		}
		f.vs = append(f.vs, HistoryValue{At: histT0.Add(time.Duration(k) * time.Second), Value: 1.5 * float64(k), Status: st})
	}
	return f
}

func (f *fakeValues) Historized(n *ua.NodeID) (HistorizedNode, bool) {
	if !n.Equal(nodeTemp) {
		return HistorizedNode{}, false
	}
	return HistorizedNode{DataType: id.Double, Start: f.vs[0].At, End: f.vs[len(f.vs)-1].At}, true
}

func (f *fakeValues) ReadValues(_ context.Context, n *ua.NodeID, from, to time.Time, fn func(HistoryValue) bool) error {
	for _, v := range f.vs {
		if !v.At.Before(from) && v.At.Before(to) && !fn(v) {
			return nil
		}
	}
	return nil
}

func valueReq(d any, release bool, nodes ...*ua.HistoryReadValueID) *ua.HistoryReadRequest {
	return &ua.HistoryReadRequest{HistoryReadDetails: ua.NewExtensionObject(d), TimestampsToReturn: ua.TimestampsToReturnSource,
		ReleaseContinuationPoints: release, NodesToRead: nodes}
}

func historyValues(t *testing.T, r *ua.HistoryReadResult) []*ua.DataValue {
	t.Helper()
	if r.HistoryData == nil || r.HistoryData.Value == nil {
		return nil
	}
	hd, ok := r.HistoryData.Value.(*ua.HistoryData)
	if !ok {
		t.Fatalf("HistoryData %T, want *ua.HistoryData", r.HistoryData.Value)
	}
	return hd.DataValues
}

// readValues follows continuation points and returns every value and the
// number of pieces.
func readValues(t *testing.T, rc *rawClient, d any) (out []*ua.DataValue, pieces int) {
	t.Helper()
	var cp []byte
	for {
		r := rc.mustDo(valueReq(d, false, histNode(nodeTemp, cp))).(*ua.HistoryReadResponse).Results[0]
		if r.StatusCode != ua.StatusOK && r.StatusCode != ua.StatusGoodNoData {
			t.Fatalf("piece %d: %v", pieces, r.StatusCode)
		}
		pieces++
		out = append(out, historyValues(t, r)...)
		if len(r.ContinuationPoint) == 0 {
			return out, pieces
		}
		cp = r.ContinuationPoint
		if pieces > 1000 {
			t.Fatal("no end of continuation points")
		}
	}
}

func ks(dvs []*ua.DataValue) []int {
	out := make([]int, len(dvs))
	for i, dv := range dvs {
		out[i] = int(dv.SourceTimestamp.Sub(histT0) / time.Second)
		if dv.Status == ua.StatusBadBoundNotFound {
			out[i] = -1000 - out[i]
		}
	}
	return out
}

func kseq(from, to int) []int {
	var out []int
	for _, v := range seq(from, to) {
		out = append(out, int(v))
	}
	return out
}

func TestHistoryReadRaw(t *testing.T) {
	ts := startServer(t, nil)
	ts.SetValueHistory(newFakeValues(250))
	rc := dialRaw(t, ts.url)
	rc.session(60000)
	at := func(k int) time.Time { return histT0.Add(time.Duration(k) * time.Second) }

	dvs, pieces := readValues(t, rc, &ua.ReadRawModifiedDetails{StartTime: at(0), EndTime: at(1000), NumValuesPerNode: 100})
	if pieces != 3 || !slices.Equal(ks(dvs), kseq(0, 249)) {
		t.Fatalf("forward: %d pieces, %v", pieces, ks(dvs))
	}
	if dvs[3].Value.Value() != 4.5 || dvs[10].Status != ua.StatusBadCommunicationError || !dvs[3].ServerTimestamp.IsZero() {
		t.Fatalf("values: %+v %+v", dvs[3], dvs[10])
	}
	dvs, pieces = readValues(t, rc, &ua.ReadRawModifiedDetails{StartTime: at(200), EndTime: at(50), NumValuesPerNode: 60})
	if pieces != 3 || !slices.Equal(ks(dvs), kseq(200, 51)) {
		t.Fatalf("backward (EndTime excluded): %d pieces, %v", pieces, ks(dvs))
	}
	dvs, _ = readValues(t, rc, &ua.ReadRawModifiedDetails{StartTime: at(5), NumValuesPerNode: 3})
	if !slices.Equal(ks(dvs), kseq(5, 7)) {
		t.Fatalf("only StartTime: %v", ks(dvs))
	}
	dvs, _ = readValues(t, rc, &ua.ReadRawModifiedDetails{EndTime: at(5), NumValuesPerNode: 3})
	if !slices.Equal(ks(dvs), kseq(4, 2)) {
		t.Fatalf("only EndTime: %v", ks(dvs))
	}
	dvs, _ = readValues(t, rc, &ua.ReadRawModifiedDetails{StartTime: at(7), EndTime: at(7)})
	if !slices.Equal(ks(dvs), []int{7}) {
		t.Fatalf("one instant: %v", ks(dvs))
	}
	// Bounds: the value before a start between values, the one at or after
	// the end; beyond the archive, BadBoundNotFound at the time asked.
	dvs, _ = readValues(t, rc, &ua.ReadRawModifiedDetails{StartTime: at(3).Add(time.Millisecond), EndTime: at(6), ReturnBounds: true})
	if !slices.Equal(ks(dvs), []int{3, 4, 5, 6}) {
		t.Fatalf("bounds: %v", ks(dvs))
	}
	dvs, _ = readValues(t, rc, &ua.ReadRawModifiedDetails{StartTime: at(248), EndTime: at(300), ReturnBounds: true})
	if !slices.Equal(ks(dvs), []int{248, 249, -1300}) {
		t.Fatalf("no end bound: %v", ks(dvs))
	}
	dvs, _ = readValues(t, rc, &ua.ReadRawModifiedDetails{StartTime: at(-5), EndTime: at(2), ReturnBounds: true})
	if !slices.Equal(ks(dvs), []int{-995, 0, 1, 2}) {
		t.Fatalf("no start bound: %v", ks(dvs))
	}
	for _, c := range []struct {
		name string
		d    *ua.ReadRawModifiedDetails
		node *ua.NodeID
		want ua.StatusCode
	}{
		{"modified values", &ua.ReadRawModifiedDetails{IsReadModified: true, StartTime: at(0), EndTime: at(5)}, nodeTemp, ua.StatusBadHistoryOperationUnsupported},
		{"one time and no count", &ua.ReadRawModifiedDetails{StartTime: at(0)}, nodeTemp, ua.StatusBadInvalidTimestampArgument},
		{"no time", &ua.ReadRawModifiedDetails{NumValuesPerNode: 5}, nodeTemp, ua.StatusBadInvalidTimestampArgument},
		{"not a Variable", &ua.ReadRawModifiedDetails{StartTime: at(0), EndTime: at(5)}, nodeObjects, ua.StatusBadHistoryOperationUnsupported},
		{"unknown node", &ua.ReadRawModifiedDetails{StartTime: at(0), EndTime: at(5)}, ua.NewStringNodeID(1, "Nope"), ua.StatusBadNodeIDUnknown},
	} {
		r := rc.mustDo(valueReq(c.d, false, histNode(c.node, nil))).(*ua.HistoryReadResponse).Results[0]
		if r.StatusCode != c.want {
			t.Errorf("%s: %v, want %v", c.name, r.StatusCode, c.want)
		}
	}
	req := valueReq(&ua.ReadRawModifiedDetails{StartTime: at(0), EndTime: at(5)}, false, histNode(nodeTemp, nil))
	req.TimestampsToReturn = ua.TimestampsToReturnNeither
	rc.wantStatus(req, ua.StatusBadTimestampsToReturnInvalid)
}

func TestHistoryReadAtTime(t *testing.T) {
	ts := startServer(t, nil)
	ts.SetValueHistory(newFakeValues(30))
	rc := dialRaw(t, ts.url)
	rc.session(60000)
	at := func(k float64) time.Time { return histT0.Add(time.Duration(k * float64(time.Second))) }
	d := &ua.ReadAtTimeDetails{ReqTimes: []time.Time{at(20), at(20.5), at(9.5), at(29.5), at(-1)}}
	r := rc.mustDo(valueReq(d, false, histNode(nodeTemp, nil))).(*ua.HistoryReadResponse).Results[0]
	dvs := historyValues(t, r)
	if r.StatusCode != ua.StatusOK || len(dvs) != 5 {
		t.Fatalf("%v %d values", r.StatusCode, len(dvs))
	}
	if dvs[0].Value.Value() != 30.0 || dvs[0].Status&0xffff0000 != 0 {
		t.Fatalf("raw hit: %+v", dvs[0])
	}
	if v := dvs[1].Value.Value().(float64); v != 30.75 || dvs[1].Status&0xffff0000 != 0 || dvs[1].Status&aggregate.HistorianInterpolated == 0 {
		t.Fatalf("interpolated: %v %v", v, dvs[1].Status)
	}
	if dvs[2].Status&0xffff0000 != ua.StatusUncertainDataSubNormal {
		t.Fatalf("across the Bad value at 10 s: %v", dvs[2].Status)
	}
	if dvs[3].Status&0xc0000000 == 0 || !dvs[3].SourceTimestamp.Equal(at(29.5)) {
		t.Fatalf("after the last value: %+v", dvs[3])
	}
	if dvs[4].Status&0xffff0000 != ua.StatusBadNoData {
		t.Fatalf("before the archive: %v", dvs[4].Status)
	}
	d = &ua.ReadAtTimeDetails{ReqTimes: make([]time.Time, DefaultMaxHistoryValuesPerNode+1)}
	if r := rc.mustDo(valueReq(d, false, histNode(nodeTemp, nil))).(*ua.HistoryReadResponse).Results[0]; r.StatusCode != ua.StatusBadTooManyOperations {
		t.Fatalf("too many times: %v", r.StatusCode)
	}
}

func TestHistoryReadProcessed(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxHistoryValuesPerNode = 4 })
	ts.SetValueHistory(newFakeValues(100))
	rc := dialRaw(t, ts.url)
	rc.session(60000)
	avg := ua.NewNumericNodeID(0, id.AggregateFunction_Average)
	defaults := &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true}
	d := &ua.ReadProcessedDetails{StartTime: histT0, EndTime: histT0.Add(100 * time.Second), ProcessingInterval: 10000, AggregateType: []*ua.NodeID{avg}, AggregateConfiguration: defaults}
	dvs, pieces := readValues(t, rc, d)
	if len(dvs) != 10 || pieces != 3 {
		t.Fatalf("%d intervals in %d pieces", len(dvs), pieces)
	}
	// Interval [0 s, 10 s): values 0 … 13.5, mean 6.75; [10 s, 20 s) skips
	// the Bad value at 10 s: mean of 16.5 … 28.5 = 22.5, Uncertain.
	if v := dvs[0].Value.Value().(float64); v != 6.75 || dvs[0].Status&0xffff0000 != 0 || !dvs[0].SourceTimestamp.Equal(histT0) {
		t.Fatalf("first interval: %v %v %v", v, dvs[0].Status, dvs[0].SourceTimestamp)
	}
	if v := dvs[1].Value.Value().(float64); v != 22.5 || dvs[1].Status&0xffff0000 != ua.StatusUncertainDataSubNormal {
		t.Fatalf("second interval: %v %v", v, dvs[1].Status)
	}
	cnt := ua.NewNumericNodeID(0, id.AggregateFunction_Count)
	dvs, _ = readValues(t, rc, &ua.ReadProcessedDetails{StartTime: histT0, EndTime: histT0.Add(20 * time.Second), ProcessingInterval: 10000, AggregateType: []*ua.NodeID{cnt}, AggregateConfiguration: defaults})
	if len(dvs) != 2 || dvs[0].Value.Value() != int32(10) || dvs[1].Value.Value() != int32(9) {
		t.Fatalf("counts %v %v", dvs[0].Value.Value(), dvs[1].Value.Value())
	}
	for _, c := range []struct {
		name string
		d    *ua.ReadProcessedDetails
		want ua.StatusCode
	}{
		{"unknown aggregate", &ua.ReadProcessedDetails{StartTime: histT0, EndTime: histT0.Add(time.Second), AggregateType: []*ua.NodeID{nodeTemp}, AggregateConfiguration: defaults}, ua.StatusBadAggregateNotSupported},
		{"1 ms over a year", &ua.ReadProcessedDetails{StartTime: histT0, EndTime: histT0.Add(366 * 24 * time.Hour), ProcessingInterval: 1, AggregateType: []*ua.NodeID{avg}, AggregateConfiguration: defaults}, ua.StatusBadTooManyOperations},
		{"a negative interval", &ua.ReadProcessedDetails{StartTime: histT0, EndTime: histT0.Add(time.Second), ProcessingInterval: -1, AggregateType: []*ua.NodeID{avg}, AggregateConfiguration: defaults}, ua.StatusBadInvalidArgument},
		{"no end", &ua.ReadProcessedDetails{StartTime: histT0, ProcessingInterval: 1000, AggregateType: []*ua.NodeID{avg}, AggregateConfiguration: defaults}, ua.StatusBadInvalidTimestampArgument},
		{"rejected configuration", &ua.ReadProcessedDetails{StartTime: histT0, EndTime: histT0.Add(time.Second), AggregateType: []*ua.NodeID{avg},
			AggregateConfiguration: &ua.AggregateConfiguration{PercentDataBad: 200, PercentDataGood: 100}}, ua.StatusBadAggregateConfigurationRejected},
	} {
		r := rc.mustDo(valueReq(c.d, false, histNode(nodeTemp, nil))).(*ua.HistoryReadResponse).Results[0]
		if r.StatusCode != c.want {
			t.Errorf("%s: %v, want %v", c.name, r.StatusCode, c.want)
		}
	}
	mismatch := &ua.ReadProcessedDetails{StartTime: histT0, EndTime: histT0.Add(time.Second), AggregateType: []*ua.NodeID{avg, avg}, AggregateConfiguration: defaults}
	rc.wantStatus(valueReq(mismatch, false, histNode(nodeTemp, nil)), ua.StatusBadAggregateListMismatch)
}

// TestHistoryReadProcessedRuns: a processed read computes its intervals
// over runs of raw values read once (run), several runs per piece when a
// run is smaller than the piece; every aggregate, forward and backward,
// equals aggregate.Compute over the whole archive interval by interval.
func TestHistoryReadProcessedRuns(t *testing.T) {
	defer func(v int) { processedRunValues = v }(processedRunValues)
	processedRunValues = 40
	f := &fakeValues{}
	for k := range 600 {
		st := ua.StatusOK
		switch {
		case k%37 == 5:
			st = ua.StatusBadCommunicationError
		case k%53 == 7:
			st = ua.StatusUncertainDataSubNormal
		}
		at := histT0.Add(time.Duration(k)*time.Second + time.Duration(k*k%7)*100*time.Millisecond)
		f.vs = append(f.vs, HistoryValue{At: at, Value: float64(k%17) * 1.25, Status: st})
	}
	ts := startServer(t, func(c *Config) { c.MaxHistoryValuesPerNode = 25 })
	ts.SetValueHistory(f)
	rc := dialRaw(t, ts.url)
	rc.session(60000)
	all := make([]aggregate.Sample, len(f.vs))
	for i, v := range f.vs {
		all[i] = aggregate.Sample{At: v.At, Value: v.Value, Status: v.Status}
	}
	info, _ := f.Historized(nodeTemp)
	cfg := aggregate.DefaultConfig()
	cfg.DataStart, cfg.DataEnd = info.Start, info.End
	from, to := histT0.Add(-5*time.Second), histT0.Add(610*time.Second)
	for _, k := range aggregate.Kinds() {
		for _, dir := range []struct {
			name     string
			from, to time.Time
		}{{"forward", from, to}, {"backward", to, from}} {
			d := &ua.ReadProcessedDetails{StartTime: dir.from, EndTime: dir.to, ProcessingInterval: 7000,
				AggregateType: []*ua.NodeID{k.NodeID()}, AggregateConfiguration: &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true}}
			got, _ := readValues(t, rc, d)
			ivs, err := aggregate.Intervals(dir.from, dir.to, 7*time.Second, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(ivs) {
				t.Fatalf("%v %s: %d values, %d intervals", k, dir.name, len(got), len(ivs))
			}
			for i, iv := range ivs {
				want := aggregate.Compute(k, cfg, iv, all)
				g := got[i]
				var v float64
				switch x := g.Value.Value().(type) {
				case float64:
					v = x
				case int32:
					v = float64(x)
				}
				if g.Status != want.Status || !g.SourceTimestamp.Equal(want.At) || (uint32(want.Status)>>30 != 2 && v != want.Value) {
					t.Fatalf("%v %s interval %d (%v): got %v %v at %v, want %v %v at %v", k, dir.name, i, iv.Start, v, g.Status, g.SourceTimestamp, want.Value, want.Status, want.At)
				}
			}
		}
	}
}
