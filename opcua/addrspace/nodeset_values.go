package addrspace

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"
)

// rawVariable holds what schema.UANodeSet drops of a UAVariable or
// UAVariableType element: its Value and whether ValueRank="0" was written
// explicitly (the schema default is -1, which encoding/xml cannot tell from
// an absent attribute).
type rawVariable struct {
	value         *ua.DataValue
	valueRankZero bool
}

// scanVariables finds every UAVariable and UAVariableType element of doc and
// decodes its Value. Values of an encoding this package does not decode are
// left out (the node then reads as a null value).
func scanVariables(doc []byte) (map[nodeKey]rawVariable, error) {
	out := make(map[nodeKey]rawVariable, 2048)
	open := []byte("<UAVariable")
	for pos := 0; ; {
		i := bytes.Index(doc[pos:], open)
		if i < 0 {
			return out, nil
		}
		start := pos + i
		tagEnd := bytes.IndexByte(doc[start:], '>')
		if tagEnd < 0 {
			return nil, fmt.Errorf("nodeset: unterminated tag at byte %d", start)
		}
		tag := doc[start : start+tagEnd+1]
		end := len(doc)
		if j := bytes.Index(doc[start+1:], []byte("<UA")); j >= 0 {
			end = start + 1 + j
		}
		pos = start + tagEnd + 1
		body := doc[pos:end]

		nid, err := ua.ParseNodeID(attr(tag, "NodeId"))
		if err != nil {
			return nil, fmt.Errorf("nodeset: variable at byte %d: %w", start, err)
		}
		var rv rawVariable
		rv.valueRankZero = attr(tag, "ValueRank") == "0"
		if v := bytes.Index(body, []byte("<Value>")); v >= 0 {
			if w := bytes.LastIndex(body, []byte("</Value>")); w > v {
				vr, err := decodeValue(body[v : w+len("</Value>")])
				if err != nil {
					return nil, fmt.Errorf("nodeset: value of %s: %w", nid, err)
				}
				if vr != nil {
					rv.value = &ua.DataValue{EncodingMask: ua.DataValueValue, Value: vr}
				}
			}
		}
		if rv.value != nil || rv.valueRankZero {
			out[keyOf(nid)] = rv
		}
	}
}

