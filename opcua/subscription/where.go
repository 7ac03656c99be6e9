package subscription

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// whereClause is a validated ContentFilter (Part 4 §7.7) of an event
// item: elements evaluated from the last to the first, each operand of an
// element referring only to later elements (ElementOperand.Index greater
// than the element's own, as Part 4 §7.7.4.2 asks of clients), so an event
// costs one pass over the elements and loops are impossible.
//
// Supported operators: Equals, IsNull, GreaterThan, LessThan,
// GreaterThanOrEqual, LessThanOrEqual, Not, Between, InList, And, Or,
// OfType. Like, Cast, BitwiseAnd, BitwiseOr, InView and RelatedTo are
// refused with BadFilterOperatorUnsupported. Operands: ElementOperand,
// LiteralOperand, SimpleAttributeOperand; AttributeOperand is refused
// (BadFilterOperandInvalid).
type whereClause struct {
	elems []whereElem
}

type whereElem struct {
	op   ua.FilterOperator
	args []whereArg
}

// whereArg is one operand: an element's result (isElem), a literal, an
// event field, or OfType's event type.
type whereArg struct {
	isElem  bool
	elem    int         // the element whose result this is, when isElem
	literal *ua.Variant // a LiteralOperand's value
	field   *selector   // a SimpleAttributeOperand
	ofType  *ua.NodeID  // OfType's event type
}

// operandCounts are the operand counts of the supported operators; -1
// means two or more (InList).
var operandCounts = map[ua.FilterOperator]int{
	ua.FilterOperatorEquals:             2,
	ua.FilterOperatorIsNull:             1,
	ua.FilterOperatorGreaterThan:        2,
	ua.FilterOperatorLessThan:           2,
	ua.FilterOperatorGreaterThanOrEqual: 2,
	ua.FilterOperatorLessThanOrEqual:    2,
	ua.FilterOperatorNot:                1,
	ua.FilterOperatorBetween:            3,
	ua.FilterOperatorInList:             -1,
	ua.FilterOperatorAnd:                2,
	ua.FilterOperatorOr:                 2,
	ua.FilterOperatorOfType:             1,
}

// parseWhere validates a where clause. A nil or empty clause is no
// filter. The result holds one ContentFilterElementResult per element.
func parseWhere(cf *ua.ContentFilter, src EventTypeChecker) (*whereClause, *ua.ContentFilterResult, ua.StatusCode) {
	res := &ua.ContentFilterResult{}
	if cf == nil || len(cf.Elements) == 0 {
		return nil, res, ua.StatusGood
	}
	n := len(cf.Elements)
	res.ElementResults = make([]*ua.ContentFilterElementResult, n)
	operands := 0
	for _, el := range cf.Elements {
		if el != nil {
			operands += len(el.FilterOperands)
		}
	}
	if n > MaxWhereOperands || operands > MaxWhereOperands {
		for i := range res.ElementResults {
			res.ElementResults[i] = &ua.ContentFilterElementResult{StatusCode: ua.StatusBadEventFilterInvalid}
		}
		return nil, res, ua.StatusBadEventFilterInvalid
	}
	w := &whereClause{elems: make([]whereElem, n)}
	failed := false
	for i, el := range cf.Elements {
		e, r := parseElem(i, n, el, src)
		w.elems[i] = e
		res.ElementResults[i] = r
		failed = failed || r.StatusCode != ua.StatusGood
	}
	if failed {
		return nil, res, ua.StatusBadEventFilterInvalid
	}
	return w, res, ua.StatusGood
}

