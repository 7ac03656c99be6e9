package subscription

import (
	"math"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"pgregory.net/rapid"

	"github.com/otopcua/otopcua/opcua/events"
)

func lit(v any) *ua.ExtensionObject {
	return ua.NewExtensionObject(&ua.LiteralOperand{Value: ua.MustVariant(v)})
}

func el(i uint32) *ua.ExtensionObject { return ua.NewExtensionObject(&ua.ElementOperand{Index: i}) }

func fld(name string) *ua.ExtensionObject { return ua.NewExtensionObject(sao(nil, name)) }

func op(o ua.FilterOperator, args ...*ua.ExtensionObject) *ua.ContentFilterElement {
	return &ua.ContentFilterElement{FilterOperator: o, FilterOperands: args}
}

// TestWhereClauseEvaluation pins the operators over one event: Severity
// 500, Message "pump tripped", an AuditWriteUpdate whose Status is false.
func TestWhereClauseEvaluation(t *testing.T) {
	evs := newFakeEvents(time.Now)
	ev := auditEvent(t, "operator", 1, 2)
	ev.Severity = 500
	ev.Message = ua.NewLocalizedText("pump tripped")
	p := ev.Prepare(time.Unix(1000, 0), evs.chain(ev.EventType))
	gt := ua.FilterOperatorGreaterThan
	for _, tc := range []struct {
		name  string
		elems []*ua.ContentFilterElement
		want  bool
	}{
		{"Severity > 400 (UInt16 against Int32)", []*ua.ContentFilterElement{op(gt, fld("Severity"), lit(int32(400)))}, true},
		{"Severity > 500", []*ua.ContentFilterElement{op(gt, fld("Severity"), lit(uint16(500)))}, false},
		{"Severity >= 500.0", []*ua.ContentFilterElement{op(ua.FilterOperatorGreaterThanOrEqual, fld("Severity"), lit(500.0))}, true},
		{"Severity < -1", []*ua.ContentFilterElement{op(ua.FilterOperatorLessThan, fld("Severity"), lit(int64(-1)))}, false},
		{"Severity <= MaxUint64", []*ua.ContentFilterElement{op(ua.FilterOperatorLessThanOrEqual, fld("Severity"), lit(uint64(math.MaxUint64)))}, true},
		{"Severity == 500", []*ua.ContentFilterElement{op(ua.FilterOperatorEquals, fld("Severity"), lit(int32(500)))}, true},
		{"Severity == NaN", []*ua.ContentFilterElement{op(ua.FilterOperatorEquals, fld("Severity"), lit(math.NaN()))}, false},
		{"Severity == 'x': incomparable, null", []*ua.ContentFilterElement{op(ua.FilterOperatorEquals, fld("Severity"), lit("x"))}, false},
		{"Not(incomparable) is null too", []*ua.ContentFilterElement{op(ua.FilterOperatorNot, el(1)), op(ua.FilterOperatorEquals, fld("Severity"), lit("x"))}, false},
		{"SourceName == 'Attribute/Write'", []*ua.ContentFilterElement{op(ua.FilterOperatorEquals, fld("SourceName"), lit("Attribute/Write"))}, true},
		{"EventType == NodeId (other encoding)", []*ua.ContentFilterElement{op(ua.FilterOperatorEquals, fld("EventType"), lit(ua.NewFourByteNodeID(0, 2100)))}, true},
		{"Status == false", []*ua.ContentFilterElement{op(ua.FilterOperatorEquals, fld("Status"), lit(false))}, true},
		{"Message == 'pump tripped'", []*ua.ContentFilterElement{op(ua.FilterOperatorEquals, fld("Message"), lit(ua.NewLocalizedText("pump tripped")))}, true},
		{"IsNull(LocalTime)", []*ua.ContentFilterElement{op(ua.FilterOperatorIsNull, fld("LocalTime"))}, true},
		{"IsNull(Severity)", []*ua.ContentFilterElement{op(ua.FilterOperatorIsNull, fld("Severity"))}, false},
		{"Between 100 and 500", []*ua.ContentFilterElement{op(ua.FilterOperatorBetween, fld("Severity"), lit(int32(100)), lit(int32(500)))}, true},
		{"Between 501 and 900", []*ua.ContentFilterElement{op(ua.FilterOperatorBetween, fld("Severity"), lit(int32(501)), lit(int32(900)))}, false},
		{"InList 100, 500", []*ua.ContentFilterElement{op(ua.FilterOperatorInList, fld("Severity"), lit(int32(100)), lit(uint16(500)))}, true},
		{"InList 100, 200", []*ua.ContentFilterElement{op(ua.FilterOperatorInList, fld("Severity"), lit(int32(100)), lit(int32(200)))}, false},
		{"Time > a DateTime", []*ua.ContentFilterElement{op(gt, fld("Time"), lit(time.Unix(999, 0)))}, true},
		{"OfType AuditEventType And Severity > 400", []*ua.ContentFilterElement{
			op(ua.FilterOperatorAnd, el(1), el(2)), ofType(events.AuditEventType), op(gt, fld("Severity"), lit(int32(400)))}, true},
		{"And(true, null) is null", []*ua.ContentFilterElement{
			op(ua.FilterOperatorAnd, el(1), el(2)), ofType(events.AuditEventType), op(gt, fld("LocalTime"), lit(int32(1)))}, false},
		{"Or(true, null) is true", []*ua.ContentFilterElement{
			op(ua.FilterOperatorOr, el(1), el(2)), ofType(events.AuditEventType), op(gt, fld("LocalTime"), lit(int32(1)))}, true},
		{"Or(false, null) is null", []*ua.ContentFilterElement{
			op(ua.FilterOperatorOr, el(1), el(2)), ofType(deviceEventType), op(gt, fld("LocalTime"), lit(int32(1)))}, false},
		{"Not(Or(false, false))", []*ua.ContentFilterElement{
			op(ua.FilterOperatorNot, el(1)), op(ua.FilterOperatorOr, el(2), el(3)), ofType(deviceEventType), ofType(events.EventQueueOverflowEventType)}, true},
		{"Equals on an element result", []*ua.ContentFilterElement{op(ua.FilterOperatorEquals, el(1), lit(true)), ofType(events.BaseEventType)}, true},
		{"a typed field of another type is null", []*ua.ContentFilterElement{
			op(ua.FilterOperatorIsNull, ua.NewExtensionObject(sao(deviceEventType, "Device")))}, true},
	} {
		w, res, st := parseWhere(&ua.ContentFilter{Elements: tc.elems}, evs)
		if st != ua.StatusGood {
			t.Errorf("%s: parse %v %+v", tc.name, st, res.ElementResults)
			continue
		}
		if got := w.matches(p); got != tc.want {
			t.Errorf("%s: matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCompareNumbersExact checks the integer comparison against a
// brute-force one over the edges of every integer type.
func TestCompareNumbersExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pick := func(label string) (any, float64, bool) {
			switch rapid.IntRange(0, 3).Draw(t, label+"kind") {
			case 0:
				x := rapid.Int64().Draw(t, label)
				return x, float64(x), x < 0
			case 1:
				x := rapid.Uint64().Draw(t, label)
				return x, float64(x), false
			case 2:
				x := rapid.Int8().Draw(t, label)
				return x, float64(x), x < 0
			}
			x := rapid.SampledFrom([]int64{math.MinInt64, math.MaxInt64, -1, 0, 1}).Draw(t, label)
			return x, float64(x), x < 0
		}
		a, _, _ := pick("a")
		b, _, _ := pick("b")
		got, ok := compareNumbers(a, b)
		if !ok {
			t.Fatalf("%v vs %v not comparable", a, b)
		}
		want := bruteCompare(a, b)
		if got != want {
			t.Fatalf("compare(%v (%T), %v (%T)) = %d, want %d", a, a, b, b, got, want)
		}
	})
}

// bruteCompare orders two integers through their decimal text.
func bruteCompare(a, b any) int {
	toParts := func(v any) (neg bool, mag uint64) {
		switch x := v.(type) {
		case int64:
			if x < 0 {
				if x == math.MinInt64 {
					return true, 1 << 63
				}
				return true, uint64(-x)
			}
			return false, uint64(x)
		case int8:
			if x < 0 {
				return true, uint64(-int64(x))
			}
			return false, uint64(x)
		case uint64:
			return false, x
		}
		panic("type")
	}
	an, am := toParts(a)
	bn, bm := toParts(b)
	switch {
	case am == 0 && bm == 0:
		return 0
	case an && !bn:
		return -1
	case !an && bn:
		return 1
	case am == bm:
		return 0
	case (am < bm) != an:
		return -1
	}
	return 1
}

// TestEventQueueInvariants drives an event queue with random pushes,
// pops and policy changes and checks what Part 4 asks of it: at most size
// events, their order kept, no two overflow events side by side, and a
// discarded event always leaves an overflow event behind.
func TestEventQueueInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 6).Draw(t, "size")
		discardOldest := rapid.Bool().Draw(t, "discardOldest")
		var q eventQueue
		next, lastOut := 0, -1
		pushed, popped, discarded, overflows, ovPopped := 0, 0, 0, 0, 0
		ovMaker := func() evEntry { return evEntry{overflow: true} }
		for step := range rapid.IntRange(1, 80).Draw(t, "steps") {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2:
				if q.n > 0 {
					e := q.popEntry()
					if e.overflow {
						overflows--
						ovPopped++
						continue
					}
					n := int(e.fields[0].Value().(int32))
					if n <= lastOut {
						t.Fatalf("step %d: event %d after %d", step, n, lastOut)
					}
					lastOut = n
					popped++
				}
			case 3:
				discardOldest = !discardOldest
			default:
				before := q.n
				d := q.push(evEntry{fields: []*ua.Variant{ua.MustVariant(int32(next))}}, size, discardOldest, ovMaker)
				next++
				pushed++
				if d {
					discarded++
				}
				overflows += q.n - before - 1 + btoi(d)
			}
			checkEventQueue(t, &q, size, lastOut)
			if got := q.events; pushed-discarded-popped != got {
				t.Fatalf("step %d: %d events queued, want %d pushed - %d discarded - %d popped", step, got, pushed, discarded, popped)
			}
			if discarded > 0 && overflows == 0 && ovPopped == 0 {
				t.Fatalf("step %d: events were discarded and no overflow event marks it", step)
			}
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func checkEventQueue(t *rapid.T, q *eventQueue, size, lastOut int) {
	n, prev, prevOV := 0, lastOut, false
	for i := range q.n {
		e := q.at(i)
		if e.overflow {
			if prevOV {
				t.Fatalf("two overflow events side by side at %d", i)
			}
			prevOV = true
			continue
		}
		prevOV = false
		v := int(e.fields[0].Value().(int32))
		if v <= prev {
			t.Fatalf("event %d queued after %d", v, prev)
		}
		prev = v
		n++
	}
	if n != q.events || n > size {
		t.Fatalf("%d events in the queue, counted %d, size %d", n, q.events, size)
	}
}