// attr returns the value of attribute name in the start tag tag.
func attr(tag []byte, name string) string {
	key := []byte(" " + name + `="`)
	i := bytes.Index(tag, key)
	if i < 0 {
		return ""
	}
	rest := tag[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// xnode is a generic XML element.
type xnode struct {
	XMLName  xml.Name
	Text     string  `xml:",chardata"`
	Children []xnode `xml:",any"`
}

func (x *xnode) child(name string) *xnode {
	for i := range x.Children {
		if x.Children[i].XMLName.Local == name {
			return &x.Children[i]
		}
	}
	return nil
}

func (x *xnode) text() string { return strings.TrimSpace(x.Text) }

// decodeValue decodes the <Value> element of a nodeset variable. It returns
// nil for encodings it does not know.
func decodeValue(b []byte) (*ua.Variant, error) {
	var v xnode
	if err := xml.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	if len(v.Children) != 1 {
		return nil, nil
	}
	val, ok, err := decodeElement(&v.Children[0])
	if err != nil || !ok {
		return nil, err
	}
	return ua.NewVariant(val)
}

func decodeElement(x *xnode) (any, bool, error) {
	name := x.XMLName.Local
	if elem, ok := strings.CutPrefix(name, "ListOf"); ok {
		return decodeList(x, elem)
	}
	return decodeScalar(x)
}

func decodeList(x *xnode, elem string) (any, bool, error) {
	switch elem {
	case "String":
		out := make([]string, 0, len(x.Children))
		for i := range x.Children {
			out = append(out, x.Children[i].text())
		}
		return out, true, nil
	case "LocalizedText":
		out := make([]*ua.LocalizedText, 0, len(x.Children))
		for i := range x.Children {
			out = append(out, xmlLocalizedText(&x.Children[i]))
		}
		return out, true, nil
	case "Int32":
		out := make([]int32, 0, len(x.Children))
		for i := range x.Children {
			n, err := strconv.ParseInt(x.Children[i].text(), 10, 32)
			if err != nil {
				return nil, false, err
			}
			out = append(out, int32(n))
		}
		return out, true, nil
	case "UInt32":
		out := make([]uint32, 0, len(x.Children))
		for i := range x.Children {
			n, err := strconv.ParseUint(x.Children[i].text(), 10, 32)
			if err != nil {
				return nil, false, err
			}
			out = append(out, uint32(n))
		}
		return out, true, nil
	case "ExtensionObject":
		out := make([]*ua.ExtensionObject, 0, len(x.Children))
		for i := range x.Children {
			eo, ok, err := xmlExtensionObject(&x.Children[i])
			if err != nil || !ok {
				return nil, false, err
			}
			out = append(out, eo)
		}
		return out, true, nil
	}
	return nil, false, nil
}

func decodeScalar(x *xnode) (any, bool, error) {
	s := x.text()
	switch x.XMLName.Local {
	case "Boolean":
		b, err := strconv.ParseBool(s)
		return b, err == nil, err
	case "Byte":
		n, err := strconv.ParseUint(s, 10, 8)
		return uint8(n), err == nil, err
	case "UInt16":
		n, err := strconv.ParseUint(s, 10, 16)
		return uint16(n), err == nil, err
	case "Int32":
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err == nil, err
	case "UInt32":
		n, err := strconv.ParseUint(s, 10, 32)
		return uint32(n), err == nil, err
	case "Int64":
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil, err
	case "Double":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil, err
	case "String":
		return s, true, nil
	case "DateTime":
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil, err
	case "LocalizedText":
		return xmlLocalizedText(x), true, nil
	case "ExtensionObject":
		return xmlExtensionObject(x)
	}
	return nil, false, nil
}

func xmlLocalizedText(x *xnode) *ua.LocalizedText {
	var locale, text string
	if l := x.child("Locale"); l != nil {
		locale = l.text()
	}
	if t := x.child("Text"); t != nil {
		text = t.text()
	}
	if locale != "" {
		return ua.NewLocalizedTextWithLocale(text, locale)
	}
	return ua.NewLocalizedText(text)
}

// xmlExtensionObject decodes the structures namespace 0 uses in its values:
// Argument (method arguments) and EnumValueType (EnumValues).
func xmlExtensionObject(x *xnode) (*ua.ExtensionObject, bool, error) {
	body := x.child("Body")
	if body == nil || len(body.Children) != 1 {
		return nil, false, nil
	}
	s := &body.Children[0]
	switch s.XMLName.Local {
	case "Argument":
		a := &ua.Argument{ValueRank: -1, DataType: ua.NewTwoByteNodeID(0), Description: ua.NewLocalizedText("")}
		if n := s.child("Name"); n != nil {
			a.Name = n.text()
		}
		if dt := s.child("DataType"); dt != nil {
			if idn := dt.child("Identifier"); idn != nil {
				nid, err := ua.ParseNodeID(idn.text())
				if err != nil {
					return nil, false, err
				}
				a.DataType = nid
			}
		}
		if vr := s.child("ValueRank"); vr != nil {
			n, err := strconv.ParseInt(vr.text(), 10, 32)
			if err != nil {
				return nil, false, err
			}
			a.ValueRank = int32(n)
		}
		if ad := s.child("ArrayDimensions"); ad != nil {
			for i := range ad.Children {
				n, err := strconv.ParseUint(ad.Children[i].text(), 10, 32)
				if err != nil {
					return nil, false, err
				}
				a.ArrayDimensions = append(a.ArrayDimensions, uint32(n))
			}
		}
		if d := s.child("Description"); d != nil {
			a.Description = xmlLocalizedText(d)
		}
		return ua.NewExtensionObject(a), true, nil
	case "EnumValueType":
		e := &ua.EnumValueType{DisplayName: ua.NewLocalizedText(""), Description: ua.NewLocalizedText("")}
		if v := s.child("Value"); v != nil {
			n, err := strconv.ParseInt(v.text(), 10, 64)
			if err != nil {
				return nil, false, err
			}
			e.Value = n
		}
		if d := s.child("DisplayName"); d != nil {
			e.DisplayName = xmlLocalizedText(d)
		}
		if d := s.child("Description"); d != nil {
			e.Description = xmlLocalizedText(d)
		}
		return ua.NewExtensionObject(e), true, nil
	}
	return nil, false, nil
}
