package hoconcompat

import (
	"fmt"
	"strings"
)

// Pos is a position in a HOCON file: 1-based line and column (columns count
// characters, not bytes). The zero Pos means "not from a file".
type Pos struct {
	File string
	Line int
	Col  int
}

// IsValid reports whether p points into a file.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String renders p as file:line:column.
func (p Pos) String() string {
	if !p.IsValid() {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// SyntaxError is a HOCON file that cannot be read, located by file, line
// and column.
type SyntaxError struct {
	Pos Pos
	Msg string
}

func (e *SyntaxError) Error() string { return e.Pos.String() + ": " + e.Msg }

// Warning is something that does not stop otopcua but that the operator
// should know: an ignored include, an environment substitution, a setting
// otopcua does not read, or a conflict between appsettings.json and
// akka.conf.
type Warning struct {
	// Pos is where in the HOCON file the warning points; zero when it is
	// not about one place in a file.
	Pos Pos
	// Key is the setting concerned, as a HOCON path
	// ("akka.cluster.split-brain-resolver.stable-after") or an
	// appsettings.json key ("Cluster:StableAfter"); "" when none.
	Key string
	// Msg says what happened and what otopcua does about it.
	Msg string
}

// String renders the warning as "file:line:col: key: message".
func (w Warning) String() string {
	var b strings.Builder
	if w.Pos.IsValid() {
		b.WriteString(w.Pos.String() + ": ")
	}
	if w.Key != "" {
		b.WriteString(w.Key + ": ")
	}
	b.WriteString(w.Msg)
	return b.String()
}

// Kind is the type of a resolved HOCON value.
type Kind uint8

// Kinds of resolved values. HOCON's yes/no/on/off are strings that read as
// booleans (Value.Bool); only true and false are of kind Bool.
const (
	Null Kind = iota + 1
	Bool
	Number
	String
	Object
	Array

	// Unresolved kinds, present only while a file is being parsed.
	kindSubst  // ${path} or ${?path}
	kindConcat // value concatenation on one line: "a" ${b} 15 s
	kindMerge  // repeated assignments to one key involving a substitution
)

var kindNames = map[Kind]string{
	Null: "null", Bool: "boolean", Number: "number", String: "string", Object: "object", Array: "list",
	kindSubst: "substitution", kindConcat: "concatenation", kindMerge: "merge",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Value is one HOCON value. Values returned by a Document are resolved: no
// substitution or concatenation is left. A Value is read-only for callers;
// a resolved document may share one Value between several paths.
type Value struct {
	kind Kind
	pos  Pos

	text string // scalars: the string content, or the number as written

	keys   []string          // Object: keys in first-seen order (may hold deleted keys)
	fields map[string]*Value // Object

	elems []*Value // Array

	// Unresolved values.
	path     []string // kindSubst: the absolute path looked up
	optional bool     // kindSubst: ${?path}
	self     bool     // kindSubst: refers to the field being defined; prev holds its earlier value
	prev     *Value   // kindSubst with self: the earlier value, nil when none
	parts    []*Value // kindConcat, kindMerge
	spaces   []string // kindConcat: whitespace before parts[i] (spaces[0] is "")
}

// Kind returns the type of v.
func (v *Value) Kind() Kind { return v.kind }

// Pos returns where v starts in its file.
func (v *Value) Pos() Pos { return v.pos }

// Text returns a scalar as written: a string's content, a number's digits,
// "true", "false" or "null". It is "" for objects and lists.
func (v *Value) Text() string { return v.text }

// Keys returns an object's keys in the order they first appeared.
func (v *Value) Keys() []string {
	out := make([]string, 0, len(v.fields))
	for _, k := range v.keys {
		if _, ok := v.fields[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// Field returns an object's field, or nil when v is not an object or has no
// such key.
func (v *Value) Field(key string) *Value {
	if v == nil || v.kind != Object {
		return nil
	}
	return v.fields[key]
}

// Elems returns a list's elements.
func (v *Value) Elems() []*Value { return v.elems }

func newObject(pos Pos) *Value {
	return &Value{kind: Object, pos: pos, fields: map[string]*Value{}}
}

// put sets an object field, remembering the key order.
func (v *Value) put(key string, val *Value) {
	if _, ok := v.fields[key]; !ok {
		v.keys = append(v.keys, key)
	}
	v.fields[key] = val
}

// resolved reports whether v is of a resolved kind.
func (v *Value) resolved() bool { return v.kind < kindSubst }

// isScalar reports whether v is a resolved null, boolean, number or string.
func (v *Value) isScalar() bool {
	return v.kind == Null || v.kind == Bool || v.kind == Number || v.kind == String
}

// describe renders a value for messages: scalars quoted as needed, lists
// and objects abbreviated.
func (v *Value) describe() string {
	switch v.kind {
	case String:
		return quote(v.text)
	case Object:
		return "{...}"
	case Array:
		return "[...]"
	}
	return v.text
}

// Document is a parsed and resolved HOCON file.
type Document struct {
	name     string
	root     *Value
	warnings []Warning
}

// Name returns the file name given to Parse.
func (d *Document) Name() string { return d.name }

// Root returns the root object.
func (d *Document) Root() *Value { return d.root }

// Warnings returns what Parse noticed but did not treat as an error:
// ignored include lines and substitutions that HOCON would read from the
// environment.
func (d *Document) Warnings() []Warning { return append([]Warning(nil), d.warnings...) }

// Get returns the value at a HOCON path such as
// "akka.cluster.split-brain-resolver.stable-after" (segments may be
// quoted: `akka.actor."serialization-bindings"`), or nil when there is none
// or the path does not parse.
func (d *Document) Get(path string) *Value {
	segs, err := parsePathExpr(path)
	if err != nil {
		return nil
	}
	return d.lookup(segs)
}

func (d *Document) lookup(segs []string) *Value {
	v := d.root
	for _, s := range segs {
		v = v.Field(s)
		if v == nil {
			return nil
		}
	}
	return v
}

// quote renders s as a HOCON quoted string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// pathString renders path segments as a HOCON path, quoting segments that
// need it.
func pathString(segs []string) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		if s == "" || strings.ContainsAny(s, ".\"$ {}[]:=,+#`^?!@*&\\\t\n\r") || strings.Contains(s, "//") {
			parts[i] = quote(s)
		} else {
			parts[i] = s
		}
	}
	return strings.Join(parts, ".")
}
