package drivers

import (
	"github.com/gopcua/opcua/id"

	"github.com/otopcua/otopcua/deployment"
)

// DataTypeOf is the built-in OPC UA DataType (namespace 0) of a document
// tag type; Double for float64 and anything else.
func DataTypeOf(typ string) uint32 {
	switch typ {
	case deployment.TypeBool:
		return id.Boolean
	case deployment.TypeInt16:
		return id.Int16
	case deployment.TypeUint16:
		return id.UInt16
	case deployment.TypeInt32:
		return id.Int32
	case deployment.TypeUint32:
		return id.UInt32
	case deployment.TypeFloat32:
		return id.Float
	}
	return id.Double
}
