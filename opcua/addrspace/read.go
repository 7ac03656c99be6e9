package addrspace

import (
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"
)

// Read answers one ReadValueID (uaserver.NodeStore). The Value attribute
// carries the timestamps ttr asks for, the ServerTimestamp being the time of
// the read; other attributes carry no SourceTimestamp. A 1-D IndexRange
// ("i" or "i:j") is applied to array, String and ByteString values.
func (as *AddressSpace) Read(rv *ua.ReadValueID, ttr ua.TimestampsToReturn) *ua.DataValue {
	if rv == nil || rv.NodeID == nil {
		return statusValue(ua.StatusBadNodeIDUnknown)
	}
	if ttr > ua.TimestampsToReturnNeither {
		return statusValue(ua.StatusBadTimestampsToReturnInvalid)
	}
	dv, st := as.readAttribute(rv.NodeID, rv.AttributeID)
	if st != ua.StatusOK {
		return statusValue(st)
	}
	if rv.IndexRange != "" {
		if rv.AttributeID != ua.AttributeIDValue {
			return statusValue(ua.StatusBadIndexRangeInvalid)
		}
		var st ua.StatusCode
		if dv, st = applyIndexRange(dv, rv.IndexRange); st != ua.StatusOK {
			return statusValue(st)
		}
	}
	if st := checkDataEncoding(rv, dv); st != ua.StatusOK {
		return statusValue(st)
	}
	return as.withTimestamps(dv, rv.AttributeID == ua.AttributeIDValue, ttr)
}

func statusValue(s ua.StatusCode) *ua.DataValue {
	return &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: s}
}

// readAttribute returns the attribute as stored, or the status of a failed
// read. The Value DataValue of a variable is shared (never modify it), every
// other result is new.
func (as *AddressSpace) readAttribute(nid *ua.NodeID, attr ua.AttributeID) (*ua.DataValue, ua.StatusCode) {
	as.mu.RLock()
	n := as.lookup(nid)
	if n == nil {
		as.mu.RUnlock()
		return nil, ua.StatusBadNodeIDUnknown
	}
	if attr == ua.AttributeIDValue {
		v := n.v
		as.mu.RUnlock()
		if v == nil {
			return nil, ua.StatusBadAttributeIDInvalid
		}
		return v.Value(), ua.StatusOK
	}
	val, st := n.attribute(attr)
	as.mu.RUnlock()
	if st != ua.StatusOK {
		return nil, st
	}
	vr, err := ua.NewVariant(val)
	if err != nil {
		panic("addrspace: attribute " + attr.String() + " has no Variant form: " + err.Error())
	}
	return &ua.DataValue{EncodingMask: ua.DataValueValue, Value: vr}, ua.StatusOK
}

// attribute returns the value of a non-Value attribute in the Go type
// ua.NewVariant encodes as the attribute's DataType. mu must be held.
func (n *node) attribute(attr ua.AttributeID) (any, ua.StatusCode) {
	c := n.class
	isVar := c == ua.NodeClassVariable
	isVarOrType := isVar || c == ua.NodeClassVariableType
	isType := c == ua.NodeClassObjectType || c == ua.NodeClassVariableType ||
		c == ua.NodeClassReferenceType || c == ua.NodeClassDataType
	switch attr {
	case ua.AttributeIDNodeID:
		return n.id, ua.StatusOK
	case ua.AttributeIDNodeClass:
		return int32(c), ua.StatusOK
	case ua.AttributeIDBrowseName:
		return n.browseName, ua.StatusOK
	case ua.AttributeIDDisplayName:
		return n.displayName, ua.StatusOK
	case ua.AttributeIDDescription:
		return orEmpty(n.description), ua.StatusOK
	case ua.AttributeIDWriteMask, ua.AttributeIDUserWriteMask:
		return n.writeMask, ua.StatusOK
	case ua.AttributeIDIsAbstract:
		return n.isAbstract, okIf(isType)
	case ua.AttributeIDSymmetric:
		return n.symmetric, okIf(c == ua.NodeClassReferenceType)
	case ua.AttributeIDInverseName:
		return orEmpty(n.inverseName), okIf(c == ua.NodeClassReferenceType)
	case ua.AttributeIDContainsNoLoops:
		return n.containsNoLoops, okIf(c == ua.NodeClassView)
	case ua.AttributeIDEventNotifier:
		return n.eventNotifier, okIf(c == ua.NodeClassObject || c == ua.NodeClassView)
	case ua.AttributeIDDataType:
		return n.dataType, okIf(isVarOrType)
	case ua.AttributeIDValueRank:
		return n.valueRank, okIf(isVarOrType)
	case ua.AttributeIDArrayDimensions:
		return n.arrayDimensions, okIf(isVarOrType)
	case ua.AttributeIDAccessLevel:
		return n.accessLevel, okIf(isVar)
	case ua.AttributeIDUserAccessLevel:
		return n.userAccessLevel, okIf(isVar)
	case ua.AttributeIDAccessLevelEx:
		return uint32(n.accessLevel), okIf(isVar)
	case ua.AttributeIDMinimumSamplingInterval:
		return n.minSampling, okIf(isVar)
	case ua.AttributeIDHistorizing:
		return n.historizing, okIf(isVar)
	case ua.AttributeIDExecutable:
		return n.executable, okIf(c == ua.NodeClassMethod)
	case ua.AttributeIDUserExecutable:
		return n.userExecutable, okIf(c == ua.NodeClassMethod)
	}
	// DataTypeDefinition, RolePermissions, UserRolePermissions and
	// AccessRestrictions are optional and not kept; anything else is no
	// attribute at all.
	return nil, ua.StatusBadAttributeIDInvalid
}

