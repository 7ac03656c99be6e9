package deployment

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of an opcua tag's browsePath.
const (
	// MaxBrowsePathElements is the most elements of a browsePath.
	MaxBrowsePathElements = 32
	// MaxBrowsePathLen is the longest browsePath text, in bytes.
	MaxBrowsePathLen = 4096
)

// BrowseStep is one element of a BrowsePath: follow a forward reference
// (any HierarchicalReferences subtype, or with Aggregates any Aggregates
// subtype) to the target whose BrowseName is Name in the namespace given
// by index (Namespace) or by URI (NamespaceURI, looked up upstream).
type BrowseStep struct {
	Aggregates   bool
	Namespace    uint16
	NamespaceURI string
	Name         string
}

// BrowsePath is an opcua tag's upstream path from the Objects folder.
type BrowsePath []BrowseStep

// browseReserved are the characters of a browse name escaped with '&' in
// the text form (OPC UA Part 4 A.2).
const browseReserved = "/.<>:#!&"

// String is the path in the text form ParseBrowsePath reads.
func (p BrowsePath) String() string {
	var b strings.Builder
	for _, s := range p {
		if s.Aggregates {
			b.WriteByte('.')
		} else {
			b.WriteByte('/')
		}
		switch {
		case s.NamespaceURI != "":
			b.WriteString("nsu=" + s.NamespaceURI + ";")
		case s.Namespace != 0:
			b.WriteString(strconv.Itoa(int(s.Namespace)) + ":")
		}
		for _, r := range s.Name {
			if strings.ContainsRune(browseReserved, r) {
				b.WriteByte('&')
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ParseBrowsePath reads the text form of a relative path from the
// upstream's Objects folder (OPC UA Part 4 A.2, the '/' and '.' forms):
//
//	/2:Line1/2:Speed              HierarchicalReferences, namespace index 2
//	/nsu=urn:plc:line1;Line1/…    the namespace by URI, ended by ';'
//	/2:Motor.2:Speed              '.': an Aggregates reference (a property or component)
//	/Server/ServiceLevel          no prefix: namespace 0
//
// A browse name's reserved characters / . < > : # ! & are escaped with
// '&' ("/2:A&/B" is the name "A/B"). The '<referenceType>' form is not
// accepted. At most MaxBrowsePathElements elements and
// MaxBrowsePathLen bytes.
func ParseBrowsePath(s string) (BrowsePath, error) {
	switch {
	case s == "":
		return nil, fmt.Errorf("empty path")
	case len(s) > MaxBrowsePathLen:
		return nil, fmt.Errorf("longer than %d bytes", MaxBrowsePathLen)
	case !utf8.ValidString(s):
		return nil, fmt.Errorf("not UTF-8 text")
	}
	var p BrowsePath
	for i := 0; i < len(s); {
		var st BrowseStep
		switch s[i] {
		case '/':
		case '.':
			st.Aggregates = true
		case '<':
			return nil, fmt.Errorf("element %d: reference types in <> are not accepted; use / (hierarchical) or . (aggregates)", len(p)+1)
		default:
			return nil, fmt.Errorf("element %d: starts with %q, not / or .", len(p)+1, s[i])
		}
		i++
		next, err := parseStep(s, i, &st)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", len(p)+1, err)
		}
		i = next
		p = append(p, st)
		if len(p) > MaxBrowsePathElements {
			return nil, fmt.Errorf("more than %d elements", MaxBrowsePathElements)
		}
	}
	return p, nil
}

// parseStep reads one element's namespace prefix and name from s[i:] and
// returns the index after it.
func parseStep(s string, i int, st *BrowseStep) (int, error) {
	rest := s[i:]
	switch {
	case strings.HasPrefix(rest, "nsu="):
		end := strings.IndexByte(rest, ';')
		if end < 0 {
			return 0, fmt.Errorf("no ';' after the namespace URI")
		}
		st.NamespaceURI = rest[len("nsu="):end]
		if st.NamespaceURI == "" {
			return 0, fmt.Errorf("empty namespace URI")
		}
		i += end + 1
	default:
		k := 0
		for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
			k++
		}
		if k > 0 && k < len(rest) && rest[k] == ':' {
			n, err := strconv.ParseUint(rest[:k], 10, 16)
			if err != nil {
				return 0, fmt.Errorf("namespace index %q is not a number 0..65535", rest[:k])
			}
			st.Namespace = uint16(n)
			i += k + 1
		}
	}
	var name strings.Builder
	for ; i < len(s); i++ {
		c := s[i]
		if c == '&' {
			if i+1 == len(s) || !strings.ContainsRune(browseReserved, rune(s[i+1])) {
				return 0, fmt.Errorf("'&' escapes only one of %s", browseReserved)
			}
			i++
			name.WriteByte(s[i])
			continue
		}
		if c == '/' || c == '.' {
			break
		}
		if strings.IndexByte(browseReserved, c) >= 0 {
			return 0, fmt.Errorf("reserved character %q in a browse name: escape it as &%c", c, c)
		}
		name.WriteByte(c)
	}
	if name.Len() == 0 {
		return 0, fmt.Errorf("empty browse name")
	}
	st.Name = name.String()
	return i, nil
}
