package hoconcompat

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of objects and lists, so that a hostile file
// cannot exhaust the stack.
const maxDepth = 200

// Parse reads a HOCON file: the subset real akka.conf files use (see the
// package documentation). name appears in error and warning positions.
// Substitutions are resolved before Parse returns; errors are
// *SyntaxError values naming name:line:column.
func Parse(name string, data []byte) (*Document, error) {
	p := &parser{name: name, src: data, line: 1, col: 1}
	root, err := p.document()
	if err != nil {
		return nil, err
	}
	r := newResolver(root, &p.warnings)
	if err := r.resolveRoot(); err != nil {
		return nil, err
	}
	return &Document{name: name, root: root, warnings: p.warnings}, nil
}

type parser struct {
	name      string
	src       []byte
	off       int
	line, col int
	depth     int
	warnings  []Warning
}

func (p *parser) pos() Pos { return Pos{File: p.name, Line: p.line, Col: p.col} }

func (p *parser) errAt(pos Pos, format string, args ...any) error {
	return &SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) errf(format string, args ...any) error {
	return p.errAt(p.pos(), format, args...)
}

func (p *parser) eof() bool { return p.off >= len(p.src) }

// peek returns the next byte, 0 at the end.
func (p *parser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.src[p.off]
}

func (p *parser) hasPrefix(s string) bool {
	return p.off+len(s) <= len(p.src) && string(p.src[p.off:p.off+len(s)]) == s
}

// advance consumes n bytes, keeping line and column.
func (p *parser) advance(n int) {
	for i := 0; i < n && p.off < len(p.src); i++ {
		c := p.src[p.off]
		p.off++
		switch {
		case c == '\n':
			p.line++
			p.col = 1
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte
			p.col++
		}
	}
}

// isSpace reports HOCON whitespace other than the newline.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' }

// skipSpaces skips whitespace on the current line, including a byte order
// mark and a non-breaking space.
func (p *parser) skipSpaces() {
	for !p.eof() {
		switch {
		case isSpace(p.peek()):
			p.advance(1)
		case p.hasPrefix("\ufeff"), p.hasPrefix("\u00a0"):
			_, n := utf8.DecodeRune(p.src[p.off:])
			p.advance(n)
		default:
			return
		}
	}
}

func (p *parser) atComment() bool { return p.peek() == '#' || p.hasPrefix("//") }

// skipLine skips whitespace and a comment, stopping before the newline.
func (p *parser) skipLine() {
	p.skipSpaces()
	if p.atComment() {
		for !p.eof() && p.peek() != '\n' {
			p.advance(1)
		}
	}
}

