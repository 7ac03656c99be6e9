package opcua

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/client"
)

// This file mirrors the upstream's conditions ("alarms" on the device):
// one event item on the notifier (default the Server object) selects the
// Part 9 fields below; a ConditionRefresh after every connect and
// transfer lists what the upstream retains; every condition event and
// every refresh is handed to Options.OnConditions.

// Select clauses of the event item, in this order (eventFilter).
const (
	fEventID = iota
	fEventType
	fConditionID
	fBranchID
	fSourceNode
	fSourceName
	fTime
	fMessage
	fSeverity
	fConditionName
	fRetain
	fEnabled
	fActive
	fAcked
	fConfirmed
	fComment
	fClientUserID
	nFields
)

// eventFilter selects the fields above of every event of ConditionType
// (and subtypes) and of the refresh bracket events.
func eventFilter() *ua.EventFilter {
	op := func(typ uint32, attr ua.AttributeID, path ...string) *ua.SimpleAttributeOperand {
		bp := make([]*ua.QualifiedName, len(path))
		for i, p := range path {
			bp[i] = &ua.QualifiedName{Name: p}
		}
		return &ua.SimpleAttributeOperand{TypeDefinitionID: ua.NewNumericNodeID(0, typ), BrowsePath: bp, AttributeID: attr}
	}
	v := ua.AttributeIDValue
	sel := make([]*ua.SimpleAttributeOperand, nFields)
	sel[fEventID] = op(id.BaseEventType, v, "EventId")
	sel[fEventType] = op(id.BaseEventType, v, "EventType")
	sel[fConditionID] = op(id.ConditionType, ua.AttributeIDNodeID)
	sel[fBranchID] = op(id.ConditionType, v, "BranchId")
	sel[fSourceNode] = op(id.BaseEventType, v, "SourceNode")
	sel[fSourceName] = op(id.BaseEventType, v, "SourceName")
	sel[fTime] = op(id.BaseEventType, v, "Time")
	sel[fMessage] = op(id.BaseEventType, v, "Message")
	sel[fSeverity] = op(id.BaseEventType, v, "Severity")
	sel[fConditionName] = op(id.ConditionType, v, "ConditionName")
	sel[fRetain] = op(id.ConditionType, v, "Retain")
	sel[fEnabled] = op(id.ConditionType, v, "EnabledState", "Id")
	sel[fActive] = op(id.AlarmConditionType, v, "ActiveState", "Id")
	sel[fAcked] = op(id.AcknowledgeableConditionType, v, "AckedState", "Id")
	sel[fConfirmed] = op(id.AcknowledgeableConditionType, v, "ConfirmedState", "Id")
	sel[fComment] = op(id.ConditionType, v, "Comment")
	sel[fClientUserID] = op(id.ConditionType, v, "ClientUserId")
	ofType := func(typ uint32) *ua.ContentFilterElement {
		lit := &ua.LiteralOperand{Value: ua.MustVariant(ua.NewNumericNodeID(0, typ))}
		return &ua.ContentFilterElement{FilterOperator: ua.FilterOperatorOfType, FilterOperands: []*ua.ExtensionObject{ua.NewExtensionObject(lit)}}
	}
	or := func(a, b uint32) *ua.ContentFilterElement {
		return &ua.ContentFilterElement{FilterOperator: ua.FilterOperatorOr, FilterOperands: []*ua.ExtensionObject{
			ua.NewExtensionObject(&ua.ElementOperand{Index: a}), ua.NewExtensionObject(&ua.ElementOperand{Index: b})}}
	}
	where := &ua.ContentFilter{Elements: []*ua.ContentFilterElement{
		or(1, 2), ofType(id.ConditionType), or(3, 4), ofType(id.RefreshStartEventType), ofType(id.RefreshEndEventType),
	}}
	return &ua.EventFilter{SelectClauses: sel, WhereClause: where}
}

// eventKind is what one upstream event is to the mirror.
type eventKind int

const (
	evIgnore       eventKind = iota // not a condition's trunk, or unreadable
	evRefreshStart                  // RefreshStartEvent
	evRefreshEnd                    // RefreshEndEvent
	evCondition                     // a condition's state
)

