package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// parseNodeID parses a NodeId in its text form with an explicit identifier
// type: [ns=N;]i=…, s=…, g=… or b=…. ua.ParseNodeID alone reads any other
// text as a string id in namespace 0 ("2267" would be s=2267), which is
// never what a command line means, and would make "ns" a NodeId when
// splitting NODE=VALUE.
func parseNodeID(s string) (*ua.NodeID, error) {
	bad := fmt.Errorf("%q is not a NodeId (such as i=2267, ns=2;s=Tank, ns=1;g=GUID, ns=1;b=BASE64)", s)
	rest := s
	if strings.HasPrefix(rest, "ns=") {
		semi := strings.IndexByte(rest, ';')
		if semi < 0 {
			return nil, bad
		}
		if _, err := strconv.ParseUint(rest[3:semi], 10, 16); err != nil {
			return nil, bad
		}
		rest = rest[semi+1:]
	}
	if len(rest) < 3 || rest[1] != '=' || !strings.ContainsRune("isgb", rune(rest[0])) {
		return nil, bad
	}
	n, err := ua.ParseNodeID(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a NodeId: %v", s, err)
	}
	return n, nil
}

// specName turns gopcua's Go-style status names back into the names of
// OPC UA Part 6 (StatusCode.csv): BadNodeIDUnknown → BadNodeIdUnknown.
var specName = strings.NewReplacer("ID", "Id", "URI", "Uri", "URL", "Url", "TCP", "Tcp")

// statusName is the OPC UA name of a status code ("Good",
// "BadNodeIdUnknown"), or its hex value when gopcua does not know it. The
// info bits (the low 16) are ignored.
func statusName(c ua.StatusCode) string {
	base := c & 0xFFFF0000
	switch base {
	case ua.StatusGood:
		return "Good"
	case ua.StatusUncertain:
		return "Uncertain"
	case ua.StatusBad:
		return "Bad"
	}
	if d, ok := ua.StatusCodes[base]; ok && strings.HasPrefix(d.Name, "Status") {
		return specName.Replace(strings.TrimPrefix(d.Name, "Status"))
	}
	return fmt.Sprintf("0x%08X", uint32(c))
}

// isGood: the severity bits say Good (neither Uncertain nor Bad).
func isGood(c ua.StatusCode) bool { return c&0xC0000000 == 0 }

// builtinNames are the OPC UA names of the built-in types (Part 6 §5.1.2).
var builtinNames = map[ua.TypeID]string{
	ua.TypeIDNull: "Null", ua.TypeIDBoolean: "Boolean", ua.TypeIDSByte: "SByte", ua.TypeIDByte: "Byte",
	ua.TypeIDInt16: "Int16", ua.TypeIDUint16: "UInt16", ua.TypeIDInt32: "Int32", ua.TypeIDUint32: "UInt32",
	ua.TypeIDInt64: "Int64", ua.TypeIDUint64: "UInt64", ua.TypeIDFloat: "Float", ua.TypeIDDouble: "Double",
	ua.TypeIDString: "String", ua.TypeIDDateTime: "DateTime", ua.TypeIDGUID: "Guid",
	ua.TypeIDByteString: "ByteString", ua.TypeIDXMLElement: "XmlElement", ua.TypeIDNodeID: "NodeId",
	ua.TypeIDExpandedNodeID: "ExpandedNodeId", ua.TypeIDStatusCode: "StatusCode",
	ua.TypeIDQualifiedName: "QualifiedName", ua.TypeIDLocalizedText: "LocalizedText",
	ua.TypeIDExtensionObject: "ExtensionObject", ua.TypeIDDataValue: "DataValue",
	ua.TypeIDVariant: "Variant", ua.TypeIDDiagnosticInfo: "DiagnosticInfo",
}

// typeName names a variant's type: the built-in type, or for a decoded
// structure its type ("ServerStatusDataType"). An array is named by its
// element type, as the DataType attribute does.
func typeName(v *ua.Variant) string {
	if v == nil {
		return "Null"
	}
	if v.Type() == ua.TypeIDExtensionObject {
		if eo, ok := v.Value().(*ua.ExtensionObject); ok && eo != nil && eo.Value != nil {
			if t := reflect.Indirect(reflect.ValueOf(eo.Value)).Type(); t.Name() != "" {
				return t.Name()
			}
		}
	}
	if n, ok := builtinNames[v.Type()]; ok {
		return n
	}
	return v.Type().String()
}

// variantValue is the Go value of v, nil for none.
func variantValue(v *ua.Variant) any {
	if v == nil {
		return nil
	}
	return v.Value()
}