// skipAll skips whitespace, newlines and comments.
func (p *parser) skipAll() {
	for {
		p.skipLine()
		if p.peek() != '\n' {
			return
		}
		p.advance(1)
	}
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errf("nesting deeper than %d objects and lists", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// document parses the whole file: an object with or without braces.
func (p *parser) document() (*Value, error) {
	root := newObject(Pos{File: p.name, Line: 1, Col: 1})
	p.skipAll()
	closing := byte(0)
	if p.peek() == '{' {
		p.advance(1)
		closing = '}'
	} else if p.peek() == '[' {
		return nil, p.errf("a list at the top of the file is not an akka.conf; expected key = value lines or { ... }")
	}
	open := p.pos()
	if err := p.objectBody(root, []string{}, closing, open); err != nil {
		return nil, err
	}
	p.skipAll()
	if !p.eof() {
		return nil, p.errf("unexpected %s after the end of the root object", p.describeNext())
	}
	return root, nil
}

// describeNext names the next character for an error message.
func (p *parser) describeNext() string {
	if p.eof() {
		return "end of file"
	}
	if p.peek() == '\n' {
		return "end of line"
	}
	r, _ := utf8.DecodeRune(p.src[p.off:])
	return strconv.QuoteRune(r)
}

// objectBody parses fields into obj until closing ('}' or 0 for the end of
// the file). prefix is obj's absolute path when obj is part of the root
// tree (empty, not nil, for the root), nil otherwise (an object inside a
// list or a concatenation).
func (p *parser) objectBody(obj *Value, prefix []string, closing byte, open Pos) error {
	if err := p.enter(); err != nil {
		return err
	}
	defer p.leave()
	for {
		p.skipAll()
		switch {
		case p.eof():
			if closing != 0 {
				return p.errf("missing '}' to close the object opened at line %d column %d", open.Line, open.Col)
			}
			return nil
		case closing != 0 && p.peek() == closing:
			p.advance(1)
			return nil
		case p.peek() == '}':
			return p.errf("unexpected '}' without a matching '{'")
		case p.peek() == ',':
			return p.errf("unexpected ',': expected a key")
		}
		if err := p.field(obj, prefix); err != nil {
			return err
		}
		p.skipLine()
		switch {
		case p.peek() == ',':
			p.advance(1)
		case p.peek() == '\n', p.eof(), closing != 0 && p.peek() == closing:
		default:
			return p.errf("unexpected %s after a value: expected ',', a new line or '}'", p.describeNext())
		}
	}
}

// includeForms are the arguments an include line may start with.
var includeForms = []string{`"`, "file(", "url(", "classpath(", "required("}

// field parses one "key = value", "key { ... }", "key += value" or include
// line into obj.
func (p *parser) field(obj *Value, prefix []string) error {
	start := p.pos()
	if ok, err := p.include(start); ok || err != nil {
		return err
	}
	key, err := p.pathExpr()
	if err != nil {
		return err
	}
	full := append(append([]string(nil), prefix...), key...)
	p.skipSpaces()
	if p.peek() == '\n' || p.atComment() {
		p.skipAll() // only "key" NEWLINE "{" may span lines
		if p.peek() != '{' {
			return p.errf("unexpected %s after key %s: expected '=', ':', '+=' or '{' on the same line", p.describeNext(), pathString(key))
		}
	}
	switch {
	case p.peek() == '{':
		return p.objectField(obj, key, prefix, full)
	case p.peek() == '=' || p.peek() == ':':
		p.advance(1)
		p.skipSpaces()
		if p.peek() == '{' {
			return p.objectField(obj, key, prefix, full)
		}
		v, err := p.value()
		if err != nil {
			return err
		}
		if prefix != nil {
			bindSelf(v, full, lookupLocal(obj, key))
		}
		p.set(obj, key, v, start)
		return nil
	case p.hasPrefix("+="):
		p.advance(2)
		p.skipSpaces()
		v, err := p.value()
		if err != nil {
			return err
		}
		list := &Value{kind: Array, pos: v.pos, elems: []*Value{v}}
		self := &Value{kind: kindSubst, pos: start, path: full, optional: true, self: true, prev: lookupLocal(obj, key)}
		cat := &Value{kind: kindConcat, pos: start, parts: []*Value{self, list}, spaces: []string{"", ""}}
		p.set(obj, key, cat, start)
		return nil
	}
	return p.errf("unexpected %s after key %s: expected '=', ':', '+=' or '{'", p.describeNext(), pathString(key))
}

// objectField parses "key { ... }" straight into the tree, so that it merges
// with what the key already holds and self-references inside see it.
func (p *parser) objectField(obj *Value, key, prefix, full []string) error {
	open := p.pos()
	p.advance(1) // '{'
	target := p.descend(obj, key, open)
	var childPrefix []string
	if prefix != nil {
		childPrefix = full
	}
	if err := p.objectBody(target, childPrefix, '}', open); err != nil {
		return err
	}
	p.skipSpaces()
	if !p.eof() && !p.atComment() && !strings.ContainsRune(",\n}]", rune(p.peek())) {
		return p.errf("a value after an object on the same line is not supported; put it on its own line")
	}
	return nil
}

// include recognises an include line, skips it and records a warning.
func (p *parser) include(start Pos) (bool, error) {
	if !p.hasPrefix("include") {
		return false, nil
	}
	save, line, col := p.off, p.line, p.col
	p.advance(len("include"))
	if !isSpace(p.peek()) {
		p.off, p.line, p.col = save, line, col
		return false, nil
	}
	p.skipSpaces()
	form := ""
	for _, f := range includeForms {
		if p.hasPrefix(f) {
			form = f
		}
	}
	if form == "" {
		p.off, p.line, p.col = save, line, col
		return false, nil
	}
	argStart := p.off
	if form == `"` {
		if _, err := p.quoted(); err != nil {
			return true, err
		}
	} else if err := p.skipParens(); err != nil {
		return true, err
	}
	arg := string(p.src[argStart:p.off])
	p.warnings = append(p.warnings, Warning{Pos: start, Msg: fmt.Sprintf("include %s ignored: otopcua reads this one file only; copy the settings you need into it", arg)})
	return true, nil
}

// skipParens skips name( ... ) with nested parentheses and quoted strings.
func (p *parser) skipParens() error {
	start := p.pos()
	depth := 0
	for !p.eof() {
		switch c := p.peek(); c {
		case '"':
			if _, err := p.quoted(); err != nil {
				return err
			}
			continue
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				p.advance(1)
				return nil
			}
		case '\n':
			return p.errAt(start, "include line not closed with ')'")
		}
		p.advance(1)
	}
	return p.errAt(start, "include line not closed with ')'")
}

// lookupLocal returns the value at key below obj as the tree holds it now,
// or nil; it does not look through unresolved values.
func lookupLocal(obj *Value, key []string) *Value {
	v := obj
	for _, k := range key {
		if v == nil || v.kind != Object {
			return nil
		}
		v = v.fields[k]
	}
	return v
}

// bindSelf marks the substitutions of v that refer to the field being
// defined (full) as self-references to its earlier value prev, as HOCON's
// "path = ${path} ..." requires.
func bindSelf(v *Value, full []string, prev *Value) {
	switch v.kind {
	case kindSubst:
		if equalPath(v.path, full) {
			v.self, v.prev = true, prev
		}
	case kindConcat:
		for _, part := range v.parts {
			bindSelf(part, full, prev)
		}
	}
}

func equalPath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// descend returns the object at key below obj, creating it or turning
// what is there into an object as a HOCON assignment of an object would.
func (p *parser) descend(obj *Value, key []string, pos Pos) *Value {
	for _, k := range key {
		cur, ok := obj.fields[k]
		switch {
		case ok && cur.kind == Object:
			obj = cur
		case ok && !cur.resolved():
			if cur.kind == kindMerge {
				if last := cur.parts[len(cur.parts)-1]; last.kind == Object {
					obj = last
					continue
				}
			}
			n := newObject(pos)
			obj.put(k, mergeNode(cur, n, pos))
			obj = n
		default:
			n := newObject(pos)
			obj.put(k, n)
			obj = n
		}
	}
	return obj
}

// set assigns v at key below obj: a later value wins, two objects merge.
func (p *parser) set(obj *Value, key []string, v *Value, pos Pos) {
	parent := p.descend(obj, key[:len(key)-1], pos)
	k := key[len(key)-1]
	parent.put(k, assign(parent.fields[k], v, pos))
}

// assign returns what a field holds after old is overridden by v.
func assign(old, v *Value, pos Pos) *Value {
	switch {
	case old == nil:
		return v
	case v.resolved() && v.kind != Object:
		return v
	case v.kind == Object && old.kind == Object:
		for _, k := range v.Keys() {
			old.put(k, assign(old.fields[k], v.fields[k], pos))
		}
		return old
	case v.kind == Object && old.resolved():
		return v
	}
	return mergeNode(old, v, pos)
}

// mergeNode records "old, then v" for resolution.
func mergeNode(old, v *Value, pos Pos) *Value {
	parts := []*Value{old, v}
	if old.kind == kindMerge {
		parts = append(append([]*Value(nil), old.parts...), v)
	}
	return &Value{kind: kindMerge, pos: pos, parts: parts}
}

// value parses a value up to the end of the line, a ',', '}' or ']':
// one simple value, list, object or substitution, or a concatenation of
// them.
func (p *parser) value() (*Value, error) {
	start := p.pos()
	var parts []*Value
	var spaces []string
	space := ""
	for {
		c := p.peek()
		if p.eof() || c == '\n' || c == ',' || c == '}' || c == ']' || p.atComment() {
			break
		}
		if isSpace(c) || p.hasPrefix("\ufeff") || p.hasPrefix("\u00a0") {
			from := p.off
			p.skipSpaces()
			space += string(p.src[from:p.off])
			continue
		}
		v, err := p.simple()
		if err != nil {
			return nil, err
		}
		if len(parts) == 0 {
			space = ""
		}
		parts = append(parts, v)
		spaces = append(spaces, space)
		space = ""
	}
	switch len(parts) {
	case 0:
		return nil, p.errf("expected a value, found %s", p.describeNext())
	case 1:
		return parts[0], nil
	}
	return &Value{kind: kindConcat, pos: start, parts: parts, spaces: spaces}, nil
}

// simple parses one element of a value: a quoted string, a substitution,
// an object, a list or an unquoted token.
func (p *parser) simple() (*Value, error) {
	start := p.pos()
	switch c := p.peek(); {
	case c == '"':
		s, err := p.quoted()
		if err != nil {
			return nil, err
		}
		return &Value{kind: String, pos: start, text: s}, nil
	case p.hasPrefix("${"):
		return p.substitution()
	case c == '{':
		p.advance(1)
		obj := newObject(start)
		if err := p.objectBody(obj, nil, '}', start); err != nil {
			return nil, err
		}
		return obj, nil
	case c == '[':
		return p.list()
	}
	tok := p.unquoted(false)
	if tok == "" {
		return nil, p.errf("unexpected %s in a value: quote strings that contain it", p.describeNext())
	}
	return token(tok, start), nil
}

var numberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE]-?[0-9]+)?$`)

// token types an unquoted token.
func token(tok string, pos Pos) *Value {
	switch {
	case tok == "true" || tok == "false":
		return &Value{kind: Bool, pos: pos, text: tok}
	case tok == "null":
		return &Value{kind: Null, pos: pos, text: tok}
	case numberRE.MatchString(tok):
		return &Value{kind: Number, pos: pos, text: tok}
	}
	return &Value{kind: String, pos: pos, text: tok}
}

// forbidden are the characters that end an unquoted string.
const forbidden = "$\"{}[]:=,+#`^?!@*&\\"

