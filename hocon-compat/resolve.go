package hoconcompat

import (
	"errors"
	"fmt"
	"strings"
)

// maxExpansion bounds what substitutions may build (list elements, string
// bytes and object fields created by concatenation and merging), so that a
// file doubling a list on every line cannot exhaust memory.
const maxExpansion = 1 << 20

// errCycle is returned while resolving a value that is already being
// resolved; the substitution that asked turns it into a *SyntaxError.
var errCycle = errors.New("substitution cycle")

// Resolution states.
const (
	busy uint8 = iota + 1
	done
)

// resolver replaces every substitution, concatenation and merge of a
// parsed tree by its value, HOCON style: substitutions see the final
// (merged) document, "${?x}" with nothing to refer to leaves the field
// unset (or at its earlier value), and a cycle is an error.
type resolver struct {
	root     *Value
	state    map[*Value]uint8
	result   map[*Value]*Value // unresolved kinds: the value, nil = undefined
	budget   int
	warnings *[]Warning
}

func newResolver(root *Value, warnings *[]Warning) *resolver {
	return &resolver{root: root, state: map[*Value]uint8{}, result: map[*Value]*Value{}, warnings: warnings}
}

func (r *resolver) resolveRoot() error {
	_, err := r.resolve(r.root)
	if errors.Is(err, errCycle) {
		return &SyntaxError{Pos: r.root.pos, Msg: "substitution cycle"}
	}
	return err
}

// resolve returns v with every substitution inside replaced; nil when v is
// undefined (an optional substitution with nothing to refer to).
func (r *resolver) resolve(v *Value) (*Value, error) {
	if v.isScalar() {
		return v, nil
	}
	switch r.state[v] {
	case done:
		if v.resolved() {
			return v, nil
		}
		return r.result[v], nil
	case busy:
		return nil, errCycle
	}
	r.state[v] = busy
	out := v
	var err error
	switch v.kind {
	case Object:
		err = r.object(v)
	case Array:
		err = r.array(v)
	default:
		out, err = r.compute(v)
		if err == nil && out != nil {
			out, err = r.resolve(out)
		}
	}
	if err != nil {
		return nil, err
	}
	r.state[v] = done
	if !v.resolved() {
		r.result[v] = out
	}
	return out, nil
}

func (r *resolver) object(v *Value) error {
	for _, k := range v.Keys() {
		child, ok := v.fields[k]
		if !ok { // removed by a lookup meanwhile
			continue
		}
		res, err := r.resolve(child)
		if err != nil {
			return err
		}
		if res == nil {
			delete(v.fields, k)
		} else {
			v.fields[k] = res
		}
	}
	return nil
}

func (r *resolver) array(v *Value) error {
	elems := make([]*Value, 0, len(v.elems))
	for _, e := range v.elems {
		res, err := r.resolve(e)
		if err != nil {
			return err
		}
		if res != nil {
			elems = append(elems, res)
		}
	}
	v.elems = elems
	return nil
}

// compute evaluates one unresolved value.
func (r *resolver) compute(v *Value) (*Value, error) {
	switch v.kind {
	case kindSubst:
		return r.substitute(v)
	case kindConcat:
		return r.concat(v)
	case kindMerge:
		return r.merge(v)
	}
	panic(fmt.Sprintf("hoconcompat: invariant violated: compute called on a resolved %v", v.kind))
}

func (r *resolver) substitute(v *Value) (*Value, error) {
	var res *Value
	var err error
	found := true
	if v.self {
		if v.prev == nil {
			found = false
		} else {
			res, err = r.resolve(v.prev)
		}
	} else {
		res, found, err = r.lookup(v.path)
	}
	if errors.Is(err, errCycle) {
		return nil, &SyntaxError{Pos: v.pos, Msg: fmt.Sprintf("substitution %s is part of a cycle: it refers, directly or through other substitutions, to itself or to an object that contains it", substText(v))}
	}
	if err != nil {
		return nil, err
	}
	if !found || res == nil {
		r.missing(v)
		return nil, nil
	}
	return res, nil
}

func substText(v *Value) string {
	q := ""
	if v.optional {
		q = "?"
	}
	return "${" + q + pathString(v.path) + "}"
}

