package conditions

import (
	"context"
	"maps"
	"slices"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Input arguments of the condition methods (their InputArguments in the
// standard nodeset).
var (
	eventIDAndComment = []uaserver.Argument{{Name: "EventId", Type: ua.TypeIDByteString}, {Name: "Comment", Type: ua.TypeIDLocalizedText}}
	subscriptionArg   = []uaserver.Argument{{Name: "SubscriptionId", Type: ua.TypeIDUint32}}
	subscriptionItem  = []uaserver.Argument{{Name: "SubscriptionId", Type: ua.TypeIDUint32}, {Name: "MonitoredItemId", Type: ua.TypeIDUint32}}
)

// method returns the registration of standard method mid.
func (m *Manager) method(mid uint32) uaserver.Method {
	switch mid {
	case id.AcknowledgeableConditionType_Acknowledge:
		return uaserver.Method{Inputs: eventIDAndComment, Func: m.commented(m.actions.Acknowledge), Right: uaserver.RightAcknowledge}
	case id.AcknowledgeableConditionType_Confirm:
		return uaserver.Method{Inputs: eventIDAndComment, Func: m.commented(m.actions.Confirm), Right: uaserver.RightAcknowledge}
	case id.ConditionType_AddComment:
		return uaserver.Method{Inputs: eventIDAndComment, Func: m.commented(m.actions.AddComment), Right: uaserver.RightAcknowledge}
	case id.ConditionType_Enable:
		return uaserver.Method{Func: m.plain(m.actions.Enable)}
	case id.ConditionType_Disable:
		return uaserver.Method{Func: m.plain(m.actions.Disable)}
	case id.ConditionType_ConditionRefresh:
		return uaserver.Method{Inputs: subscriptionArg, Func: m.refresh, Right: uaserver.RightRead}
	case id.ConditionType_ConditionRefresh2:
		return uaserver.Method{Inputs: subscriptionItem, Func: m.refresh, Right: uaserver.RightRead}
	}
	panic("conditions: no handler for method i=" + ua.NewNumericNodeID(0, mid).String())
}

// commented adapts an action taking (EventId, Comment): the object must be
// a condition of this Manager (BadNodeIdUnknown otherwise).
func (m *Manager) commented(act func(string, []byte, ua.LocalizedText, Caller) ua.StatusCode) uaserver.MethodFunc {
	return func(_ context.Context, c *uaserver.MethodCall) ([]*ua.Variant, ua.StatusCode) {
		name, ok := m.lookupNode(c.ObjectID)
		if !ok {
			return nil, ua.StatusBadNodeIDUnknown
		}
		var comment ua.LocalizedText
		if lt := c.Inputs[1].LocalizedText(); lt != nil {
			comment = *lt
		}
		return nil, act(name, c.Inputs[0].ByteString(), comment, callerOf(c.Session))
	}
}

// plain adapts an action without arguments (Enable, Disable).
func (m *Manager) plain(act func(string, Caller) ua.StatusCode) uaserver.MethodFunc {
	return func(_ context.Context, c *uaserver.MethodCall) ([]*ua.Variant, ua.StatusCode) {
		name, ok := m.lookupNode(c.ObjectID)
		if !ok {
			return nil, ua.StatusBadNodeIDUnknown
		}
		return nil, act(name, callerOf(c.Session))
	}
}

// refresh implements ConditionRefresh and ConditionRefresh2 (Part 9
// §5.5.7, §5.5.8): to the event items of the caller's subscription (or
// the one item), a RefreshStartEvent, the last event of every retained
// condition the item's notifier would have received, then a
// RefreshEndEvent. Start and End pass any where clause (Part 9 §4.5); the
// copies of each share one EventId. The conditions' events are the ones
// raised last, EventId included (Part 9 §5.5.7: "identical to the one for
// the original Notification"), which carry their current state.
// Manager.raiseMu is held throughout, so no Update raises a newer state
// before the refresh delivers an older one.
func (m *Manager) refresh(_ context.Context, c *uaserver.MethodCall) ([]*ua.Variant, ua.StatusCode) {
	subID := c.Inputs[0].Value().(uint32)
	var itemID uint32
	if len(c.Inputs) > 1 {
		itemID = c.Inputs[1].Value().(uint32)
		if itemID == 0 {
			return nil, ua.StatusBadMonitoredItemIDInvalid
		}
	}
	start, err := m.space.PrepareEvent(serverObject, events.Event{EventType: refreshStartType,
		Message: ua.NewLocalizedText("ConditionRefresh started"), Severity: 1})
	if err != nil {
		return nil, ua.StatusBadInternalError
	}
	end, err := m.space.PrepareEvent(serverObject, events.Event{EventType: refreshEndType,
		Message: ua.NewLocalizedText("ConditionRefresh ended"), Severity: 1})
	if err != nil {
		return nil, ua.StatusBadInternalError
	}
	m.raiseMu.Lock()
	defer m.raiseMu.Unlock()
	m.mu.Lock()
	retained := m.retainedLocked()
	m.mu.Unlock()
	st := m.srv.InjectEvents(c.Session.ID, subID, itemID, func(notifier *ua.NodeID) []subscription.Injection {
		out := make([]subscription.Injection, 0, len(retained)+2)
		out = append(out, subscription.Injection{Event: start, BypassWhere: true})
		for _, r := range retained {
			if r.reaches(notifier) {
				out = append(out, subscription.Injection{Event: r.ev})
			}
		}
		return append(out, subscription.Injection{Event: end, BypassWhere: true})
	})
	return nil, st
}

// retainedEvent is a retained condition's last event and the notifiers it
// reaches.
type retainedEvent struct {
	ev        *events.Event
	notifiers []*ua.NodeID
}

func (r retainedEvent) reaches(n *ua.NodeID) bool {
	for _, x := range r.notifiers {
		if events.SameNode(x, n) {
			return true
		}
	}
	return false
}

// retainedLocked lists the conditions with Retain set and an event
// raised, by name. m.mu must be held.
func (m *Manager) retainedLocked() []retainedEvent {
	var out []retainedEvent
	for _, name := range slices.Sorted(maps.Keys(m.byName)) {
		c := m.byName[name]
		if !c.state.Retain || c.last == nil {
			continue
		}
		ns, err := m.space.Notifiers(c.spec.NodeID)
		if err != nil {
			continue
		}
		out = append(out, retainedEvent{ev: c.last, notifiers: ns})
	}
	return out
}
