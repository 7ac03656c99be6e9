package deployment

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
)

// DecodeTypeless is Decode, except that a tag of an opcua device may leave
// out "type" (or give null): its Type is then "". It is the first step of
// `otopcua deploy`, which takes such a tag's type from the upstream's
// DataType, writes it into the text with WithTypes and decodes the result
// with Decode before storing it: a node never receives a tag without a
// type.
func DecodeTypeless(data []byte) (*Document, error) { return decode(data, true) }

// TagAt is a tag of a document by position: devices[Device].tags[Tag].
type TagAt struct {
	Device, Tag int
}

// Path is the tag's JSON path, "devices[0].tags[3]".
func (r TagAt) Path() string { return fmt.Sprintf("devices[%d].tags[%d]", r.Device, r.Tag) }

// WithTypes returns a copy of data, a document DecodeTypeless accepted,
// with each listed tag's "type" written as its object's first member (or,
// for "type": null, in the null's place). Every other byte is kept, so the
// operator's layout and comments-free text stay as written. Each type must
// be one of Types.
func WithTypes(data []byte, types map[TagAt]string) ([]byte, error) {
	var offset int64
	body := data
	if bytes.HasPrefix(body, bom) {
		body, offset = body[len(bom):], int64(len(bom))
	}
	root, err := parseTree(body, offset)
	if err != nil {
		return nil, err
	}
	type edit struct {
		start, end int64 // body[start:end] is replaced by text
		text       string
	}
	var edits []edit
	for ref, typ := range types {
		if !contains(Types, typ) {
			return nil, fmt.Errorf("%s.type: %q is not a tag type", ref.Path(), typ)
		}
		tag := elem(memberOf(elem(memberOf(root, "devices"), ref.Device), "tags"), ref.Tag)
		if tag == nil || tag.kind != kindObject {
			return nil, fmt.Errorf("%s: no such tag object in the document", ref.Path())
		}
		quoted := strconv.Quote(typ)
		switch old := memberOf(tag, "type"); {
		case old != nil && old.kind == kindNull:
			edits = append(edits, edit{old.start, old.end, quoted})
		case old != nil:
			return nil, fmt.Errorf("%s.type: already given (%s)", ref.Path(), body[old.start:old.end])
		case len(tag.members) == 0:
			edits = append(edits, edit{tag.start + 1, tag.start + 1, `"type": ` + quoted})
		default:
			edits = append(edits, edit{tag.start + 1, tag.start + 1, `"type": ` + quoted + `, `})
		}
	}
	slices.SortFunc(edits, func(a, b edit) int { return int(a.start - b.start) })
	out := make([]byte, 0, len(data)+len(edits)*24)
	out = append(out, data[:offset]...)
	at := int64(0)
	for _, e := range edits {
		out = append(out, body[at:e.start]...)
		out = append(out, e.text...)
		at = e.end
	}
	return append(out, body[at:]...), nil
}

// memberOf is the last member key of object n (nil: none, or n is not an
// object).
func memberOf(n *node, key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	var v *node
	for _, m := range n.members {
		if m.key == key {
			v = m.val
		}
	}
	return v
}

// elem is element i of list n (nil: none, or n is not a list).
func elem(n *node, i int) *node {
	if n == nil || n.kind != kindArray || i < 0 || i >= len(n.elems) {
		return nil
	}
	return n.elems[i]
}