// unquoted reads an unquoted token; in a key, '.' ends it too.
func (p *parser) unquoted(inKey bool) string {
	from := p.off
	for !p.eof() {
		c := p.peek()
		if isSpace(c) || c == '\n' || strings.IndexByte(forbidden, c) >= 0 || p.hasPrefix("//") ||
			inKey && c == '.' || p.hasPrefix("\ufeff") || p.hasPrefix("\u00a0") {
			break
		}
		p.advance(1)
	}
	return string(p.src[from:p.off])
}

// quoted reads a "quoted" or """triple-quoted""" string.
func (p *parser) quoted() (string, error) {
	start := p.pos()
	if p.hasPrefix(`"""`) {
		p.advance(3)
		from := p.off
		for !p.eof() {
			if p.hasPrefix(`"""`) {
				// The closing quotes are the last three of a run.
				for p.off+3 < len(p.src) && p.src[p.off+3] == '"' {
					p.advance(1)
				}
				s := string(p.src[from:p.off])
				p.advance(3)
				return s, nil
			}
			p.advance(1)
		}
		return "", p.errAt(start, `unterminated """ string`)
	}
	p.advance(1)
	var b strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			return "", p.errAt(start, "unterminated quoted string")
		}
		c := p.peek()
		switch {
		case c == '"':
			p.advance(1)
			return b.String(), nil
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		case c < 0x20 && c != '\t':
			return "", p.errf("control character %q in a quoted string", c)
		default:
			b.WriteByte(c)
			p.advance(1)
		}
	}
}

