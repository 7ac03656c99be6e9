package subscription

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

func dcf(trigger ua.DataChangeTrigger, deadband ua.DeadbandType, value float64) *ua.ExtensionObject {
	return ua.NewExtensionObject(&ua.DataChangeFilter{Trigger: trigger, DeadbandType: uint32(deadband), DeadbandValue: value})
}

func TestParseFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		eo   *ua.ExtensionObject
		attr ua.AttributeID
		want ua.StatusCode
		f    dataFilter
	}{
		{"none", nil, ua.AttributeIDValue, ua.StatusGood, defaultFilter},
		{"empty extension object", ua.NewExtensionObject(nil), ua.AttributeIDValue, ua.StatusGood, defaultFilter},
		{"status", dcf(ua.DataChangeTriggerStatus, ua.DeadbandTypeNone, 0), ua.AttributeIDValue, ua.StatusGood, dataFilter{trigger: ua.DataChangeTriggerStatus}},
		{"absolute", dcf(ua.DataChangeTriggerStatusValue, ua.DeadbandTypeAbsolute, 2.5), ua.AttributeIDValue, ua.StatusGood, dataFilter{trigger: ua.DataChangeTriggerStatusValue, deadband: 2.5}},
		{"negative deadband", dcf(ua.DataChangeTriggerStatusValue, ua.DeadbandTypeAbsolute, -1), ua.AttributeIDValue, ua.StatusBadDeadbandFilterInvalid, dataFilter{}},
		{"percent", dcf(ua.DataChangeTriggerStatusValue, ua.DeadbandTypePercent, 10), ua.AttributeIDValue, ua.StatusBadMonitoredItemFilterUnsupported, dataFilter{}},
		{"unknown deadband", dcf(ua.DataChangeTriggerStatusValue, 7, 1), ua.AttributeIDValue, ua.StatusBadDeadbandFilterInvalid, dataFilter{}},
		{"unknown trigger", dcf(9, ua.DeadbandTypeNone, 0), ua.AttributeIDValue, ua.StatusBadMonitoredItemFilterInvalid, dataFilter{}},
		{"event filter on a data item", ua.NewExtensionObject(&ua.EventFilter{}), ua.AttributeIDValue, ua.StatusBadFilterNotAllowed, dataFilter{}},
		{"aggregate filter", ua.NewExtensionObject(&ua.AggregateFilter{}), ua.AttributeIDValue, ua.StatusBadMonitoredItemFilterUnsupported, dataFilter{}},
		{"data change filter on DisplayName", dcf(ua.DataChangeTriggerStatus, ua.DeadbandTypeNone, 0), ua.AttributeIDDisplayName, ua.StatusBadFilterNotAllowed, dataFilter{}},
	} {
		f, st := parseFilter(tc.eo, tc.attr)
		if st != tc.want || f != tc.f {
			t.Errorf("%s: parseFilter = %+v, %v; want %+v, %v", tc.name, f, st, tc.f, tc.want)
		}
	}
}

func TestFilterPasses(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(v any, st ua.StatusCode, ts time.Time) *ua.DataValue {
		return &ua.DataValue{Value: ua.MustVariant(v), Status: st, SourceTimestamp: ts}
	}
	base := mk(10.0, 0, t0)
	for _, tc := range []struct {
		name string
		f    dataFilter
		last *ua.DataValue
		dv   *ua.DataValue
		want bool
	}{
		{"first value", defaultFilter, nil, base, true},
		{"same pointer", defaultFilter, base, base, false},
		{"same value new timestamp", defaultFilter, base, mk(10.0, 0, t0.Add(time.Second)), false},
		{"new value", defaultFilter, base, mk(11.0, 0, t0), true},
		{"new status", defaultFilter, base, mk(10.0, ua.StatusUncertain, t0), true},
		{"status trigger ignores value", dataFilter{trigger: ua.DataChangeTriggerStatus}, base, mk(11.0, 0, t0), false},
		{"status trigger sees status", dataFilter{trigger: ua.DataChangeTriggerStatus}, base, mk(10.0, ua.StatusUncertain, t0), true},
		{"timestamp trigger", dataFilter{trigger: ua.DataChangeTriggerStatusValueTimestamp}, base, mk(10.0, 0, t0.Add(time.Second)), true},
		{"inside deadband", dataFilter{trigger: ua.DataChangeTriggerStatusValue, deadband: 2}, base, mk(12.0, 0, t0), false},
		{"outside deadband", dataFilter{trigger: ua.DataChangeTriggerStatusValue, deadband: 2}, base, mk(12.5, 0, t0), true},
		{"deadband on ints", dataFilter{trigger: ua.DataChangeTriggerStatusValue, deadband: 2}, mk(int32(5), 0, t0), mk(int32(7), 0, t0), false},
		{"deadband on arrays", dataFilter{trigger: ua.DataChangeTriggerStatusValue, deadband: 2}, mk([]float64{1, 2}, 0, t0), mk([]float64{1, 5}, 0, t0), true},
		{"deadband on arrays inside", dataFilter{trigger: ua.DataChangeTriggerStatusValue, deadband: 2}, mk([]float64{1, 2}, 0, t0), mk([]float64{2, 3}, 0, t0), false},
		{"type change", defaultFilter, mk(int32(1), 0, t0), mk(int64(1), 0, t0), true},
		{"equal strings", defaultFilter, mk("a", 0, t0), mk("a", 0, t0), false},
		{"equal arrays", defaultFilter, mk([]int32{1, 2}, 0, t0), mk([]int32{1, 2}, 0, t0), false},
	} {
		if got := tc.f.passes(tc.last, tc.dv); got != tc.want {
			t.Errorf("%s: passes = %v, want %v", tc.name, got, tc.want)
		}
	}
}
