package subscription

import (
	"bytes"
	"math"
	"reflect"
	"time"

	"github.com/gopcua/opcua/ua"
)

// dataFilter is a parsed DataChangeFilter (Part 4 §7.22.2). The zero value is
// not valid; defaultFilter is what an item without a filter uses.
type dataFilter struct {
	trigger  ua.DataChangeTrigger
	deadband float64 // absolute deadband; 0 means none
}

var defaultFilter = dataFilter{trigger: ua.DataChangeTriggerStatusValue}

// request is the DataChangeFilter that parses to f; nil for the default.
func (f dataFilter) request() *ua.DataChangeFilter {
	if f == defaultFilter {
		return nil
	}
	r := &ua.DataChangeFilter{Trigger: f.trigger, DeadbandType: uint32(ua.DeadbandTypeNone)}
	if f.deadband > 0 {
		r.DeadbandType, r.DeadbandValue = uint32(ua.DeadbandTypeAbsolute), f.deadband
	}
	return r
}

// parseFilter validates the filter of a data monitored item on attribute
// attr. Only DataChangeFilter with deadband None or Absolute is supported,
// and only on the Value attribute; an EventFilter is not allowed on a data
// item (event items are parsed by parseEventFilter).
func parseFilter(eo *ua.ExtensionObject, attr ua.AttributeID) (dataFilter, ua.StatusCode) {
	if eo == nil || eo.Value == nil {
		return defaultFilter, ua.StatusGood
	}
	var f ua.DataChangeFilter
	switch v := eo.Value.(type) {
	case *ua.DataChangeFilter:
		if v == nil {
			return defaultFilter, ua.StatusGood
		}
		f = *v
	case ua.DataChangeFilter:
		f = v
	case *ua.EventFilter, ua.EventFilter:
		// An event filter belongs on the EventNotifier attribute.
		return dataFilter{}, ua.StatusBadFilterNotAllowed
	case *ua.AggregateFilter, ua.AggregateFilter:
		return dataFilter{}, ua.StatusBadMonitoredItemFilterUnsupported
	default:
		return dataFilter{}, ua.StatusBadMonitoredItemFilterInvalid
	}
	if attr != ua.AttributeIDValue {
		return dataFilter{}, ua.StatusBadFilterNotAllowed
	}
	if f.Trigger > ua.DataChangeTriggerStatusValueTimestamp {
		return dataFilter{}, ua.StatusBadMonitoredItemFilterInvalid
	}
	out := dataFilter{trigger: f.Trigger}
	switch ua.DeadbandType(f.DeadbandType) {
	case ua.DeadbandTypeNone:
	case ua.DeadbandTypeAbsolute:
		if math.IsNaN(f.DeadbandValue) || math.IsInf(f.DeadbandValue, 0) || f.DeadbandValue < 0 {
			return dataFilter{}, ua.StatusBadDeadbandFilterInvalid
		}
		out.deadband = f.DeadbandValue
	case ua.DeadbandTypePercent:
		return dataFilter{}, ua.StatusBadMonitoredItemFilterUnsupported
	default:
		return dataFilter{}, ua.StatusBadDeadbandFilterInvalid
	}
	return out, ua.StatusGood
}

// passes reports whether dv is a change worth queuing compared with last, the
// previous value that passed. A nil last always passes.
func (f dataFilter) passes(last, dv *ua.DataValue) bool {
	if last == nil {
		return true
	}
	if last == dv {
		return false
	}
	if last.Status != dv.Status {
		return true
	}
	if f.trigger == ua.DataChangeTriggerStatus {
		return false
	}
	if valueChanged(last.Value, dv.Value, f.deadband) {
		return true
	}
	return f.trigger == ua.DataChangeTriggerStatusValueTimestamp &&
		!last.SourceTimestamp.Equal(dv.SourceTimestamp)
}

// valueChanged compares two variants. With a deadband, numeric scalars and
// numeric arrays of equal length change only when some element moved by more
// than the deadband; everything else compares for equality.
func valueChanged(a, b *ua.Variant, deadband float64) bool {
	if a == b {
		return false
	}
	if a == nil || b == nil {
		return true
	}
	av, bv := a.Value(), b.Value()
	if deadband > 0 {
		if x, ok := toFloat(av); ok {
			if y, ok := toFloat(bv); ok {
				return math.Abs(x-y) > deadband
			}
		}
		if changed, ok := arrayDeadband(av, bv, deadband); ok {
			return changed
		}
	}
	return !equalValue(av, bv)
}

// toFloat converts a numeric scalar to float64.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int8:
		return float64(x), true
	case uint8:
		return float64(x), true
	case int16:
		return float64(x), true
	case uint16:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// isNumeric reports whether v is a numeric scalar or a slice of numerics:
// the values an absolute deadband applies to.
func isNumeric(v any) bool {
	if _, ok := toFloat(v); ok {
		return true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return false
	}
	switch rv.Type().Elem().Kind() {
	case reflect.Int8, reflect.Uint8, reflect.Int16, reflect.Uint16, reflect.Int32, reflect.Uint32,
		reflect.Int64, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// arrayDeadband applies an absolute deadband element by element. ok is false
// when a and b are not numeric slices of the same length.
func arrayDeadband(a, b any, deadband float64) (changed, ok bool) {
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	if ra.Kind() != reflect.Slice || rb.Kind() != reflect.Slice || ra.Len() != rb.Len() || ra.Type() != rb.Type() {
		return false, false
	}
	for i := range ra.Len() {
		x, okx := toFloat(ra.Index(i).Interface())
		y, oky := toFloat(rb.Index(i).Interface())
		if !okx || !oky {
			return false, false
		}
		if math.Abs(x-y) > deadband {
			return true, true
		}
	}
	return false, true
}

// equalValue compares two variant payloads; scalar types take a fast path.
func equalValue(a, b any) bool {
	switch x := a.(type) {
	case bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, string, ua.StatusCode:
		return a == b
	case float32:
		y, ok := b.(float32)
		return ok && (x == y || (x != x && y != y))
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return reflect.DeepEqual(a, b)
}