// escape reads one backslash escape sequence into b.
func (p *parser) escape(b *strings.Builder) error {
	at := p.pos()
	p.advance(1)
	c := p.peek()
	simple := map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
	if r, ok := simple[c]; ok {
		b.WriteByte(r)
		p.advance(1)
		return nil
	}
	if c != 'u' {
		return p.errAt(at, "invalid escape \\%s in a quoted string: accepted are \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX", p.describeNext())
	}
	p.advance(1)
	if p.off+4 > len(p.src) {
		return p.errAt(at, "\\u needs four hexadecimal digits")
	}
	n, err := strconv.ParseUint(string(p.src[p.off:p.off+4]), 16, 32)
	if err != nil {
		return p.errAt(at, "\\u needs four hexadecimal digits")
	}
	p.advance(4)
	b.WriteRune(rune(n))
	return nil
}

// substitution reads ${path} or ${?path}.
func (p *parser) substitution() (*Value, error) {
	start := p.pos()
	p.advance(2)
	optional := false
	if p.peek() == '?' {
		optional = true
		p.advance(1)
	}
	p.skipSpaces()
	path, err := p.pathExpr()
	if err != nil {
		return nil, err
	}
	p.skipSpaces()
	if p.peek() != '}' {
		return nil, p.errf("unexpected %s in a substitution: expected '}'", p.describeNext())
	}
	p.advance(1)
	return &Value{kind: kindSubst, pos: start, path: path, optional: optional}, nil
}