// parseElem validates element i of n.
func parseElem(i, n int, el *ua.ContentFilterElement, src EventTypeChecker) (whereElem, *ua.ContentFilterElementResult) {
	r := &ua.ContentFilterElementResult{}
	if el == nil {
		r.StatusCode = ua.StatusBadFilterElementInvalid
		return whereElem{}, r
	}
	want, supported := operandCounts[el.FilterOperator]
	switch {
	case el.FilterOperator > ua.FilterOperatorBitwiseOr:
		r.StatusCode = ua.StatusBadFilterOperatorInvalid
		return whereElem{}, r
	case !supported:
		r.StatusCode = ua.StatusBadFilterOperatorUnsupported
		return whereElem{}, r
	case want >= 0 && len(el.FilterOperands) != want, want < 0 && len(el.FilterOperands) < 2:
		r.StatusCode = ua.StatusBadFilterOperandCountMismatch
		return whereElem{}, r
	}
	e := whereElem{op: el.FilterOperator, args: make([]whereArg, len(el.FilterOperands))}
	r.OperandStatusCodes = make([]ua.StatusCode, len(el.FilterOperands))
	for j, eo := range el.FilterOperands {
		a, st := parseArg(i, n, eo, src)
		if st == ua.StatusGood && e.op == ua.FilterOperatorOfType {
			a, st = ofTypeArg(a, src)
		}
		e.args[j], r.OperandStatusCodes[j] = a, st
		if st != ua.StatusGood {
			r.StatusCode = ua.StatusBadFilterOperandInvalid
		}
	}
	return e, r
}

// parseArg validates one operand of element i of n.
func parseArg(i, n int, eo *ua.ExtensionObject, src EventTypeChecker) (whereArg, ua.StatusCode) {
	if eo == nil || eo.Value == nil {
		return whereArg{}, ua.StatusBadFilterOperandInvalid
	}
	switch v := eo.Value.(type) {
	case *ua.ElementOperand:
		return elemArg(i, n, v)
	case ua.ElementOperand:
		return elemArg(i, n, &v)
	case *ua.LiteralOperand:
		return literalArg(v)
	case ua.LiteralOperand:
		return literalArg(&v)
	case *ua.SimpleAttributeOperand:
		return fieldArg(v, src)
	case ua.SimpleAttributeOperand:
		return fieldArg(&v, src)
	}
	return whereArg{}, ua.StatusBadFilterOperandInvalid
}

func elemArg(i, n int, v *ua.ElementOperand) (whereArg, ua.StatusCode) {
	if v == nil || int(v.Index) <= i || int(v.Index) >= n {
		return whereArg{}, ua.StatusBadFilterElementInvalid
	}
	return whereArg{elem: int(v.Index), isElem: true}, ua.StatusGood
}

func literalArg(v *ua.LiteralOperand) (whereArg, ua.StatusCode) {
	if v == nil || v.Value == nil {
		return whereArg{}, ua.StatusBadFilterLiteralInvalid
	}
	return whereArg{literal: v.Value}, ua.StatusGood
}

func fieldArg(v *ua.SimpleAttributeOperand, src EventTypeChecker) (whereArg, ua.StatusCode) {
	sel, st := parseOperand(v, src)
	if st != ua.StatusGood {
		return whereArg{}, st
	}
	return whereArg{field: &sel}, ua.StatusGood
}

// ofTypeArg checks OfType's operand: a literal NodeId of an event type.
func ofTypeArg(a whereArg, src EventTypeChecker) (whereArg, ua.StatusCode) {
	if a.literal == nil {
		return whereArg{}, ua.StatusBadFilterOperandInvalid
	}
	typ, ok := a.literal.Value().(*ua.NodeID)
	if !ok || typ == nil {
		if x, ok := a.literal.Value().(*ua.ExpandedNodeID); ok && x != nil && x.NamespaceURI == "" && x.ServerIndex == 0 {
			typ = x.NodeID
		}
	}
	if typ == nil || src.CheckEventType(typ) != ua.StatusGood {
		return whereArg{}, ua.StatusBadFilterOperandInvalid
	}
	return whereArg{ofType: typ}, ua.StatusGood
}

// Evaluation. Results are Variants so that an element's result can be an
// operand of another: a Boolean, or null (Part 4 §7.7.3: an operand that is
// null, or cannot be compared, makes a comparison null; And, Or and Not
// follow three-valued logic; only TRUE lets the event through).

var (
	trueVariant  = ua.MustVariant(true)
	falseVariant = ua.MustVariant(false)
)

func boolVariant(b bool) *ua.Variant {
	if b {
		return trueVariant
	}
	return falseVariant
}

