package subscription

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

func dvInt(v int32) *ua.DataValue {
	dv := &ua.DataValue{Value: ua.MustVariant(v)}
	dv.UpdateMask()
	return dv
}

// contents returns the queued values and which of them carry the overflow bits.
func contents(q *valueQueue) (vals []int32, overflow []bool) {
	for i := range q.len() {
		dv := q.at(i)
		vals = append(vals, dv.Value.Value().(int32))
		overflow = append(overflow, dv.Status&overflowBits == overflowBits)
	}
	return vals, overflow
}

func TestQueueOverflow(t *testing.T) {
	for _, tc := range []struct {
		name          string
		size          int
		discardOldest bool
		wantVals      []int32
		wantOverflow  []bool
	}{
		{"discard oldest flags the new oldest", 3, true, []int32{3, 4, 5}, []bool{true, false, false}},
		{"discard newest flags the replacing value", 3, false, []int32{1, 2, 5}, []bool{false, false, true}},
		{"size one never flags", 1, true, []int32{5}, []bool{false}},
		{"size one never flags either policy", 1, false, []int32{5}, []bool{false}},
		{"no overflow", 8, true, []int32{1, 2, 3, 4, 5}, []bool{false, false, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q valueQueue
			src := make([]*ua.DataValue, 0, 5)
			for v := int32(1); v <= 5; v++ {
				dv := dvInt(v)
				src = append(src, dv)
				q.push(dv, tc.size, tc.discardOldest)
			}
			vals, ov := contents(&q)
			if !equalSlices(vals, tc.wantVals) || !equalSlices(ov, tc.wantOverflow) {
				t.Fatalf("queue = %v overflow %v, want %v overflow %v", vals, ov, tc.wantVals, tc.wantOverflow)
			}
			for _, dv := range src {
				if dv.Status != 0 {
					t.Fatalf("a value handed over by the source was modified: %v", dv.Status)
				}
			}
		})
	}
}

func TestQueueOverflowBitIsEncoded(t *testing.T) {
	var q valueQueue
	for v := int32(1); v <= 3; v++ {
		q.push(dvInt(v), 2, true)
	}
	dv := q.pop()
	if dv.Status != ua.StatusCode(0x480) || !dv.Has(ua.DataValueStatusCode) {
		t.Fatalf("overflowed value: status %#x mask %#x, want status 0x480 with the status bit", uint32(dv.Status), dv.EncodingMask)
	}
}

func TestQueueShrink(t *testing.T) {
	for _, tc := range []struct {
		discardOldest bool
		wantVals      []int32
		wantOverflow  []bool
	}{
		{true, []int32{4, 5}, []bool{true, false}},
		{false, []int32{1, 2}, []bool{false, true}},
	} {
		var q valueQueue
		for v := int32(1); v <= 5; v++ {
			q.push(dvInt(v), 10, tc.discardOldest)
		}
		q.shrink(2, tc.discardOldest)
		vals, ov := contents(&q)
		if !equalSlices(vals, tc.wantVals) || !equalSlices(ov, tc.wantOverflow) {
			t.Errorf("discardOldest=%v: shrunk queue %v %v, want %v %v", tc.discardOldest, vals, ov, tc.wantVals, tc.wantOverflow)
		}
		q.push(dvInt(6), 2, tc.discardOldest)
		if q.len() != 2 {
			t.Errorf("push after shrink: len %d, want 2", q.len())
		}
	}
}

func TestQueueGrowsLazily(t *testing.T) {
	var q valueQueue
	q.push(dvInt(1), 10000, true)
	if len(q.buf) != 1 {
		t.Fatalf("first push allocated %d slots, want 1", len(q.buf))
	}
	for v := int32(2); v <= 100; v++ {
		q.push(dvInt(v), 10000, true)
		if v == 50 {
			q.pop()
		}
	}
	vals, _ := contents(&q)
	if len(vals) != 99 || vals[0] != 2 || vals[98] != 100 {
		t.Fatalf("after 100 pushes and one pop: len %d first %d last %d", len(vals), vals[0], vals[len(vals)-1])
	}
}

func TestStamp(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src, srv := now.Add(-time.Second), now.Add(-time.Millisecond)
	full := &ua.DataValue{Value: ua.MustVariant(int32(1)), SourceTimestamp: src, ServerTimestamp: srv}
	full.UpdateMask()
	noServer := &ua.DataValue{Value: ua.MustVariant(int32(1)), SourceTimestamp: src}
	noServer.UpdateMask()
	badMask := &ua.DataValue{Value: ua.MustVariant(int32(1)), SourceTimestamp: src, ServerTimestamp: srv, EncodingMask: ua.DataValueValue}

	for _, tc := range []struct {
		name     string
		dv       *ua.DataValue
		ttr      ua.TimestampsToReturn
		wantSrc  time.Time
		wantSrv  time.Time
		wantSame bool
	}{
		{"both kept as is", full, ua.TimestampsToReturnBoth, src, srv, true},
		{"source only", full, ua.TimestampsToReturnSource, src, time.Time{}, false},
		{"server only", full, ua.TimestampsToReturnServer, time.Time{}, srv, false},
		{"neither", full, ua.TimestampsToReturnNeither, time.Time{}, time.Time{}, false},
		{"missing server timestamp filled", noServer, ua.TimestampsToReturnBoth, src, now, false},
		{"source only needs no server timestamp", noServer, ua.TimestampsToReturnSource, src, time.Time{}, true},
		{"wrong mask repaired", badMask, ua.TimestampsToReturnBoth, src, srv, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stamp(tc.dv, tc.ttr, now, nil)
			var slab []ua.DataValue
			if fromSlab := stamp(tc.dv, tc.ttr, now, &slab); *fromSlab != *got || (fromSlab == tc.dv) != tc.wantSame ||
				(!tc.wantSame && len(slab) != dataValueSlab-1) {
				t.Fatalf("copy into a slab %+v (slab left %d), want %+v", fromSlab, len(slab), got)
			}
			if !got.SourceTimestamp.Equal(tc.wantSrc) || !got.ServerTimestamp.Equal(tc.wantSrv) {
				t.Fatalf("timestamps src %v srv %v, want %v %v", got.SourceTimestamp, got.ServerTimestamp, tc.wantSrc, tc.wantSrv)
			}
			if got.Has(ua.DataValueSourceTimestamp) != !tc.wantSrc.IsZero() || got.Has(ua.DataValueServerTimestamp) != !tc.wantSrv.IsZero() {
				t.Fatalf("mask %#x does not match the timestamps", got.EncodingMask)
			}
			if (got == tc.dv) != tc.wantSame {
				t.Fatalf("returned the input: %v, want %v", got == tc.dv, tc.wantSame)
			}
			if !tc.dv.SourceTimestamp.Equal(src) {
				t.Fatal("input modified")
			}
		})
	}
}

func equalSlices[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
