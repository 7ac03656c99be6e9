package addrspace

import (
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Write applies one client WriteValue (uaserver.NodeStore). Only the Value
// attribute of a Variable is writable, and only when both its AccessLevel
// and UserAccessLevel grant CurrentWrite. The value must match the
// variable's DataType (built-in types, their subtypes, Number/Integer/
// UInteger, enumerations as Int32, structures as ExtensionObject) and
// ValueRank. A StatusCode or SourceTimestamp sent with the value needs
// StatusWrite or TimestampWrite. Then the global and the node's WriteHook
// decide (see WriteHook); an accepted value is stored with the server time
// as ServerTimestamp and notified to the watchers.
func (as *AddressSpace) Write(wv *ua.WriteValue) ua.StatusCode { return as.write(nil, wv) }

// WriteAs is Write from a client's session (uaserver.WriterStore): the
// variable's WriterHook, if any, is told who writes.
func (as *AddressSpace) WriteAs(w uaserver.Writer, wv *ua.WriteValue) ua.StatusCode {
	return as.write(&w, wv)
}

func (as *AddressSpace) write(w *uaserver.Writer, wv *ua.WriteValue) ua.StatusCode {
	if wv == nil || wv.NodeID == nil {
		return ua.StatusBadNodeIDUnknown
	}
	v, st := as.writableVariable(wv)
	if st != ua.StatusOK {
		return st
	}
	dv := wv.Value
	if hook := as.hook.Load(); hook != nil {
		if st := (*hook)(wv.NodeID, dv); st != ua.StatusOK {
			return hookResult(st)
		}
	}
	if hook := v.hook.Load(); hook != nil {
		if st := (*hook)(wv.NodeID, dv); st != ua.StatusOK {
			return hookResult(st)
		}
	}
	if hook := v.byHook.Load(); hook != nil {
		if st := (*hook)(w, wv.NodeID, dv); st != ua.StatusOK {
			return hookResult(st)
		}
	}
	now := as.clock.Now()
	stored := &ua.DataValue{
		EncodingMask:    ua.DataValueValue | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
		Value:           dv.Value,
		SourceTimestamp: now,
		ServerTimestamp: now,
	}
	if dv.Has(ua.DataValueStatusCode) && dv.Status != ua.StatusOK {
		stored.Status = dv.Status
		stored.EncodingMask |= ua.DataValueStatusCode
	}
	if dv.Has(ua.DataValueSourceTimestamp) && !dv.SourceTimestamp.IsZero() {
		stored.SourceTimestamp = dv.SourceTimestamp
		if dv.Has(ua.DataValueSourcePicoseconds) {
			stored.SourcePicoseconds = dv.SourcePicoseconds
			stored.EncodingMask |= ua.DataValueSourcePicoseconds
		}
	}
	v.store(stored)
	return ua.StatusOK
}

func hookResult(st ua.StatusCode) ua.StatusCode {
	if st == WriteHandled {
		return ua.StatusOK
	}
	return st
}

// writableVariable runs every check of Write that needs the node's
// attributes and returns the variable to store into.
func (as *AddressSpace) writableVariable(wv *ua.WriteValue) (*Variable, ua.StatusCode) {
	as.mu.RLock()
	defer as.mu.RUnlock()
	n := as.lookup(wv.NodeID)
	if n == nil {
		return nil, ua.StatusBadNodeIDUnknown
	}
	if wv.AttributeID != ua.AttributeIDValue {
		if _, st := n.attribute(wv.AttributeID); st != ua.StatusOK {
			return nil, st
		}
		return nil, ua.StatusBadNotWritable
	}
	switch n.class {
	case ua.NodeClassVariable:
	case ua.NodeClassVariableType:
		return nil, ua.StatusBadNotWritable
	default:
		return nil, ua.StatusBadAttributeIDInvalid
	}
	const cw = byte(ua.AccessLevelTypeCurrentWrite)
	if n.accessLevel&cw == 0 || n.userAccessLevel&cw == 0 {
		return nil, ua.StatusBadNotWritable
	}
	if wv.IndexRange != "" {
		if _, _, ok := parseIndexRange(wv.IndexRange); !ok {
			return nil, ua.StatusBadIndexRangeInvalid
		}
		return nil, ua.StatusBadWriteNotSupported
	}
	dv := wv.Value
	if dv == nil || dv.Value == nil || !dv.Has(ua.DataValueValue) {
		return nil, ua.StatusBadTypeMismatch
	}
	if dv.Has(ua.DataValueStatusCode) && dv.Status != ua.StatusOK &&
		n.accessLevel&byte(ua.AccessLevelTypeStatusWrite) == 0 {
		return nil, ua.StatusBadWriteNotSupported
	}
	if (dv.Has(ua.DataValueSourceTimestamp) && !dv.SourceTimestamp.IsZero() ||
		dv.Has(ua.DataValueServerTimestamp) && !dv.ServerTimestamp.IsZero()) &&
		n.accessLevel&byte(ua.AccessLevelTypeTimestampWrite) == 0 {
		return nil, ua.StatusBadWriteNotSupported
	}
	if !as.typeMatches(n, dv.Value) {
		return nil, ua.StatusBadTypeMismatch
	}
	return n.v, ua.StatusOK
}

// typeMatches reports whether vr fits n's DataType and ValueRank. mu must
// be held.
func (as *AddressSpace) typeMatches(n *node, vr *ua.Variant) bool {
	isArray := vr.Has(ua.VariantArrayValues)
	dims := len(vr.ArrayDimensions())
	if !isArray {
		dims = 0
	} else if dims == 0 {
		dims = 1
	}
	switch r := n.valueRank; {
	case r == -1 && dims != 0, // Scalar
		r == -3 && dims > 1, // ScalarOrOneDimension
		r == 0 && dims == 0, // OneOrMoreDimensions
		r > 0 && int(r) != dims:
		return false
	}
	return as.builtinMatches(n.dataType, vr.Type())
}

// builtinMatches reports whether a value of built-in type t is an instance
// of DataType dt. mu must be held.
func (as *AddressSpace) builtinMatches(dt *ua.NodeID, t ua.TypeID) bool {
	d := as.lookup(dt)
	if d == nil {
		return true // a DataType this address space does not know: no check
	}
	for depth := 0; d != nil && depth < maxTypeDepth; d, depth = d.super, depth+1 {
		if d.key.ns != 0 || d.key.kind != ua.NodeIDTypeNumeric {
			continue
		}
		switch k := d.key.num; {
		case k == id.BaseDataType:
			return true
		case k == id.Number:
			return t >= ua.TypeIDSByte && t <= ua.TypeIDDouble
		case k == id.Integer:
			return t == ua.TypeIDSByte || t == ua.TypeIDInt16 || t == ua.TypeIDInt32 || t == ua.TypeIDInt64
		case k == id.UInteger:
			return t == ua.TypeIDByte || t == ua.TypeIDUint16 || t == ua.TypeIDUint32 || t == ua.TypeIDUint64
		case k == id.Enumeration:
			return t == ua.TypeIDInt32
		case k >= 1 && k <= 25:
			// The NodeIds of the built-in DataTypes equal their TypeIds
			// (Structure i=22 is ExtensionObject).
			return ua.TypeID(k) == t
		}
	}
	return true
}