// list reads [ ... ].
func (p *parser) list() (*Value, error) {
	start := p.pos()
	p.advance(1)
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	l := &Value{kind: Array, pos: start, elems: []*Value{}}
	for {
		p.skipAll()
		switch {
		case p.eof():
			return nil, p.errAt(start, "missing ']' to close this list")
		case p.peek() == ']':
			p.advance(1)
			return l, nil
		case p.peek() == ',':
			return nil, p.errf("unexpected ',': expected a list element")
		case p.peek() == '}':
			return nil, p.errf("unexpected '}': missing ']' to close the list opened at line %d column %d", start.Line, start.Col)
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		l.elems = append(l.elems, v)
		p.skipLine()
		switch {
		case p.peek() == ',':
			p.advance(1)
		case p.peek() == '\n', p.peek() == ']':
		case p.eof():
			return nil, p.errAt(start, "missing ']' to close this list")
		default:
			return nil, p.errf("unexpected %s in a list: expected ',', a new line or ']'", p.describeNext())
		}
	}
}

// pathExpr reads a key or substitution path: segments separated by '.',
// each made of quoted and unquoted pieces.
func (p *parser) pathExpr() ([]string, error) {
	start := p.pos()
	var segs []string
	for {
		segStart := p.pos()
		var seg strings.Builder
		pieces := 0
		for {
			if p.peek() == '"' {
				if p.hasPrefix(`"""`) {
					return nil, p.errf(`a """ string cannot be a key`)
				}
				s, err := p.quoted()
				if err != nil {
					return nil, err
				}
				seg.WriteString(s)
				pieces++
				continue
			}
			tok := p.unquoted(true)
			if tok == "" {
				if pieces == 0 || !p.keyContinues() {
					break
				}
				from := p.off
				p.skipSpaces()
				seg.Write(p.src[from:p.off]) // "a b = 1" has the key "a b"
				continue
			}
			seg.WriteString(tok)
			pieces++
		}
		if pieces == 0 {
			if len(segs) == 0 && p.peek() != '.' {
				return nil, p.errAt(start, "expected a key, found %s", p.describeNext())
			}
			return nil, p.errAt(segStart, "empty key segment (two dots in a row, or a dot at an end)")
		}
		segs = append(segs, seg.String())
		if p.peek() != '.' {
			return segs, nil
		}
		p.advance(1)
	}
}

// keyContinues reports whether whitespace at the current position is
// followed by more of the same key on this line.
func (p *parser) keyContinues() bool {
	i := p.off
	for i < len(p.src) && isSpace(p.src[i]) {
		i++
	}
	if i == p.off || i >= len(p.src) {
		return false
	}
	c := p.src[i]
	rest := string(p.src[i:min(len(p.src), i+2)])
	return c == '"' || c != '\n' && c != '.' && strings.IndexByte(forbidden, c) < 0 && rest != "//"
}

// parsePathExpr parses a whole string as a path expression.
func parsePathExpr(s string) ([]string, error) {
	p := &parser{name: "path", src: []byte(s), line: 1, col: 1}
	segs, err := p.pathExpr()
	if err != nil {
		return nil, err
	}
	if !p.eof() {
		return nil, p.errf("unexpected %s in a path", p.describeNext())
	}
	return segs, nil
}
