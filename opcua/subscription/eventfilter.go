package subscription

import (
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// This file validates an EventFilter (Part 4 §7.22.3) into an eventFilter:
// the select clauses become selectors and the where clause a whereClause
// (evaluated in where.go). Validation asks the EventSource about event
// types and fields; evaluation is pure.

// Bounds on the size of an EventFilter, so that one item cannot make every
// event expensive; the server publishes them as ServerCapabilities
// MaxSelectClauseParameters and MaxWhereClauseParameters (Part 5 §6.3.2).
// A filter beyond them fails with BadEventFilterInvalid.
const (
	// MaxSelectClauses bounds the select clauses of an EventFilter.
	MaxSelectClauses = 64
	// MaxWhereOperands bounds the operands of all elements of a where
	// clause together (and so the number of elements).
	MaxWhereOperands = 256
)

// eventFilter is a validated EventFilter. It is immutable: a modification
// replaces it.
type eventFilter struct {
	selects []selector
	where   *whereClause    // nil: every event passes
	src     *ua.EventFilter // as the client sent it (a replica's snapshot)
}

// selector is one validated SimpleAttributeOperand: a field of events of
// type typ.
type selector struct {
	typ    *ua.NodeID      // nil: any event (BaseEventType)
	key    events.FieldKey // the BrowsePath
	nodeID bool            // empty BrowsePath, AttributeId NodeId: the ConditionId
}

// nullVariant is the value of a field an event lacks. Variants are shared
// and never modified, so one does for every message.
var nullVariant = ua.MustVariant(nil)

// value returns the field of ev s selects: null when ev is not of s's type
// or lacks the field.
func (s selector) value(ev *events.Event) *ua.Variant {
	if s.typ != nil && !ev.OfType(s.typ) {
		return nullVariant
	}
	if s.nodeID {
		if ev.ConditionID == nil {
			return nullVariant
		}
		return ua.MustVariant(ev.ConditionID)
	}
	if v := ev.Field(s.key); v != nil {
		return v
	}
	return nullVariant
}

// fields returns the event fields of ev in select clause order.
func (f *eventFilter) fields(ev *events.Event) []*ua.Variant {
	out := make([]*ua.Variant, len(f.selects))
	for i, s := range f.selects {
		out[i] = s.value(ev)
	}
	return out
}

// passes reports whether ev satisfies the where clause.
func (f *eventFilter) passes(ev *events.Event) bool {
	return f.where == nil || f.where.matches(ev)
}

// asEventFilter returns the EventFilter in eo, or ok false when eo holds
// something else (nil when eo is empty).
func asEventFilter(eo *ua.ExtensionObject) (f *ua.EventFilter, ok bool) {
	if eo == nil || eo.Value == nil {
		return nil, true
	}
	switch v := eo.Value.(type) {
	case *ua.EventFilter:
		return v, true
	case ua.EventFilter:
		return &v, true
	}
	return nil, false
}

// parseEventFilter validates the filter of an event item. On failure it
// returns BadEventFilterInvalid and the EventFilterResult that says which
// clause and operand failed (Part 4 §7.22.3): every select clause gets a
// status, and every where clause element a ContentFilterElementResult. An
// item without select clauses is refused too: it could report nothing.
func parseEventFilter(f *ua.EventFilter, src EventTypeChecker) (*eventFilter, *ua.EventFilterResult, ua.StatusCode) {
	if f == nil || len(f.SelectClauses) == 0 || len(f.SelectClauses) > MaxSelectClauses {
		return nil, emptyFilterResult(), ua.StatusBadEventFilterInvalid
	}
	out := &eventFilter{selects: make([]selector, len(f.SelectClauses)), src: f}
	res := &ua.EventFilterResult{
		SelectClauseResults: make([]ua.StatusCode, len(f.SelectClauses)),
		WhereClauseResult:   &ua.ContentFilterResult{},
	}
	bad := false
	for i, op := range f.SelectClauses {
		sel, st := parseOperand(op, src)
		res.SelectClauseResults[i] = st
		out.selects[i] = sel
		bad = bad || st != ua.StatusGood
	}
	where, wres, st := parseWhere(f.WhereClause, src)
	res.WhereClauseResult = wres
	if bad || st != ua.StatusGood {
		return nil, res, ua.StatusBadEventFilterInvalid
	}
	out.where = where
	return out, nil, ua.StatusGood
}

// emptyFilterResult is an EventFilterResult with nothing to report. Its
// WhereClauseResult is not nil: gopcua's encoder writes nothing for a nil
// struct pointer, which would corrupt the message.
func emptyFilterResult() *ua.EventFilterResult {
	return &ua.EventFilterResult{WhereClauseResult: &ua.ContentFilterResult{}}
}

var baseEventType = ua.NewNumericNodeID(0, id.BaseEventType)

// parseOperand validates a SimpleAttributeOperand (Part 4 §7.7.4.5): the
// type must be an event type (null means BaseEventType), the AttributeId
// Value for a field, or NodeId with an empty BrowsePath (the ConditionId),
// the BrowsePath a field of that type, and IndexRange empty (not
// supported).
func parseOperand(op *ua.SimpleAttributeOperand, src EventTypeChecker) (selector, ua.StatusCode) {
	if op == nil {
		return selector{}, ua.StatusBadStructureMissing
	}
	typ := op.TypeDefinitionID
	if typ == nil || events.SameNode(typ, ua.NewTwoByteNodeID(0)) {
		typ = baseEventType
	}
	if st := src.CheckEventType(typ); st != ua.StatusGood {
		return selector{}, st
	}
	sel := selector{typ: typ, key: events.Key(op.BrowsePath)}
	if events.SameNode(typ, baseEventType) {
		sel.typ = nil // Part 4: the path is evaluated whatever the event's type
	}
	switch {
	case op.IndexRange != "":
		return selector{}, ua.StatusBadIndexRangeInvalid
	case len(op.BrowsePath) == 0:
		if op.AttributeID != ua.AttributeIDNodeID {
			return selector{}, ua.StatusBadAttributeIDInvalid
		}
		sel.nodeID = true
		return sel, ua.StatusGood
	case op.AttributeID != ua.AttributeIDValue:
		return selector{}, ua.StatusBadAttributeIDInvalid
	}
	if st := src.CheckEventField(typ, op.BrowsePath); st != ua.StatusGood {
		return selector{}, st
	}
	return sel, ua.StatusGood
}

// CompiledEventFilter is a validated EventFilter, for a service that
// selects event fields as event items do (HistoryRead of events, Part 11
// §6.5.2: "defined and used in the same manner as … for monitored data
// items"). It is immutable and safe for concurrent use.
type CompiledEventFilter struct {
	f *eventFilter
}

// ParseEventFilter validates f against src exactly as CreateMonitoredItems
// validates an event item's filter: on failure it returns
// BadEventFilterInvalid and the EventFilterResult naming the failing
// select clauses and where-clause elements.
func ParseEventFilter(f *ua.EventFilter, src EventTypeChecker) (*CompiledEventFilter, *ua.EventFilterResult, ua.StatusCode) {
	ef, res, st := parseEventFilter(f, src)
	if st != ua.StatusGood {
		return nil, res, st
	}
	return &CompiledEventFilter{f: ef}, nil, ua.StatusGood
}

// Passes reports whether ev satisfies the where clause (no where clause:
// every event passes). ev must be prepared.
func (c *CompiledEventFilter) Passes(ev *events.Event) bool { return c.f.passes(ev) }

// Fields returns ev's fields in select clause order; a field ev lacks, or
// one selected on a type ev is not of, is a null Variant.
func (c *CompiledEventFilter) Fields(ev *events.Event) []*ua.Variant { return c.f.fields(ev) }