// jsonValue turns a decoded OPC UA value into something encoding/json
// writes as the contract says: numbers as numbers, strings as strings,
// DateTime as RFC3339Nano, ByteString as base64, arrays as arrays,
// NodeId/QualifiedName/LocalizedText in their text form, structures as
// objects of their fields. NaN and ±Inf, which JSON lacks, become the
// strings "NaN", "Infinity" and "-Infinity" (as OPC UA's JSON encoding).
func jsonValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case bool, string, int8, int16, int32, int64, uint8, uint16, uint32, uint64, int, uint:
		return x
	case float32:
		return jsonFloat(float64(x))
	case float64:
		return jsonFloat(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case ua.XMLElement:
		return string(x)
	case ua.StatusCode:
		return statusName(x)
	case *ua.NodeID:
		return nodeText(x)
	case *ua.ExpandedNodeID:
		return expandedText(x)
	case *ua.QualifiedName:
		return qualifiedText(x)
	case *ua.LocalizedText:
		if x == nil {
			return nil
		}
		return x.Text
	case *ua.GUID:
		if x == nil {
			return nil
		}
		return x.String()
	case *ua.Variant:
		return jsonValue(variantValue(x))
	case *ua.DataValue:
		if x == nil {
			return nil
		}
		return map[string]any{"value": jsonValue(variantValue(x.Value)), "status": statusName(x.Status)}
	case *ua.ExtensionObject:
		if x == nil {
			return nil
		}
		if x.Value == nil {
			return map[string]any{"typeId": expandedText(x.TypeID)}
		}
		return jsonValue(x.Value)
	case *ua.DiagnosticInfo:
		return nil
	}
	return jsonReflect(reflect.ValueOf(v))
}

func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// jsonReflect handles slices, structures and named numeric types (enums).
func jsonReflect(rv reflect.Value) any {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return jsonValue(rv.Elem().Interface())
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = jsonValue(rv.Index(i).Interface())
		}
		return out
	case reflect.Struct:
		out := map[string]any{}
		t := rv.Type()
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() {
				out[f.Name] = jsonValue(rv.Field(i).Interface())
			}
		}
		return out
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		return jsonFloat(rv.Float())
	case reflect.String:
		return rv.String()
	}
	return fmt.Sprint(rv.Interface())
}

// textValue is a value for the text output: strings, DateTimes and the
// text forms of NodeId, QualifiedName and LocalizedText bare, numbers as
// numbers, arrays and structures as compact JSON, "-" for no value.
func textValue(v any) string {
	j := jsonValue(v)
	switch x := j.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return `""`
		}
		return x
	}
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func nodeText(n *ua.NodeID) string {
	if n == nil {
		return ""
	}
	return n.String()
}

func expandedText(n *ua.ExpandedNodeID) string {
	if n == nil || n.NodeID == nil {
		return ""
	}
	s := n.NodeID.String()
	if n.NamespaceURI != "" {
		// nsu= replaces ns= (Part 6 §5.3.1.11).
		s = "nsu=" + n.NamespaceURI + ";" + strings.TrimPrefix(s, fmt.Sprintf("ns=%d;", n.NodeID.Namespace()))
	}
	if n.ServerIndex != 0 {
		s = fmt.Sprintf("svr=%d;%s", n.ServerIndex, s)
	}
	return s
}

func qualifiedText(q *ua.QualifiedName) string {
	if q == nil {
		return ""
	}
	if q.NamespaceIndex == 0 {
		return q.Name
	}
	return fmt.Sprintf("%d:%s", q.NamespaceIndex, q.Name)
}

// referenceTypeName names a reference type: its standard name
// ("Organizes") for a namespace-0 numeric id gopcua knows, else its NodeId.
func referenceTypeName(n *ua.NodeID) string {
	if n == nil {
		return ""
	}
	if n.Namespace() == 0 && n.Type() <= ua.NodeIDTypeNumeric {
		if name := id.Name(n.IntID()); name != strconv.FormatUint(uint64(n.IntID()), 10) {
			return name
		}
	}
	return n.String()
}

// nodeClassName is "Object", "Variable", … (gopcua says "NodeClassObject").
func nodeClassName(c ua.NodeClass) string {
	return strings.TrimPrefix(c.String(), "NodeClass")
}

// writeTypes are the :type suffixes of write and the variant type each
// converts to.
var writeTypes = map[string]ua.TypeID{
	"bool": ua.TypeIDBoolean, "sbyte": ua.TypeIDSByte, "byte": ua.TypeIDByte,
	"int16": ua.TypeIDInt16, "uint16": ua.TypeIDUint16, "int32": ua.TypeIDInt32,
	"uint32": ua.TypeIDUint32, "int64": ua.TypeIDInt64, "uint64": ua.TypeIDUint64,
	"float": ua.TypeIDFloat, "double": ua.TypeIDDouble, "string": ua.TypeIDString,
	"datetime": ua.TypeIDDateTime,
}

