package deployment

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// Bounds of the alarms of one document: a hostile document cannot make a
// node compile or evaluate without end.
const (
	// MaxAlarms is the most alarms a document may have.
	MaxAlarms = 1000
	// MaxConditionLen is the longest condition, in bytes.
	MaxConditionLen = 4096
)

// ConditionFunctions are the functions a condition may call. Every other
// function of the expression language is refused: the ones that loop over
// a list (all, any, filter, map, reduce, …), the ones that build large
// values (repeat, the range operator ..) and the ones whose result differs
// between the two nodes of a pair (now, date).
var ConditionFunctions = []string{"abs", "ceil", "floor", "round", "min", "max", "int", "float"}

// ValueKind is the type a condition sees for a tag (dataplane.DataType's
// mapping): Boolean tags are bool, the integer types int, Float, Double and
// scaled tags float64.
type ValueKind int

const (
	KindBool ValueKind = iota + 1
	KindInt
	KindFloat
)

func (k ValueKind) String() string {
	switch k {
	case KindBool:
		return "bool"
	case KindInt:
		return "int"
	case KindFloat:
		return "float64"
	}
	return "unknown"
}

// ConditionKind is the kind a condition sees for t, or 0 for an unknown
// type.
func ConditionKind(t *Tag) ValueKind {
	switch {
	case !contains(Types, t.Type):
		return 0
	case t.Scaled():
		return KindFloat
	case t.Type == TypeBool:
		return KindBool
	case t.Type == TypeFloat32 || t.Type == TypeFloat64:
		return KindFloat
	}
	return KindInt
}

// Convert turns a reading of a tag of this kind, as the drivers deliver it
// (bool, int16, uint16, int32, uint32, float32, float64 — or any Go number),
// into the value conditions see: bool, int or float64. It reports false for
// a value the kind cannot hold (nil, text, a bool for a number).
func (k ValueKind) Convert(v any) (any, bool) {
	switch k {
	case KindBool:
		b, ok := v.(bool)
		return b, ok
	case KindInt:
		switch x := v.(type) {
		case int16:
			return int(x), true
		case uint16:
			return int(x), true
		case int32:
			return int(x), true
		case uint32:
			return int(x), true
		case int:
			return x, true
		case int64:
			return int(x), true
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int(x), true
			}
		}
	case KindFloat:
		switch x := v.(type) {
		case float64:
			return x, true
		case float32:
			return float64(x), true
		case int16:
			return float64(x), true
		case uint16:
			return float64(x), true
		case int32:
			return float64(x), true
		case uint32:
			return float64(x), true
		case int:
			return float64(x), true
		case int64:
			return float64(x), true
		}
	}
	return nil, false
}

// zero is the kind's zero value, the value the type checker sees.
func (k ValueKind) zero() any {
	switch k {
	case KindBool:
		return false
	case KindInt:
		return 0
	}
	return 0.0
}

// TagRef is a tag a condition reads.
type TagRef struct {
	Device, Tag string
	Kind        ValueKind
}

// Key is the tag's name in the expression environment: "device.tag".
func (r TagRef) Key() string { return r.Device + "." + r.Tag }

// CompiledAlarm is one alarm with its condition compiled against the
// document's tags.
type CompiledAlarm struct {
	// Index is the alarm's position in Document.Alarms.
	Index int
	Alarm Alarm
	// Program evaluates the condition to a bool. Run it with an
	// environment that maps every Ref's Key to a value of its Kind (an Env
	// does); it never loops and allocates at most expr's memory budget.
	Program *vm.Program
	// Refs are the tags the condition reads, each once, in the order the
	// condition first names them.
	Refs []TagRef
}

// Env is an environment for CompiledAlarm.Program: tag Key → value. Fill
// it with the values of Convert; a missing key fails the evaluation.
type Env = map[string]any

// ConditionError is a condition that does not compile: what is wrong, in
// the words of a Problem's Accepted text after "; ".
type ConditionError struct {
	Alarm  int // index in Document.Alarms
	Reason string
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("alarms[%d].condition: %s", e.Alarm, e.Reason)
}

// errUndecidable: the condition names a tag whose type is not known (the
// tag's own problem is reported instead).
var errUndecidable = errors.New("the condition reads a tag of unknown type")

// tagTable is what conditions can name: the devices of a document in order
// and their tags. A device or tag name that occurs twice keeps its first
// definition (the second is a problem of its own).
type tagTable struct {
	devices []string
	tags    map[string][]string             // device → tag names in order
	kinds   map[string]map[string]ValueKind // device → tag → kind (0: unknown type)
	typed   map[string]any                  // Key → zero value, for the type checker
}

