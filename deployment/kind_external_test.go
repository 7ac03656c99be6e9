package deployment_test

import (
	"testing"

	"github.com/gopcua/opcua/id"

	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/deployment"
)

// TestConditionKindFollowsTheDataType: a condition sees each tag as the
// type of its OPC UA DataType (dataplane.DataType): Boolean a bool, the
// integer DataTypes an int, Float and Double a float64.
func TestConditionKindFollowsTheDataType(t *testing.T) {
	want := map[uint32]deployment.ValueKind{
		id.Boolean: deployment.KindBool, id.Int16: deployment.KindInt, id.UInt16: deployment.KindInt,
		id.Int32: deployment.KindInt, id.UInt32: deployment.KindInt, id.Float: deployment.KindFloat, id.Double: deployment.KindFloat,
	}
	one := 1.0
	for _, typ := range deployment.Types {
		for _, scaled := range []bool{false, true} {
			tag := deployment.Tag{Type: typ}
			if scaled {
				if typ == deployment.TypeBool {
					continue // not accepted
				}
				tag.Scale = &one
			}
			dt := dataplane.DataType(tag)
			if got := deployment.ConditionKind(&tag); got != want[dt] {
				t.Errorf("%s scaled=%v: DataType i=%d, condition kind %v, want %v", typ, scaled, dt, got, want[dt])
			}
		}
	}
}