// smallWhere is the element count evaluated without a heap allocation.
const smallWhere = 16

// matches reports whether ev satisfies the clause (element 0 is TRUE).
func (w *whereClause) matches(ev *events.Event) bool {
	var small [smallWhere]*ua.Variant
	results := small[:]
	if len(w.elems) > smallWhere {
		results = make([]*ua.Variant, len(w.elems))
	}
	results = results[:len(w.elems)]
	for i := len(w.elems) - 1; i >= 0; i-- {
		results[i] = w.elems[i].eval(ev, results)
	}
	return truth(results[0]) == isTrue
}

// eval computes the element given the results of the later elements.
func (e whereElem) eval(ev *events.Event, results []*ua.Variant) *ua.Variant {
	arg := func(j int) *ua.Variant { return e.args[j].value(ev, results) }
	switch e.op {
	case ua.FilterOperatorOfType:
		return boolVariant(ev.OfType(e.args[0].ofType))
	case ua.FilterOperatorIsNull:
		return boolVariant(isNull(arg(0)))
	case ua.FilterOperatorNot:
		switch truth(arg(0)) {
		case isTrue:
			return falseVariant
		case isFalse:
			return trueVariant
		}
		return nullVariant
	case ua.FilterOperatorAnd, ua.FilterOperatorOr:
		return logic(e.op, truth(arg(0)), truth(arg(1)))
	case ua.FilterOperatorEquals:
		eq, ok := equalVariants(arg(0), arg(1))
		if !ok {
			return nullVariant
		}
		return boolVariant(eq)
	case ua.FilterOperatorGreaterThan, ua.FilterOperatorLessThan,
		ua.FilterOperatorGreaterThanOrEqual, ua.FilterOperatorLessThanOrEqual:
		c, ok := compareVariants(arg(0), arg(1))
		if !ok {
			return nullVariant
		}
		return boolVariant(ordered(e.op, c))
	case ua.FilterOperatorBetween:
		lo, ok1 := compareVariants(arg(0), arg(1))
		hi, ok2 := compareVariants(arg(0), arg(2))
		if !ok1 || !ok2 {
			return nullVariant
		}
		return boolVariant(lo >= 0 && hi <= 0)
	case ua.FilterOperatorInList:
		v := arg(0)
		if isNull(v) {
			return nullVariant
		}
		for j := 1; j < len(e.args); j++ {
			if eq, ok := equalVariants(v, arg(j)); ok && eq {
				return trueVariant
			}
		}
		return falseVariant
	}
	return nullVariant
}

func (a whereArg) value(ev *events.Event, results []*ua.Variant) *ua.Variant {
	switch {
	case a.isElem:
		return results[a.elem]
	case a.field != nil:
		return a.field.value(ev)
	case a.literal != nil:
		return a.literal
	}
	return nullVariant
}

func ordered(op ua.FilterOperator, c int) bool {
	switch op {
	case ua.FilterOperatorGreaterThan:
		return c > 0
	case ua.FilterOperatorLessThan:
		return c < 0
	case ua.FilterOperatorGreaterThanOrEqual:
		return c >= 0
	}
	return c <= 0
}

type tri int8

const (
	isNullTri tri = iota
	isFalse
	isTrue
)

// truth reads a Boolean operand; anything else is null.
func truth(v *ua.Variant) tri {
	if v == nil {
		return isNullTri
	}
	b, ok := v.Value().(bool)
	switch {
	case !ok:
		return isNullTri
	case b:
		return isTrue
	}
	return isFalse
}

// logic is And and Or over three values (Part 4 §7.7.3, Table 120).
func logic(op ua.FilterOperator, a, b tri) *ua.Variant {
	if op == ua.FilterOperatorAnd {
		switch {
		case a == isFalse || b == isFalse:
			return falseVariant
		case a == isTrue && b == isTrue:
			return trueVariant
		}
		return nullVariant
	}
	switch {
	case a == isTrue || b == isTrue:
		return trueVariant
	case a == isFalse && b == isFalse:
		return falseVariant
	}
	return nullVariant
}