func newTagTable(doc *Document) *tagTable {
	tt := &tagTable{tags: map[string][]string{}, kinds: map[string]map[string]ValueKind{}, typed: map[string]any{}}
	for i := range doc.Devices {
		d := &doc.Devices[i]
		if _, dup := tt.kinds[d.Name]; dup {
			continue
		}
		tt.devices = append(tt.devices, d.Name)
		tt.kinds[d.Name] = map[string]ValueKind{}
		for j := range d.Tags {
			t := &d.Tags[j]
			if _, dup := tt.kinds[d.Name][t.Name]; dup {
				continue
			}
			k := ConditionKind(t)
			tt.tags[d.Name] = append(tt.tags[d.Name], t.Name)
			tt.kinds[d.Name][t.Name] = k
			if k != 0 {
				tt.typed[TagRef{d.Name, t.Name, k}.Key()] = k.zero()
			}
		}
	}
	return tt
}

// CompileAlarms compiles the condition of every alarm of doc. It returns
// one CompiledAlarm per alarm, in order, or the first alarm's error (a
// *ConditionError, or an error for more than MaxAlarms alarms). A document
// that Decode or Validate accepted always compiles.
func CompileAlarms(doc *Document) ([]*CompiledAlarm, error) {
	if len(doc.Alarms) > MaxAlarms {
		return nil, fmt.Errorf("deployment: %d alarms, at most %d are accepted", len(doc.Alarms), MaxAlarms)
	}
	tt := newTagTable(doc)
	out := make([]*CompiledAlarm, len(doc.Alarms))
	for i := range doc.Alarms {
		ca, err := tt.compile(doc, i)
		if err != nil {
			return nil, err
		}
		out[i] = ca
	}
	return out, nil
}

// CompileAlarm compiles the condition of doc.Alarms[i].
func CompileAlarm(doc *Document, i int) (*CompiledAlarm, error) {
	if i < 0 || i >= len(doc.Alarms) {
		return nil, fmt.Errorf("deployment: no alarm %d (the document has %d)", i, len(doc.Alarms))
	}
	return newTagTable(doc).compile(doc, i)
}

func (tt *tagTable) compile(doc *Document, i int) (*CompiledAlarm, error) {
	a := doc.Alarms[i]
	prog, refs, err := tt.compileCondition(a.Condition)
	if err != nil {
		return nil, &ConditionError{Alarm: i, Reason: err.Error()}
	}
	return &CompiledAlarm{Index: i, Alarm: a, Program: prog, Refs: refs}, nil
}

// compileCondition checks and compiles one condition. Its errors say what
// is wrong (the text after "accepted values are …; "); it returns
// errUndecidable when a referenced tag's type is unknown.
func (tt *tagTable) compileCondition(src string) (*vm.Program, []TagRef, error) {
	switch {
	case strings.TrimSpace(src) == "":
		return nil, nil, errors.New("the condition is empty")
	case len(src) > MaxConditionLen:
		return nil, nil, fmt.Errorf("the condition is %d bytes long, the longest accepted is %d", len(src), MaxConditionLen)
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, nil, errors.New(firstLine(err.Error()))
	}
	an := &analysis{tt: tt, lets: map[string]bool{}, devNodes: map[*ast.IdentifierNode]string{}}
	ast.Walk(&tree.Node, letCollector{an.lets})
	ast.Walk(&tree.Node, an)
	if an.err == nil {
		ast.Walk(&tree.Node, envTags{an})
	}
	if an.err == nil {
		ast.Walk(&tree.Node, bareNames{an})
	}
	if an.err != nil {
		return nil, nil, an.err
	}
	if an.undecidable {
		return nil, nil, errUndecidable
	}
	opts := []expr.Option{
		expr.Env(tt.typed), expr.AsBool(), expr.DisableAllBuiltins(),
		expr.Patch(rewriter{tt}), expr.MaxNodes(MaxConditionLen),
	}
	for _, f := range ConditionFunctions {
		opts = append(opts, expr.EnableBuiltin(f))
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		msg := firstLine(err.Error())
		if rest, ok := strings.CutPrefix(msg, "expected bool, but got "); ok {
			msg = fmt.Sprintf("the condition is %s, not true or false: compare it, such as press1.Temperature > 80", aKind(rest))
		}
		return nil, nil, errors.New(msg)
	}
	// Without loops a value can only grow by joining texts: with let, each
	// join can double one (let b = a + a; let c = b + b; …), to gigabytes
	// in a few hundred bytes. Tags are never text, so joining is refused.
	var joins textJoins
	root := prog.Node()
	ast.Walk(&root, &joins)
	if joins {
		return nil, nil, errors.New("joining texts with + is not accepted")
	}
	return prog, an.ordered(), nil
}

