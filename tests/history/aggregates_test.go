package history_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/nodescript"
	"github.com/otopcua/otopcua/tests/procs"
)

// The DataValue information bits of a StatusCode (Part 4 §7.39 StatusCode,
// Part 13 §5.3.3), written out here rather than taken from the product.
const (
	infoDataValue  ua.StatusCode = 0x0400
	locRaw         ua.StatusCode = 0x0
	locCalculated  ua.StatusCode = 0x1
	bitPartial     ua.StatusCode = 0x4
	bitMultiValue  ua.StatusCode = 0x10
	aggInterval                  = time.Second
	aggRange                     = 7500 * time.Millisecond // 7 whole intervals and a short (Partial) last one
	nodeRawPerCall               = 10
)

// rawSample is one raw value of the counter as a client read it.
type rawSample struct {
	at     time.Time
	value  float64
	status ua.StatusCode
}

// aggResult is one processed value: its time, value and full status code.
type aggResult struct {
	at     time.Time
	value  float64
	status ua.StatusCode
}

// TestAggregatesOfARealDevice: node-opcua, an independent client, reads a
// real Modbus TCP device's counter from a real node's history — raw, with
// continuation points, and the Average, Minimum, Maximum and Count per
// second — and every aggregate equals what this test computes by brute
// force from the raw values, following Part 13 with the default
// AggregateConfiguration: the intervals, the short last one (Partial), an
// interval holding the Bad sample the device's failure left, and one inside
// the failure with no value at all.
func TestAggregatesOfARealDevice(t *testing.T) {
	dev, devAddr := startDevice(t, true)

	cfg := singleNode(t)
	n := procs.Start(t, "h", cfg)
	n.WaitReady(30 * time.Second)
	procs.Deploy(t, cfg, deployment(devAddr))

	c := connect(t, n)
	counter := ua.NewStringNodeID(c.namespace(), "press1/FastCounter")
	t0 := time.Now().Add(-time.Minute)
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		dvs, st := c.history(counter, t0, time.Now())
		if st != ua.StatusOK || len(dvs) < 30 {
			return fmt.Errorf("%d values, %v", len(dvs), st)
		}
		return nil
	})
	// The device fails for 2.2 s: every poll answers Server Device
	// Failure, the tag turns BadDeviceFailure, and the recorder stores
	// that change of status once.
	dev.SetFailing(true)
	failedAt := time.Now()
	time.Sleep(2200 * time.Millisecond) // the length of the failure is the test's input, not a wait for a condition
	dev.SetFailing(false)
	var raw []rawSample
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		dvs, st := c.history(counter, t0, time.Now())
		if st != ua.StatusOK {
			return fmt.Errorf("raw read: %v", st)
		}
		raw = raw[:0]
		for _, dv := range dvs {
			raw = append(raw, rawSample{at: dv.SourceTimestamp, value: float64(dv.Value.Value().(uint16)), status: dv.Status})
		}
		if last := raw[len(raw)-1].at; last.Before(failedAt.Add(6 * time.Second)) {
			return fmt.Errorf("values up to %v", last)
		}
		return nil
	})
	bad := -1
	for i, s := range raw {
		if s.status != ua.StatusOK {
			if s.status != ua.StatusBadDeviceFailure || bad >= 0 {
				t.Fatalf("raw value %d: %v (an earlier Bad one at %d)", i, s.status, bad)
			}
			bad = i
		}
	}
	if bad < 0 || raw[bad].at.Before(failedAt.Add(-time.Second)) || raw[bad].at.After(failedAt.Add(time.Second)) {
		t.Fatalf("no Bad value recorded when the device failed at %v: %v", failedAt, bad)
	}

	// The range starts 2.3 s before the Bad value, on a millisecond
	// (node-opcua's times have a millisecond's resolution), so the Bad
	// value lies in the third interval and the fourth or fifth lies inside
	// the failure.
	from := raw[bad].at.Add(-2300 * time.Millisecond).Truncate(time.Millisecond)
	to := from.Add(aggRange)
	var inRange []rawSample
	for _, s := range raw {
		if !s.at.Before(from) && s.at.Before(to) {
			inRange = append(inRange, s)
		}
	}
	lines := nodescript.Run(t, "history_aggregates.mjs", n.Endpoint(), counter.String(),
		from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano),
		fmt.Sprint(aggInterval.Milliseconds()), fmt.Sprint(nodeRawPerCall))
	nodeRaw, calls, nodeAggs := parseNodeHistory(t, lines)

	// Raw: node-opcua's values, statuses and times are Go's.
	if len(nodeRaw) != len(inRange) {
		t.Fatalf("node-opcua read %d raw values, Go %d", len(nodeRaw), len(inRange))
	}
	for i, s := range inRange {
		g := nodeRaw[i]
		if g.value != s.value || g.status != s.status || g.at.Sub(s.at).Abs() >= time.Millisecond {
			t.Fatalf("raw value %d: node-opcua %v %v at %v, Go %v %v at %v", i, g.value, g.status, g.at, s.value, s.status, s.at)
		}
	}
	if want := (len(inRange) + nodeRawPerCall - 1) / nodeRawPerCall; calls < want {
		t.Fatalf("%d raw values in %d calls of %d: continuation points not followed", len(inRange), calls, nodeRawPerCall)
	}

	// Aggregates: node-opcua's are the brute force's, interval by interval.
	sawBadInterval, sawEmptyInterval := false, false
	for _, name := range []string{"Average", "Minimum", "Maximum", "Count"} {
		want := bruteForce(name, raw, from, to, aggInterval)
		got := nodeAggs[name]
		if len(got) != len(want) {
			t.Fatalf("%s: node-opcua got %d intervals, brute force %d: %+v", name, len(got), len(want), got)
		}
		for i, w := range want {
			g := got[i]
			sameValue := w.status>>30 >= 2 || math.Abs(g.value-w.value) <= 1e-9*math.Max(1, math.Abs(w.value))
			if g.status != w.status || !sameValue || g.at.Sub(w.at).Abs() >= time.Millisecond {
				t.Fatalf("%s interval %d at %v: node-opcua %v (%#x), brute force %v (%#x) at %v",
					name, i, g.at, g.value, uint32(g.status), w.value, uint32(w.status), w.at)
			}
		}
		t.Logf("%s: %s", name, describe(want))
	}
	for i := range 8 {
		lo, hi := from.Add(time.Duration(i)*aggInterval), from.Add(time.Duration(i+1)*aggInterval)
		if hi.After(to) {
			hi = to
		}
		n, bads := 0, 0
		for _, s := range raw {
			if !s.at.Before(lo) && s.at.Before(hi) {
				n++
				if s.status>>30 != 0 {
					bads++
				}
			}
		}
		sawBadInterval = sawBadInterval || (bads > 0 && n > bads)
		sawEmptyInterval = sawEmptyInterval || n == 0
	}
	if !sawBadInterval || !sawEmptyInterval {
		t.Fatalf("the range holds no interval with a Bad value among Good ones (%v) or no empty interval (%v)", sawBadInterval, sawEmptyInterval)
	}
	t.Logf("node-opcua: %d raw values in %d calls; %d intervals of each aggregate equal the brute force", len(inRange), calls, len(nodeAggs["Count"]))
}

