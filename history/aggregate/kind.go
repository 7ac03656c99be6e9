package aggregate

import (
	"strconv"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// Kind is one Part 13 aggregate that this package computes.
type Kind int

// The supported aggregates, each named as its AggregateFunction object
// (Part 13 §4.2.2, Table 5). The zero Kind is not an aggregate.
const (
	Interpolative Kind = iota + 1
	Average
	TimeAverage
	Minimum
	Maximum
	MinimumActualTime
	MaximumActualTime
	Range
	Count
	Start
	End
	Delta
	DurationGood
	DurationBad
	PercentGood
	PercentBad
)

// kinds lists every supported Kind with its name and the numeric identifier
// of its standard AggregateFunction object in namespace 0.
var kinds = []struct {
	kind Kind
	name string
	id   uint32
}{
	{Interpolative, "Interpolative", id.AggregateFunction_Interpolative},
	{Average, "Average", id.AggregateFunction_Average},
	{TimeAverage, "TimeAverage", id.AggregateFunction_TimeAverage},
	{Minimum, "Minimum", id.AggregateFunction_Minimum},
	{Maximum, "Maximum", id.AggregateFunction_Maximum},
	{MinimumActualTime, "MinimumActualTime", id.AggregateFunction_MinimumActualTime},
	{MaximumActualTime, "MaximumActualTime", id.AggregateFunction_MaximumActualTime},
	{Range, "Range", id.AggregateFunction_Range},
	{Count, "Count", id.AggregateFunction_Count},
	{Start, "Start", id.AggregateFunction_Start},
	{End, "End", id.AggregateFunction_End},
	{Delta, "Delta", id.AggregateFunction_Delta},
	{DurationGood, "DurationGood", id.AggregateFunction_DurationGood},
	{DurationBad, "DurationBad", id.AggregateFunction_DurationBad},
	{PercentGood, "PercentGood", id.AggregateFunction_PercentGood},
	{PercentBad, "PercentBad", id.AggregateFunction_PercentBad},
}

// Kinds returns every supported Kind in the order of their NodeIds, for
// publishing the AggregateFunction objects of the server's capabilities.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i, k := range kinds {
		out[i] = k.kind
	}
	return out
}

// String returns the BrowseName of the aggregate's AggregateFunction object,
// or "Kind(n)" for a value that is not a supported Kind.
func (k Kind) String() string {
	if k.valid() {
		return kinds[k-1].name
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// NodeID returns the NodeId of the standard AggregateFunction object of k
// (namespace 0), or nil for a value that is not a supported Kind.
func (k Kind) NodeID() *ua.NodeID {
	if !k.valid() {
		return nil
	}
	return ua.NewNumericNodeID(0, kinds[k-1].id)
}

// KindOf maps the NodeId of a standard AggregateFunction object to its Kind.
// It reports false for nil, for any other node and for the standard
// aggregates this package does not compute (the caller answers
// Bad_AggregateNotSupported).
func KindOf(n *ua.NodeID) (Kind, bool) {
	if n == nil || n.Namespace() != 0 {
		return 0, false
	}
	switch n.Type() {
	case ua.NodeIDTypeTwoByte, ua.NodeIDTypeFourByte, ua.NodeIDTypeNumeric:
	default:
		return 0, false
	}
	for _, k := range kinds {
		if k.id == n.IntID() {
			return k.kind, true
		}
	}
	return 0, false
}

func (k Kind) valid() bool { return k >= Interpolative && k <= PercentBad }