// parseEvent maps one event's fields (eventFilter's order) to a
// condition's state. tagOf names the tag mirroring an upstream node ("" for
// none). It is pure: the table test covers it.
func parseEvent(f []*ua.Variant, tagOf func(*ua.NodeID) string) (drivers.UpstreamCondition, eventKind) {
	var c drivers.UpstreamCondition
	if len(f) != nFields {
		return c, evIgnore
	}
	if t, ok := value[*ua.NodeID](f[fEventType]); ok && t.Namespace() == 0 {
		switch t.IntID() {
		case id.RefreshStartEventType:
			return c, evRefreshStart
		case id.RefreshEndEventType:
			return c, evRefreshEnd
		}
	}
	cid, ok := value[*ua.NodeID](f[fConditionID])
	if !ok || cid == nil {
		return c, evIgnore
	}
	if b, ok := value[*ua.NodeID](f[fBranchID]); ok && b != nil && !isNullNode(b) {
		return c, evIgnore // a branch (a previous state kept for acknowledgement): only the trunk is mirrored
	}
	c.ID = cid.String()
	c.EventID, _ = value[[]byte](f[fEventID])
	if src, ok := value[*ua.NodeID](f[fSourceNode]); ok && src != nil && tagOf != nil {
		c.Tag = tagOf(src)
	}
	c.SourceName, _ = value[string](f[fSourceName])
	c.Time, _ = value[time.Time](f[fTime])
	if m, ok := value[*ua.LocalizedText](f[fMessage]); ok && m != nil {
		c.Message = m.Text
	}
	if s, ok := value[uint16](f[fSeverity]); ok {
		c.Severity = int(min(max(s, 1), 1000))
	} else {
		c.Severity = 1
	}
	if n, ok := value[string](f[fConditionName]); ok && n != "" {
		c.Name = n
	} else {
		c.Name = c.ID
	}
	c.Retain, _ = value[bool](f[fRetain])
	enabled, eok := value[bool](f[fEnabled])
	c.Enabled = enabled || !eok // a server that does not say: enabled
	c.Active, _ = value[bool](f[fActive])
	acked, aok := value[bool](f[fAcked])
	c.Acked = acked || !aok // not acknowledgeable: nothing to acknowledge
	if m, ok := value[*ua.LocalizedText](f[fComment]); ok && m != nil {
		c.Comment = m.Text
	}
	c.User, _ = value[string](f[fClientUserID])
	confirmed, cok := value[bool](f[fConfirmed])
	c.Confirmed = confirmed || !cok // ConfirmedState is optional
	return c, evCondition
}

// value is a field's value as T; false when absent (a null Variant: the
// event has no such field) or of another type.
func value[T any](v *ua.Variant) (T, bool) {
	var zero T
	if v == nil || v.Value() == nil {
		return zero, false
	}
	t, ok := v.Value().(T)
	return t, ok
}

func isNullNode(n *ua.NodeID) bool {
	return n.Namespace() == 0 && n.Type() == ua.NodeIDTypeTwoByte && n.IntID() == 0 ||
		n.Namespace() == 0 && n.Type() == ua.NodeIDTypeFourByte && n.IntID() == 0 ||
		n.Namespace() == 0 && n.Type() == ua.NodeIDTypeNumeric && n.IntID() == 0
}

// condMirror is the driver's view of the upstream's conditions.
//
// Locks: mu guards every field; it is taken before Driver.mu (tagOf), never
// with sinkMu held, and held while OnConditions is called, so that the
// updates reach it in the upstream's order (the sink does not block).
type condMirror struct {
	mu         sync.Mutex
	known      map[string]drivers.UpstreamCondition // by ID, the last state of each; mu must be held.
	refreshing bool                                 // between RefreshStart and RefreshEnd; mu must be held.
	batch      []drivers.UpstreamCondition          // the refresh so far; mu must be held.
	overLogged bool                                 // the bound was logged since the last refresh; mu must be held.
	sub        *client.Subscription                 // the subscription to refresh; mu must be held.
}

// alarmsOn reports whether the device mirrors its upstream's conditions.
func (d *Driver) alarmsOn() bool { return d.dev.Alarms != nil && d.opts.OnConditions != nil }

// eventItem is the event item on the device's notifier.
func (d *Driver) eventItem(ctx context.Context, cl *client.Client) (client.Item, error) {
	src := d.dev.Alarms.EffectiveSource()
	var ns []string
	if r, _ := deployment.ParseNodeRef(src); r.NamespaceURI != "" {
		res, err := cl.ReadAttributes(ctx, []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_NamespaceArray), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}})
		if err != nil {
			return client.Item{}, fmt.Errorf("read the upstream's NamespaceArray: %w", err)
		}
		if len(res) == 1 && res[0] != nil && res[0].Value != nil {
			ns, _ = res[0].Value.Value().([]string)
		}
	}
	n, p := resolve(deployment.Tag{Name: "alarms.source", NodeId: src}, ns)
	if p != nil {
		return client.Item{}, fmt.Errorf("alarms.source %s: %s", src, p.Why)
	}
	return client.Item{Node: n, Events: eventFilter()}, nil
}

// tagOf names the tag whose resolved upstream node is n ("" for none).
func (d *Driver) tagOf(n *ua.NodeID) string {
	s := n.String()
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, m := range d.nodes {
		if m != nil && m.String() == s {
			return d.dev.Tags[i].Name
		}
	}
	return ""
}