// missing records a substitution that the document does not define. HOCON
// would then read an environment variable of that name; otopcua does not,
// so that the effective settings do not depend on the shell they are
// computed in.
func (r *resolver) missing(v *Value) {
	name := strings.Join(v.path, ".")
	msg := fmt.Sprintf("%s is not defined in this file; Akka would read the environment variable %s, otopcua does not: the setting is left unset", substText(v), name)
	if !v.optional {
		msg = fmt.Sprintf("%s is not defined in this file; Akka would read the environment variable %s or refuse to start, otopcua does not read it: the setting is left unset", substText(v), name)
	}
	*r.warnings = append(*r.warnings, Warning{Pos: v.pos, Msg: msg})
}

// lookup finds an absolute path in the document, resolving what lies on
// the way.
func (r *resolver) lookup(path []string) (*Value, bool, error) {
	node := r.root
	for i, seg := range path {
		if node.kind != Object {
			return nil, false, nil
		}
		child, ok := node.fields[seg]
		if !ok {
			return nil, false, nil
		}
		if i == len(path)-1 || !child.resolved() {
			res, err := r.resolve(child)
			if err != nil {
				return nil, false, err
			}
			if res == nil {
				delete(node.fields, seg)
				return nil, false, nil
			}
			node.fields[seg] = res
			child = res
		}
		node = child
	}
	return node, true, nil
}

func (r *resolver) charge(v *Value, n int) error {
	r.budget += n
	if r.budget > maxExpansion {
		return &SyntaxError{Pos: v.pos, Msg: fmt.Sprintf("substitutions expand to more than %d elements", maxExpansion)}
	}
	return nil
}

// concat evaluates a value concatenation: strings join (with the
// whitespace written between them), lists append, objects merge.
func (r *resolver) concat(v *Value) (*Value, error) {
	vals := make([]*Value, len(v.parts))
	var defined []*Value
	for i, part := range v.parts {
		res, err := r.resolve(part)
		if err != nil {
			return nil, err
		}
		vals[i] = res
		if res != nil {
			defined = append(defined, res)
		}
	}
	switch len(defined) {
	case 0:
		return nil, nil
	case 1:
		return defined[0], nil
	}
	first := defined[0].kind
	for _, d := range defined[1:] {
		if (first == Object || first == Array || d.kind == Object || d.kind == Array) && d.kind != first {
			return nil, &SyntaxError{Pos: d.pos, Msg: fmt.Sprintf("cannot concatenate a %v and a %v", first, d.kind)}
		}
	}
	switch first {
	case Array:
		out := &Value{kind: Array, pos: v.pos}
		for _, d := range defined {
			if err := r.charge(v, len(d.elems)); err != nil {
				return nil, err
			}
			out.elems = append(out.elems, d.elems...)
		}
		return out, nil
	case Object:
		out := defined[0]
		for _, d := range defined[1:] {
			var err error
			if out, err = r.mergeObjects(out, d); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var b strings.Builder
	for i, val := range vals {
		if i > 0 {
			b.WriteString(v.spaces[i])
		}
		if val != nil {
			b.WriteString(val.text)
		}
		if err := r.charge(v, len(v.spaces[i])+len(valText(val))); err != nil {
			return nil, err
		}
	}
	return &Value{kind: String, pos: v.pos, text: b.String()}, nil
}

func valText(v *Value) string {
	if v == nil {
		return ""
	}
	return v.text
}

// merge evaluates repeated assignments: a later value replaces an earlier
// one, except that two objects merge.
func (r *resolver) merge(v *Value) (*Value, error) {
	var acc *Value
	for _, part := range v.parts {
		res, err := r.resolve(part)
		if err != nil {
			return nil, err
		}
		switch {
		case res == nil:
		case acc != nil && acc.kind == Object && res.kind == Object:
			if acc, err = r.mergeObjects(acc, res); err != nil {
				return nil, err
			}
		default:
			acc = res
		}
	}
	return acc, nil
}

// mergeObjects returns a new object: a's fields overridden by b's, objects
// merged recursively. Neither input is modified.
func (r *resolver) mergeObjects(a, b *Value) (*Value, error) {
	if err := r.charge(b, len(a.fields)+len(b.fields)); err != nil {
		return nil, err
	}
	out := newObject(b.pos)
	for _, k := range a.Keys() {
		out.put(k, a.fields[k])
	}
	for _, k := range b.Keys() {
		old, nv := out.fields[k], b.fields[k]
		if old != nil && old.kind == Object && nv.kind == Object {
			m, err := r.mergeObjects(old, nv)
			if err != nil {
				return nil, err
			}
			nv = m
		}
		out.put(k, nv)
	}
	r.state[out] = done
	return out, nil
}