// parseNodeHistory decodes history_aggregates.mjs's lines.
func parseNodeHistory(t *testing.T, lines [][]byte) (raw []rawSample, calls int, aggs map[string][]aggResult) {
	t.Helper()
	aggs = map[string][]aggResult{}
	done := false
	for _, l := range lines {
		if len(l) == 0 || l[0] != '{' {
			continue // node-opcua's own warnings
		}
		var o struct {
			Event, Aggregate, Message, At string
			Code                          uint32
			Value                         *float64
			Calls                         int
		}
		if err := json.Unmarshal(l, &o); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		var at time.Time
		if o.At != "" {
			var err error
			if at, err = time.Parse(time.RFC3339Nano, o.At); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
		}
		v := math.NaN()
		if o.Value != nil {
			v = *o.Value
		}
		switch o.Event {
		case "raw":
			raw = append(raw, rawSample{at: at, value: v, status: ua.StatusCode(o.Code)})
		case "rawDone":
			calls = o.Calls
		case "aggregate":
			aggs[o.Aggregate] = append(aggs[o.Aggregate], aggResult{at: at, value: v, status: ua.StatusCode(o.Code)})
		case "aggregateDone":
			if o.Code>>30 >= 2 {
				t.Fatalf("node-opcua %s: %#x", o.Aggregate, o.Code)
			}
		case "error":
			t.Fatalf("node-opcua: %s", o.Message)
		case "done":
			done = true
		}
	}
	if !done {
		t.Fatalf("node-opcua did not finish:\n%s", lines)
	}
	return raw, calls, aggs
}

