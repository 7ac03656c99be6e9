package deployment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// SyntaxError is a document that is not JSON. Line and Column are 1-based
// and point at the byte where reading stopped.
type SyntaxError struct {
	Line   int
	Column int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// maxDepth bounds nesting; the document itself is five levels deep
// (document, devices, device, tags, tag), the rest is room for the value of
// an unknown field.
const maxDepth = 64

// kind is a JSON value's type.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindObject
	kindArray
)

func (k kind) String() string {
	return [...]string{"null", "true or false", "a number", "text", "an object", "a list"}[k]
}

// node is one JSON value with its place in the document. Objects keep their
// members in the order written, duplicates included.
type node struct {
	kind       kind
	text       string // kindString: the decoded text; kindNumber: the literal
	boolean    bool
	members    []member
	elems      []*node
	start, end int64 // the value's bytes are data[start:end]
}

type member struct {
	key string
	val *node
}

// tree reads data into nodes with encoding/json's tokenizer, which checks
// the syntax. offset is where data starts in the file (after a BOM), for
// positions in errors.
type tree struct {
	data   []byte
	offset int64
	dec    *json.Decoder
}

// parseTree reads the single JSON value of data.
func parseTree(data []byte, offset int64) (*node, error) {
	if i := invalidUTF8(data); i >= 0 {
		return nil, syntaxAt(data, offset, int64(i), "the document is not UTF-8 text")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, syntaxAt(data, offset, int64(len(data)), "the document is empty")
	}
	t := &tree{data: data, offset: offset, dec: json.NewDecoder(bytes.NewReader(data))}
	t.dec.UseNumber()
	root, err := t.value(0)
	if err != nil {
		return nil, err
	}
	if rest := bytes.TrimLeft(data[root.end:], " \t\r\n"); len(rest) > 0 {
		return nil, syntaxAt(data, offset, int64(len(data)-len(rest)), "text after the document's closing brace")
	}
	return root, nil
}

func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// token reads the next token and where it starts and ends.
func (t *tree) token() (json.Token, int64, int64, error) {
	before := t.dec.InputOffset()
	tok, err := t.dec.Token()
	end := t.dec.InputOffset()
	if err != nil {
		return nil, 0, 0, t.syntax(err, end)
	}
	start := before
	for start < end && bytes.IndexByte([]byte(" \t\r\n,:"), t.data[start]) >= 0 {
		start++
	}
	return tok, start, end, nil
}

// syntax locates a tokenizer error. The tokenizer's offsets count from the
// start of the value it was reading, so a syntax error is located again by
// json.Unmarshal, which checks the whole document first and counts from its
// start.
func (t *tree) syntax(err error, at int64) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		if uerr := json.Unmarshal(t.data, new(json.RawMessage)); errors.As(uerr, &se) {
			// encoding/json counts the offending byte in Offset.
			return syntaxAt(t.data, t.offset, max(se.Offset-1, 0), se.Error())
		}
		return syntaxAt(t.data, t.offset, at, err.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return syntaxAt(t.data, t.offset, int64(len(t.data)), "the document ends early")
	}
	return syntaxAt(t.data, t.offset, at, err.Error())
}

func (t *tree) value(depth int) (*node, error) {
	tok, start, end, err := t.token()
	if err != nil {
		return nil, err
	}
	return t.valueFrom(tok, start, end, depth)
}

func (t *tree) valueFrom(tok json.Token, start, end int64, depth int) (*node, error) {
	n := &node{start: start, end: end}
	switch v := tok.(type) {
	case nil:
		n.kind = kindNull
	case bool:
		n.kind, n.boolean = kindBool, v
	case json.Number:
		n.kind, n.text = kindNumber, string(v)
	case string:
		n.kind, n.text = kindString, v
	case json.Delim:
		if depth >= maxDepth {
			return nil, syntaxAt(t.data, t.offset, start, fmt.Sprintf("nested deeper than %d levels", maxDepth))
		}
		var err error
		if v == '{' {
			err = t.object(n, depth)
		} else {
			err = t.array(n, depth)
		}
		if err != nil {
			return nil, err
		}
	default:
		panic(fmt.Sprintf("deployment: invariant broken: encoding/json returned token %T", tok))
	}
	return n, nil
}

func (t *tree) object(n *node, depth int) error {
	n.kind = kindObject
	for t.dec.More() {
		tok, _, _, err := t.token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			panic(fmt.Sprintf("deployment: invariant broken: object key token %T", tok))
		}
		val, err := t.value(depth + 1)
		if err != nil {
			return err
		}
		n.members = append(n.members, member{key: key, val: val})
	}
	_, _, end, err := t.token() // '}'
	n.end = end
	return err
}

func (t *tree) array(n *node, depth int) error {
	n.kind = kindArray
	for t.dec.More() {
		val, err := t.value(depth + 1)
		if err != nil {
			return err
		}
		n.elems = append(n.elems, val)
	}
	_, _, end, err := t.token() // ']'
	n.end = end
	return err
}

// syntaxAt locates byte at of data, which starts at offset in the file.
func syntaxAt(data []byte, offset, at int64, msg string) *SyntaxError {
	at = min(max(at, 0), int64(len(data)))
	before := data[:at]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(at) - bytes.LastIndexByte(before, '\n')
	if line == 1 {
		col += int(offset)
	}
	return &SyntaxError{Line: line, Column: col, Msg: msg}
}