// onEvents takes a batch of event notifications of the event item.
func (d *Driver) onEvents(batch []client.Notification) {
	m := &d.conds
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range batch {
		if n.Event == nil {
			if n.Value != nil && n.Value.Status != ua.StatusOK {
				d.log.Error("opcua: the upstream refused the event item of alarms.source; its conditions are not mirrored", "source", d.dev.Alarms.EffectiveSource(), "status", n.Value.Status.Error())
			}
			continue
		}
		c, kind := parseEvent(n.Event, d.tagOf)
		switch kind {
		case evRefreshStart:
			m.refreshing, m.batch = true, nil
		case evRefreshEnd:
			if !m.refreshing {
				continue
			}
			m.refreshing, m.overLogged = false, false
			m.known = make(map[string]drivers.UpstreamCondition, len(m.batch))
			for _, c := range m.batch {
				m.known[c.ID] = c
			}
			d.log.Info("opcua: upstream conditions refreshed", "retained", len(m.batch))
			d.opts.OnConditions(drivers.ConditionUpdate{Device: d.dev.Name, Refresh: true, Conditions: m.batch})
			m.batch = nil
		case evCondition:
			d.takeCondition(c)
		}
	}
}

// takeCondition records one condition's event and reports it (or adds it
// to the refresh under way). m.mu must be held.
func (d *Driver) takeCondition(c drivers.UpstreamCondition) {
	m := &d.conds
	if _, ok := m.known[c.ID]; !ok && len(m.known) >= d.dev.Alarms.EffectiveMax() {
		if !m.overLogged {
			m.overLogged = true
			d.log.Error("opcua: more upstream conditions than alarms.max; the new ones are not mirrored", "max", d.dev.Alarms.EffectiveMax(), "first_left_out", c.ID)
		}
		return
	}
	if m.known == nil {
		m.known = map[string]drivers.UpstreamCondition{}
	}
	m.known[c.ID] = c
	if m.refreshing {
		for i := range m.batch {
			if m.batch[i].ID == c.ID {
				m.batch[i] = c
				return
			}
		}
		m.batch = append(m.batch, c)
		return
	}
	d.opts.OnConditions(drivers.ConditionUpdate{Device: d.dev.Name, Conditions: []drivers.UpstreamCondition{c}})
}

// startConditions records the new subscription and asks the upstream for a
// ConditionRefresh on it.
func (d *Driver) startConditions(ctx context.Context, cl *client.Client, sub *client.Subscription) {
	d.conds.mu.Lock()
	d.conds.sub = sub
	d.conds.mu.Unlock()
	go d.refreshConditions(ctx, cl)
}

// refreshConditions calls ConditionRefresh on the current subscription: the
// upstream then sends every retained condition between a RefreshStart and
// a RefreshEnd event (onEvents).
func (d *Driver) refreshConditions(ctx context.Context, cl *client.Client) {
	d.conds.mu.Lock()
	sub := d.conds.sub
	d.conds.mu.Unlock()
	if sub == nil || cl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, drivers.Timeout(d.dev))
	defer cancel()
	res, err := cl.Call(ctx, &ua.CallMethodRequest{
		ObjectID: ua.NewNumericNodeID(0, id.ConditionType), MethodID: ua.NewNumericNodeID(0, id.ConditionType_ConditionRefresh),
		InputArguments: []*ua.Variant{ua.MustVariant(sub.ID())},
	})
	switch {
	case err != nil:
		if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
			d.log.Warn("opcua: ConditionRefresh failed; the conditions are as their last events said", "err", err)
		}
	case res[0].StatusCode != ua.StatusOK:
		d.log.Warn("opcua: the upstream refused ConditionRefresh; the conditions are as their last events said", "status", res[0].StatusCode.Error())
	}
}

// AckCondition acknowledges (or confirms) an upstream condition with its
// last EventId (drivers.ConditionMethods).
func (d *Driver) AckCondition(ctx context.Context, condID string, confirm bool, comment string) ua.StatusCode {
	d.conds.mu.Lock()
	c, known := d.conds.known[condID]
	d.conds.mu.Unlock()
	d.mu.Lock()
	cl := d.cl
	d.mu.Unlock()
	if !known {
		return ua.StatusBadNodeIDUnknown
	}
	if cl == nil {
		return ua.StatusBadCommunicationError
	}
	node, err := ua.ParseNodeID(condID)
	if err != nil {
		return ua.StatusBadNodeIDUnknown
	}
	method := uint32(id.AcknowledgeableConditionType_Acknowledge)
	if confirm {
		method = id.AcknowledgeableConditionType_Confirm
	}
	ctx, cancel := context.WithTimeout(ctx, drivers.Timeout(d.dev))
	defer cancel()
	res, err := cl.Call(ctx, &ua.CallMethodRequest{
		ObjectID: node, MethodID: ua.NewNumericNodeID(0, method),
		InputArguments: []*ua.Variant{ua.MustVariant(c.EventID), ua.MustVariant(&ua.LocalizedText{EncodingMask: ua.LocalizedTextText, Text: comment})},
	})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ua.StatusBadTimeout
	case err != nil:
		d.log.Warn("opcua: upstream condition method failed", "condition", condID, "confirm", confirm, "err", err)
		return ua.StatusBadCommunicationError
	}
	return res[0].StatusCode
}

var _ drivers.ConditionMethods = (*Driver)(nil)