// bruteForce computes aggregate name over [from, to) in intervals of
// width each from the raw values alone, as Part 13 (1.05) states it for
// the default AggregateConfiguration (TreatUncertainAsBad, PercentDataGood
// and PercentDataBad 100) and an archive complete from before from to
// after to:
//
//   - the intervals start at from, one every width; the last one ends at
//     to and is shorter when the range is not a multiple of width (§5.4.2.2
//     Table 12), and each holds its start and excludes its end;
//   - Average (§5.4.3.5) and Count (§5.4.3.21) use the PercentValues status
//     (§5.4.3.2.1): Good when every value inside is Good, Bad_NoData when
//     every value is Bad, else Uncertain_DataSubNormal; Average of no Good
//     value is Bad_NoData, Count of an empty interval is 0, Good; Average
//     never sets Partial, Count does on the short interval;
//   - Minimum and Maximum (§5.4.3.10–11) take the extreme of the Good
//     values; Uncertain_DataSubNormal when a Bad value lies inside,
//     Bad_NoData without a Good value; Raw when the extreme lies on the
//     interval's start (else Calculated), MultiValue when several values
//     hold it, Partial on the short interval.
//
// Every result is reported at its interval's start.
func bruteForce(name string, raw []rawSample, from, to time.Time, width time.Duration) []aggResult {
	var out []aggResult
	for lo := from; lo.Before(to); lo = lo.Add(width) {
		hi := lo.Add(width)
		partial := ua.StatusCode(0)
		if hi.After(to) {
			hi, partial = to, bitPartial
		}
		var good []rawSample
		n := 0
		for _, s := range raw {
			if s.at.Before(lo) || !s.at.Before(hi) {
				continue
			}
			n++
			if s.status>>30 == 0 {
				good = append(good, s)
			}
		}
		bads := n - len(good)
		percentValues := ua.StatusOK
		switch {
		case bads == 0:
		case len(good) == 0:
			percentValues = ua.StatusBadNoData
		default:
			percentValues = ua.StatusUncertainDataSubNormal
		}
		r := aggResult{at: lo, status: ua.StatusBadNoData}
		switch name {
		case "Count":
			r.value = float64(len(good))
			if percentValues != ua.StatusBadNoData {
				r.status = percentValues | infoDataValue | locCalculated | partial
			}
		case "Average":
			if len(good) > 0 {
				sum := 0.0
				for _, s := range good {
					sum += s.value
				}
				r.value, r.status = sum/float64(len(good)), percentValues|infoDataValue|locCalculated
			}
		case "Minimum", "Maximum":
			if len(good) == 0 {
				break
			}
			best, at, holders := good[0].value, good[0].at, 0
			for _, s := range good {
				if (name == "Minimum" && s.value < best) || (name == "Maximum" && s.value > best) {
					best, at = s.value, s.at
				}
			}
			for _, s := range good {
				if s.value == best {
					holders++
				}
			}
			sev := ua.StatusOK
			if bads > 0 {
				sev = ua.StatusUncertainDataSubNormal
			}
			loc := locCalculated
			if at.Equal(lo) && sev == ua.StatusOK {
				loc = locRaw
			}
			multi := ua.StatusCode(0)
			if holders > 1 {
				multi = bitMultiValue
			}
			r.value, r.status = best, sev|infoDataValue|loc|partial|multi
		default:
			panic("bruteForce: no aggregate " + name)
		}
		out = append(out, r)
	}
	return out
}

// describe is results in one line: value and status per interval.
func describe(rs []aggResult) string {
	var b strings.Builder
	for _, r := range rs {
		if r.status>>30 >= 2 {
			fmt.Fprintf(&b, " [%#x]", uint32(r.status))
			continue
		}
		fmt.Fprintf(&b, " %.4g[%#x]", r.value, uint32(r.status))
	}
	return b.String()
}
