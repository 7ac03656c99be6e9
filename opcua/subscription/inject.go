package subscription

import (
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// Injection is one event InjectEvents delivers to an event item.
type Injection struct {
	// Event is a prepared event (events.Event.Prepare); it is shared and
	// must not be modified. A nil Event is skipped.
	Event *events.Event
	// BypassWhere delivers the event whatever the item's where clause
	// says: Part 9 §4.5 exempts RefreshStartEvent, RefreshEndEvent and
	// RefreshRequiredEvent from the content filter. The select clauses
	// apply as always.
	BypassWhere bool
}

// InjectEvents delivers events to the event monitored items of one
// subscription only, the one with id subID owned by session sess: to its
// event item itemID, or to every event item of it when itemID is 0. Other
// subscriptions see nothing. This is what ConditionRefresh and
// ConditionRefresh2 (Part 9 §5.5.7, §5.5.8) need.
//
// For each item, events is called with the notifier the item watches (its
// NodeId) and returns the events for that item, in order; it is called on
// the caller's goroutine, once per item, with no engine lock held, and
// must not call back into the engine. Each event passes the item's where
// clause unless BypassWhere is set, and the item's select clauses pick its
// fields, as for a raised event. The events of one item enter its queue
// together and in order, with the queue's usual bound and overflow
// marking; a live event may come before or after them but never between.
// A Disabled item receives nothing. They go out with the subscription's
// next publishing cycle.
//
// Status: Good; BadSubscriptionIdInvalid (no such subscription);
// BadUserAccessDenied (the subscription is not sess's: another session's,
// or orphaned by a closed session); BadMonitoredItemIdInvalid (itemID is
// not an event item of the subscription); BadNothingToDo (itemID 0 and
// the subscription has no event item); BadShutdown after Close.
func (e *Engine) InjectEvents(sess SessionID, subID, itemID uint32, events func(notifier *ua.NodeID) []Injection) ua.StatusCode {
	items, st := e.eventItems(sess, subID, itemID)
	if st != ua.StatusGood {
		return st
	}
	now := e.clock.Now()
	for _, it := range items {
		f := it.ev.filter.Load()
		if f == nil {
			continue
		}
		list := events(it.node)
		batch := make([][]*ua.Variant, 0, len(list))
		for _, inj := range list {
			if inj.Event == nil || (!inj.BypassWhere && !f.passes(inj.Event)) {
				continue
			}
			batch = append(batch, f.fields(inj.Event))
		}
		if len(batch) == 0 {
			continue
		}
		it.mu.Lock()
		if it.acceptsLocked() {
			for _, fields := range batch {
				it.queueEventLocked(fields, now)
			}
		}
		it.mu.Unlock()
	}
	return ua.StatusGood
}

// eventItems returns the event items InjectEvents delivers to.
func (e *Engine) eventItems(sess SessionID, subID, itemID uint32) ([]*item, ua.StatusCode) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ua.StatusBadShutdown
	}
	s := e.subs[subID]
	if s == nil {
		return nil, ua.StatusBadSubscriptionIDInvalid
	}
	if ss := e.sessions[sess]; ss == nil || s.sess != ss {
		return nil, ua.StatusBadUserAccessDenied
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if itemID != 0 {
		it := s.items[itemID]
		if it == nil || !it.isEvent() {
			return nil, ua.StatusBadMonitoredItemIDInvalid
		}
		return []*item{it}, ua.StatusGood
	}
	var out []*item
	for _, it := range s.items {
		if it.isEvent() {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		return nil, ua.StatusBadNothingToDo
	}
	return out, ua.StatusGood
}