func okIf(b bool) ua.StatusCode {
	if b {
		return ua.StatusOK
	}
	return ua.StatusBadAttributeIDInvalid
}

func orEmpty(l *ua.LocalizedText) *ua.LocalizedText {
	if l == nil {
		return &ua.LocalizedText{}
	}
	return l
}

// withTimestamps returns a copy of dv carrying the timestamps ttr asks for.
func (as *AddressSpace) withTimestamps(dv *ua.DataValue, isValue bool, ttr ua.TimestampsToReturn) *ua.DataValue {
	out := *dv
	const src = ua.DataValueSourceTimestamp | ua.DataValueSourcePicoseconds
	const srv = ua.DataValueServerTimestamp | ua.DataValueServerPicoseconds
	keepSource := isValue && (ttr == ua.TimestampsToReturnSource || ttr == ua.TimestampsToReturnBoth)
	if !keepSource {
		out.EncodingMask &^= src
		out.SourceTimestamp, out.SourcePicoseconds = time.Time{}, 0
	}
	out.EncodingMask &^= srv
	out.ServerTimestamp, out.ServerPicoseconds = time.Time{}, 0
	if ttr == ua.TimestampsToReturnServer || ttr == ua.TimestampsToReturnBoth {
		out.ServerTimestamp = as.clock.Now()
		out.EncodingMask |= ua.DataValueServerTimestamp
	}
	return &out
}

// applyIndexRange returns dv with its value cut to the 1-D range r.
func applyIndexRange(dv *ua.DataValue, r string) (*ua.DataValue, ua.StatusCode) {
	lo, hi, ok := parseIndexRange(r)
	if !ok || dv.Value == nil || dv.Value.Has(ua.VariantArrayDimensions) {
		return nil, ua.StatusBadIndexRangeInvalid
	}
	val := dv.Value.Value()
	var cut any
	switch x := val.(type) {
	case string:
		if lo >= len(x) {
			return nil, ua.StatusBadIndexRangeNoData
		}
		cut = x[lo:min(hi+1, len(x))]
	case []byte:
		if lo >= len(x) {
			return nil, ua.StatusBadIndexRangeNoData
		}
		cut = x[lo:min(hi+1, len(x))]
	default:
		rv := reflect.ValueOf(val)
		if !dv.Value.Has(ua.VariantArrayValues) || rv.Kind() != reflect.Slice {
			return nil, ua.StatusBadIndexRangeInvalid
		}
		if lo >= rv.Len() {
			return nil, ua.StatusBadIndexRangeNoData
		}
		cut = rv.Slice(lo, min(hi+1, rv.Len())).Interface()
	}
	vr, err := ua.NewVariant(cut)
	if err != nil {
		return nil, ua.StatusBadIndexRangeInvalid
	}
	out := *dv
	out.Value = vr
	return &out, ua.StatusOK
}

// parseIndexRange parses "i" or "i:j" (i < j) of Part 4 §7.22.
func parseIndexRange(r string) (lo, hi int, ok bool) {
	a, b, isRange := strings.Cut(r, ":")
	lo, err := strconv.Atoi(a)
	if err != nil || lo < 0 {
		return 0, 0, false
	}
	if !isRange {
		return lo, lo, true
	}
	hi, err = strconv.Atoi(b)
	if err != nil || hi <= lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// checkDataEncoding validates ReadValueID.DataEncoding: only the Value of a
// structure can be asked for, and only in "Default Binary".
func checkDataEncoding(rv *ua.ReadValueID, dv *ua.DataValue) ua.StatusCode {
	de := rv.DataEncoding
	if de == nil || (de.Name == "" && de.NamespaceIndex == 0) {
		return ua.StatusOK
	}
	if rv.AttributeID != ua.AttributeIDValue || dv.Value == nil || dv.Value.Type() != ua.TypeIDExtensionObject {
		return ua.StatusBadDataEncodingInvalid
	}
	if de.NamespaceIndex != 0 || de.Name != "Default Binary" {
		return ua.StatusBadDataEncodingUnsupported
	}
	return ua.StatusOK
}