// writeTypeList is the accepted suffixes, for messages.
const writeTypeList = "bool, sbyte, byte, int16, uint16, int32, uint32, int64, uint64, float, double, string, datetime"

// suffixOf is the :type suffix that converts to t ("" when none does).
func suffixOf(t ua.TypeID) string {
	for k, v := range writeTypes {
		if v == t {
			return k
		}
	}
	return ""
}

// convertValue converts the text s to a variant of type t. Numbers are
// decimal; bool takes true/false/1/0; datetime takes RFC 3339
// (2026-11-30T01:02:03.456Z).
func convertValue(s string, t ua.TypeID) (*ua.Variant, error) {
	v, err := convertGo(s, t)
	if err != nil {
		return nil, err
	}
	return ua.NewVariant(v)
}

func convertGo(s string, t ua.TypeID) (any, error) {
	n := strings.TrimSpace(s)
	switch t {
	case ua.TypeIDBoolean:
		return strconv.ParseBool(n)
	case ua.TypeIDSByte:
		v, err := strconv.ParseInt(n, 10, 8)
		return int8(v), err
	case ua.TypeIDByte:
		v, err := strconv.ParseUint(n, 10, 8)
		return uint8(v), err
	case ua.TypeIDInt16:
		v, err := strconv.ParseInt(n, 10, 16)
		return int16(v), err
	case ua.TypeIDUint16:
		v, err := strconv.ParseUint(n, 10, 16)
		return uint16(v), err
	case ua.TypeIDInt32:
		v, err := strconv.ParseInt(n, 10, 32)
		return int32(v), err
	case ua.TypeIDUint32:
		v, err := strconv.ParseUint(n, 10, 32)
		return uint32(v), err
	case ua.TypeIDInt64:
		return strconv.ParseInt(n, 10, 64)
	case ua.TypeIDUint64:
		return strconv.ParseUint(n, 10, 64)
	case ua.TypeIDFloat:
		v, err := strconv.ParseFloat(n, 32)
		return float32(v), err
	case ua.TypeIDDouble:
		return strconv.ParseFloat(n, 64)
	case ua.TypeIDString:
		return s, nil
	case ua.TypeIDDateTime:
		return time.Parse(time.RFC3339, n)
	}
	return nil, fmt.Errorf("writing a %s is not supported", builtinNames[t])
}

// writeArg is one parsed NODE=VALUE[:type] argument.
type writeArg struct {
	node  *ua.NodeID
	value string      // the VALUE text
	typ   ua.TypeID   // the :type, or the node's current type once read
	typed bool        // a :type was given
	v     *ua.Variant // the converted value (set when typed)
}

// parseWriteArg splits NODE=VALUE[:type]. NODE is the shortest prefix
// before an '=' that is a NodeId, so ns=2;s=Tank=5 writes 5 to
// ns=2;s=Tank. :type is a suffix after the last ':' that names a type of
// writeTypes; any other ':' belongs to VALUE. A typed value is converted
// at once.
func parseWriteArg(s string) (writeArg, error) {
	var a writeArg
	rest, found := "", false
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			continue
		}
		if n, err := parseNodeID(s[:i]); err == nil {
			a.node, rest, found = n, s[i+1:], true
			break
		}
	}
	if !found {
		return a, fmt.Errorf("write %q: want NODE=VALUE[:type] with NODE a NodeId such as i=2267 or ns=2;s=Tank", s)
	}
	a.value = rest
	if j := strings.LastIndexByte(rest, ':'); j >= 0 {
		if t, ok := writeTypes[rest[j+1:]]; ok {
			a.value, a.typ, a.typed = rest[:j], t, true
		}
	}
	if a.typed {
		v, err := convertValue(a.value, a.typ)
		if err != nil {
			return a, conversionError(a.node, a.value, a.typ, err)
		}
		a.v = v
	}
	return a, nil
}

// conversionError names the node, the value and the type.
func conversionError(n *ua.NodeID, value string, t ua.TypeID, err error) error {
	name := suffixOf(t)
	if name == "" {
		name = builtinNames[t]
	}
	if ne, ok := err.(*strconv.NumError); ok {
		err = ne.Err
	}
	hint := ""
	if j := strings.LastIndexByte(value, ':'); j >= 0 && isTypeLike(value[j+1:]) {
		hint = fmt.Sprintf(" (%q is not a type this client writes: %s)", value[j+1:], writeTypeList)
	}
	return fmt.Errorf("write %s: value %q does not convert to %s: %v%s", n, value, name, err, hint)
}

// isTypeLike: a suffix that looks like a type name someone meant
// ("float128"), not part of a value ("12:30").
func isTypeLike(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