func isNull(v *ua.Variant) bool { return v == nil || v.Type() == ua.TypeIDNull }

// equalVariants compares two operands for Equals and InList. Numbers of
// any numeric type (and Booleans as 0 and 1) compare by value; other
// types only with their own type. ok is false when either is null or the
// types cannot be compared.
func equalVariants(a, b *ua.Variant) (eq, ok bool) {
	if isNull(a) || isNull(b) {
		return false, false
	}
	if c, ok := compareNumbers(a.Value(), b.Value()); ok {
		return c == 0, true
	}
	av, bv := a.Value(), b.Value()
	switch x := av.(type) {
	case *ua.NodeID:
		y, ok := bv.(*ua.NodeID)
		return ok && events.SameNode(x, y), ok
	case *ua.LocalizedText:
		y, ok := bv.(*ua.LocalizedText)
		return ok && x != nil && y != nil && x.Text == y.Text, ok
	case *ua.QualifiedName:
		y, ok := bv.(*ua.QualifiedName)
		return ok && x != nil && y != nil && *x == *y, ok
	}
	if c, ok := compareOrdered(av, bv); ok {
		return c == 0, true
	}
	if reflect.TypeOf(av) != reflect.TypeOf(bv) {
		return false, false
	}
	return reflect.DeepEqual(av, bv), true
}

// compareVariants orders two operands: numbers by value, String,
// DateTime and ByteString within their type. ok is false otherwise.
func compareVariants(a, b *ua.Variant) (int, bool) {
	if isNull(a) || isNull(b) {
		return 0, false
	}
	if c, ok := compareNumbers(a.Value(), b.Value()); ok {
		return c, true
	}
	return compareOrdered(a.Value(), b.Value())
}

func compareOrdered(a, b any) (int, bool) {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return strings.Compare(x, y), ok
	case time.Time:
		y, ok := b.(time.Time)
		return x.Compare(y), ok
	case []byte:
		y, ok := b.([]byte)
		return bytes.Compare(x, y), ok
	}
	return 0, false
}

// number is a numeric scalar: an integer as sign and magnitude (so that
// every int64 and uint64 compares exactly), or a float.
type number struct {
	isFloat bool
	f       float64
	neg     bool
	mag     uint64
}

func asNumber(v any) (number, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return number{mag: 1}, true
		}
		return number{}, true
	case int8:
		return signed(int64(x)), true
	case int16:
		return signed(int64(x)), true
	case int32:
		return signed(int64(x)), true
	case int64:
		return signed(x), true
	case uint8:
		return number{mag: uint64(x)}, true
	case uint16:
		return number{mag: uint64(x)}, true
	case uint32:
		return number{mag: uint64(x)}, true
	case uint64:
		return number{mag: x}, true
	case ua.StatusCode:
		return number{mag: uint64(x)}, true
	case float32:
		return number{isFloat: true, f: float64(x)}, true
	case float64:
		return number{isFloat: true, f: x}, true
	}
	return number{}, false
}

func signed(x int64) number {
	if x < 0 {
		return number{neg: true, mag: uint64(-(x + 1)) + 1}
	}
	return number{mag: uint64(x)}
}

func (n number) float() float64 {
	if n.isFloat {
		return n.f
	}
	if n.neg {
		return -float64(n.mag)
	}
	return float64(n.mag)
}

// compareNumbers orders two numeric scalars. Booleans compare with
// numbers only when the other side is numeric too; NaN compares with
// nothing.
func compareNumbers(a, b any) (int, bool) {
	x, ok1 := asNumber(a)
	y, ok2 := asNumber(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	if x.isFloat || y.isFloat {
		fx, fy := x.float(), y.float()
		switch {
		case math.IsNaN(fx) || math.IsNaN(fy):
			return 0, false
		case fx < fy:
			return -1, true
		case fx > fy:
			return 1, true
		}
		return 0, true
	}
	switch {
	case x.neg != y.neg:
		if x.neg {
			return -1, true
		}
		return 1, true
	case x.mag == y.mag:
		return 0, true
	case (x.mag < y.mag) != x.neg:
		return -1, true
	}
	return 1, true
}