func aKind(t string) string {
	switch t {
	case "int", "float64", "float":
		return "a number"
	case "string":
		return "a text"
	}
	return "of type " + t
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

// textJoins is set by a walk of a checked tree that meets a + of texts.
type textJoins bool

func (j *textJoins) Visit(n *ast.Node) {
	if b, ok := (*n).(*ast.BinaryNode); ok && b.Operator == "+" {
		if t := b.Type(); t != nil && t.Kind() == reflect.String {
			*j = true
		}
	}
}

// letCollector records the names declared with let.
type letCollector struct{ lets map[string]bool }

func (c letCollector) Visit(n *ast.Node) {
	if d, ok := (*n).(*ast.VariableDeclaratorNode); ok {
		c.lets[d.Name] = true
	}
}

// analysis walks a parsed condition (children before their parent),
// resolving every device.tag, device["tag"] and $env["device"]["tag"] to a
// TagRef and refusing what a condition may not do. It rewrites nothing in
// the tree it reads; rewriter does the same resolution inside Compile.
type analysis struct {
	tt       *tagTable
	lets     map[string]bool
	devNodes map[*ast.IdentifierNode]string // $env["device"] nodes resolved to a device
	refs     []TagRef
	at       []int // source offset of each ref's first use
	err      error
	// undecidable: a referenced tag has an unknown type.
	undecidable bool
	// used marks identifier nodes consumed as the device of a member.
	used map[*ast.IdentifierNode]bool
}

func (an *analysis) fail(format string, args ...any) {
	if an.err == nil {
		an.err = fmt.Errorf(format, args...)
	}
}

func (an *analysis) Visit(n *ast.Node) {
	if an.err != nil {
		return
	}
	switch x := (*n).(type) {
	case *ast.MemberNode:
		an.member(x)
	case *ast.BuiltinNode:
		if !contains(ConditionFunctions, x.Name) {
			an.fail("function %s is not accepted; the functions are %s", x.Name, strings.Join(ConditionFunctions, ", "))
		}
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok {
			an.fail("function %s is not accepted; the functions are %s", id.Value, strings.Join(ConditionFunctions, ", "))
		} else {
			an.fail("calls are accepted only of the functions %s", strings.Join(ConditionFunctions, ", "))
		}
	case *ast.BinaryNode:
		if x.Operator == ".." {
			an.fail("the range operator .. is not accepted")
		}
	case *ast.PredicateNode, *ast.PointerNode:
		an.fail("list functions (all, any, filter, map, …) are not accepted")
	case *ast.VariableDeclaratorNode:
		if _, isDev := an.tt.kinds[x.Name]; isDev {
			an.fail("let %s: %s is a device; give the variable another name", x.Name, x.Name)
		}
	}
}

// member resolves device.tag, device["tag"], $env["device"] and
// $env["device"]["tag"].
func (an *analysis) member(m *ast.MemberNode) {
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok {
		return // a member of something else (a map literal, a let value)
	}
	if an.used == nil {
		an.used = map[*ast.IdentifierNode]bool{}
	}
	prop, constant := m.Property.(*ast.StringNode)
	if id.Value == "$env" {
		an.used[id] = true
		if !constant {
			an.fail("$env[…] needs a device name in quotes, such as $env[\"press-1\"]")
			return
		}
		if _, isDev := an.tt.kinds[prop.Value]; !isDev {
			an.fail("unknown device %s; %s", prop.Value, an.tt.deviceList(prop.Value))
			return
		}
		return // resolved by the enclosing member, or refused as bare by bareNames
	}
	dev, isDev := an.tt.kinds[id.Value]
	if !isDev {
		if an.lets[id.Value] {
			return
		}
		an.fail("unknown device %s; %s", id.Value, an.tt.deviceList(id.Value))
		return
	}
	an.used[id] = true
	if !constant {
		an.fail("tags are named as %s.Tag or %s[\"Tag\"], not computed", id.Value, id.Value)
		return
	}
	an.ref(id.Value, prop.Value, dev, id.Location().From)
}

// envDevice returns the device of a $env["device"] member node, if m is one.
func envDevice(m *ast.MemberNode) (string, bool) {
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "$env" {
		return "", false
	}
	s, ok := m.Property.(*ast.StringNode)
	if !ok {
		return "", false
	}
	return s.Value, true
}

func (an *analysis) ref(device, tag string, kinds map[string]ValueKind, at int) {
	k, ok := kinds[tag]
	if !ok {
		an.fail("unknown tag %s.%s; %s", device, tag, an.tt.tagList(device, tag))
		return
	}
	if k == 0 {
		an.undecidable = true
		return
	}
	r := TagRef{Device: device, Tag: tag, Kind: k}
	for i, o := range an.refs {
		if o == r {
			an.at[i] = min(an.at[i], at)
			return
		}
	}
	an.refs = append(an.refs, r)
	an.at = append(an.at, at)
}

// ordered returns the refs in the order of their first use in the source.
func (an *analysis) ordered() []TagRef {
	idx := make([]int, len(an.refs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return an.at[idx[a]] < an.at[idx[b]] })
	out := make([]TagRef, len(idx))
	for i, j := range idx {
		out[i] = an.refs[j]
	}
	return out
}

// envTags is the second pass: the tags of $env["device"] members.
type envTags struct{ an *analysis }

func (e envTags) Visit(n *ast.Node) {
	an := e.an
	m, ok := (*n).(*ast.MemberNode)
	if !ok || an.err != nil {
		return
	}
	inner, ok := m.Node.(*ast.MemberNode)
	if !ok {
		return
	}
	dev, ok := envDevice(inner)
	if !ok {
		return
	}
	an.devNodes[inner.Node.(*ast.IdentifierNode)] = dev
	prop, constant := m.Property.(*ast.StringNode)
	if !constant {
		an.fail("tags are named as $env[%q][\"Tag\"], not computed", dev)
		return
	}
	an.ref(dev, prop.Value, an.tt.kinds[dev], inner.Node.Location().From)
}

// bareNames is the last pass: names left over that are neither a tag nor
// a let variable.
type bareNames struct{ an *analysis }

func (b bareNames) Visit(n *ast.Node) {
	an := b.an
	x, ok := (*n).(*ast.IdentifierNode)
	if !ok || an.err != nil {
		return
	}
	if x.Value == "$env" {
		if _, resolved := an.devNodes[x]; !resolved {
			an.fail("$env is not a value; name a tag, such as $env[\"press-1\"][\"Temperature\"]")
		}
		return
	}
	if an.used[x] || an.lets[x.Value] {
		return
	}
	if _, isDev := an.tt.kinds[x.Value]; isDev {
		an.fail("%s is a device; name one of its tags, such as %s", x.Value, an.tt.example(x.Value))
		return
	}
	an.fail("unknown device %s; %s", x.Value, an.tt.deviceList(x.Value))
}

// rewriter turns every resolved tag reference into the identifier of its
// Key, the name the environment holds. It runs inside expr.Compile after
// analysis accepted the condition.
type rewriter struct{ tt *tagTable }

func (r rewriter) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	prop, ok := m.Property.(*ast.StringNode)
	if !ok {
		return
	}
	var dev string
	switch x := m.Node.(type) {
	case *ast.IdentifierNode:
		if _, isDev := r.tt.kinds[x.Value]; !isDev {
			return
		}
		dev = x.Value
	case *ast.MemberNode:
		d, ok := envDevice(x)
		if !ok {
			return
		}
		dev = d
	default:
		return
	}
	if _, isTag := r.tt.kinds[dev][prop.Value]; !isTag {
		return
	}
	id := &ast.IdentifierNode{Value: dev + "." + prop.Value}
	ast.Patch(n, id)
}

// maxListed is how many names an "the tags are" text lists.
const maxListed = 12

func (tt *tagTable) deviceList(near string) string {
	if len(tt.devices) == 0 {
		return "the document has no devices"
	}
	return "the devices are " + listNames(tt.devices) + suggest(tt.devices, near)
}

func (tt *tagTable) tagList(device, near string) string {
	names := tt.tags[device]
	if len(names) == 0 {
		return fmt.Sprintf("device %s has no tags", device)
	}
	full := make([]string, len(names))
	for i, n := range names {
		full[i] = device + "." + n
	}
	return "the tags are " + listNames(full) + suggest(full, device+"."+near)
}

func (tt *tagTable) example(device string) string {
	if names := tt.tags[device]; len(names) > 0 {
		return device + "." + names[0]
	}
	return device + ".Tag"
}

func listNames(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(", … (%d in all)", len(names))
}
