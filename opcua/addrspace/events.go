package addrspace

import (
	"errors"
	"fmt"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// Bits of the EventNotifier attribute (Part 3 §5.4).
const (
	// SubscribeToEvents: clients may subscribe to the node's events.
	SubscribeToEvents byte = 0x01
	// HistoryRead: clients may read the node's event history (HistoryRead
	// with ReadEventDetails, served when the server has an event history
	// provider). HistoryWrite: event history may be updated (not served).
	HistoryRead  byte = 0x04
	HistoryWrite byte = 0x08
)

// ErrNotEventType is returned by RaiseEvent for an EventType that is not
// BaseEventType or one of its subtypes.
var ErrNotEventType = errors.New("addrspace: not an event type")

// ErrNotNotifier is returned by SetEventNotifier for a node that is neither
// an Object nor a View.
var ErrNotNotifier = errors.New("addrspace: only objects and views are event notifiers")

// maxNotifierWalk bounds the nodes RaiseEvent visits looking for notifiers,
// so that a reference graph built by mistake cannot make a raise slow.
const maxNotifierWalk = 1024

// SetEventNotifier sets the EventNotifier attribute of object or view
// nodeID. With SubscribeToEvents set, clients may create event monitored
// items on it and RaiseEvent reports to it; cleared, RaiseEvent stops
// reporting to it (its existing event items receive nothing more) and new
// items are refused.
func (as *AddressSpace) SetEventNotifier(nodeID *ua.NodeID, bits byte) error {
	as.mu.Lock()
	defer as.mu.Unlock()
	n := as.lookup(nodeID)
	switch {
	case n == nil:
		return fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	case n.class != ua.NodeClassObject && n.class != ua.NodeClassView:
		return fmt.Errorf("%w: %s", ErrNotNotifier, nodeID)
	}
	n.eventNotifier = bits
	if bits&SubscribeToEvents != 0 && n.notifier == nil {
		n.notifier = new(watchList[*events.Event])
	}
	return nil
}

// RaiseEvent reports ev on node nodeID (a notifier, or a node that is an
// event source of one) and returns once every subscriber has queued it.
//
// The event reaches nodeID itself when it is a notifier (EventNotifier has
// SubscribeToEvents), every notifier above it along inverse HasEventSource
// references (HasNotifier included, as its subtype), and the Server object
// (i=2253), which sees every event of the server.
//
// ev.EventType must be BaseEventType or a subtype of it (ErrNotEventType).
// A copy is completed (events.Event.Prepare: EventId, ReceiveTime, Time,
// the type's ancestry) with SourceNode defaulting to nodeID and SourceName
// to the source's BrowseName. Watchers are called on the caller's goroutine
// with no lock held, like the Value watchers of Set. Safe for concurrent
// use. RaiseEvent is PrepareEvent followed by RaisePrepared.
func (as *AddressSpace) RaiseEvent(nodeID *ua.NodeID, ev events.Event) error {
	p, err := as.PrepareEvent(nodeID, ev)
	if err != nil {
		return err
	}
	return as.RaisePrepared(nodeID, p)
}

// PrepareEvent completes ev as RaiseEvent does (the type check, SourceNode
// and SourceName defaults, events.Event.Prepare at the address space's
// clock) and returns the prepared event without reporting it. The owner
// keeps it (a condition's last event, which ConditionRefresh sends again)
// and reports it with RaisePrepared; it must not be modified.
func (as *AddressSpace) PrepareEvent(nodeID *ua.NodeID, ev events.Event) (*events.Event, error) {
	now := as.clock.Now()
	as.mu.RLock()
	defer as.mu.RUnlock()
	n := as.lookup(nodeID)
	if n == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	}
	types, err := as.eventTypesLocked(ev.EventType)
	if err != nil {
		return nil, err
	}
	if ev.SourceNode == nil {
		ev.SourceNode = n.id
	}
	if ev.SourceName == "" {
		if src := as.lookup(ev.SourceNode); src != nil {
			ev.SourceName = src.browseName.Name
		}
	}
	return ev.Prepare(now, types), nil
}

// RaisePrepared reports p, an event PrepareEvent returned, on node nodeID
// to the notifiers RaiseEvent would reach. p is shared with every watcher.
func (as *AddressSpace) RaisePrepared(nodeID *ua.NodeID, p *events.Event) error {
	if p == nil {
		return fmt.Errorf("%w: nil event", ErrNotEventType)
	}
	as.mu.RLock()
	n := as.lookup(nodeID)
	if n == nil {
		as.mu.RUnlock()
		return fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	}
	targets := as.notifierNodesLocked(n)
	as.mu.RUnlock()
	for _, x := range targets {
		x.notifier.notify(p) // set once, never changed: safe without mu
	}
	return nil
}

// Notifiers returns the NodeIds of the notifiers an event raised on nodeID
// reaches (see RaiseEvent), nodeID itself first when it is one and the
// Server object last. ConditionRefresh uses it to send a condition's state
// only to the event items that would have received its events.
func (as *AddressSpace) Notifiers(nodeID *ua.NodeID) ([]*ua.NodeID, error) {
	as.mu.RLock()
	defer as.mu.RUnlock()
	n := as.lookup(nodeID)
	if n == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownNode, nodeID)
	}
	nodes := as.notifierNodesLocked(n)
	out := make([]*ua.NodeID, len(nodes))
	for k, x := range nodes {
		out[k] = x.id
	}
	return out, nil
}

// EventTypes returns typ and its supertypes up to BaseEventType, nearest
// first: the Types of an event of type typ (events.Event.Prepare). It
// returns ErrNotEventType for a node that is not BaseEventType or a
// subtype.
func (as *AddressSpace) EventTypes(typ *ua.NodeID) ([]*ua.NodeID, error) {
	as.mu.RLock()
	defer as.mu.RUnlock()
	return as.eventTypesLocked(typ)
}

// eventTypesLocked returns typ and its supertypes up to BaseEventType,
// nearest first. mu must be held.
func (as *AddressSpace) eventTypesLocked(typ *ua.NodeID) ([]*ua.NodeID, error) {
	t := as.lookup(typ)
	base := as.nodes[numKey(id.BaseEventType)]
	if t == nil || t.class != ua.NodeClassObjectType || !t.isSubtypeOf(base) {
		return nil, fmt.Errorf("%w: %v", ErrNotEventType, typ)
	}
	var chain []*ua.NodeID
	for x := t; x != nil && len(chain) < maxTypeDepth; x = x.super {
		chain = append(chain, x.id)
		if x == base {
			break
		}
	}
	return chain, nil
}

// notifierNodesLocked returns the notifiers an event raised on n reaches:
// n and the nodes above it along inverse HasEventSource references (and
// subtypes) that are notifiers, then the Server object. mu must be held.
func (as *AddressSpace) notifierNodesLocked(n *node) []*node {
	hasSource := as.nodes[numKey(id.HasEventSource)]
	var out []*node
	seen := []*node{n}
	for i := 0; i < len(seen) && i < maxNotifierWalk; i++ {
		x := seen[i]
		if x.notifies() {
			out = append(out, x)
		}
		for _, r := range x.refs {
			if r.forward || !r.typ.isSubtypeOf(hasSource) || contains(seen, r.target) {
				continue
			}
			seen = append(seen, r.target)
		}
	}
	if server := as.nodes[numKey(id.Server)]; server.notifies() && !contains(seen, server) {
		out = append(out, server)
	}
	return out
}

// notifies reports whether events raised on n are reported to its
// watchers. mu must be held.
func (n *node) notifies() bool {
	return n != nil && n.notifier != nil && n.eventNotifier&SubscribeToEvents != 0
}

func contains(list []*node, n *node) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// WatchEvents registers fn to be called with every event notifier nodeID
// reports (see RaiseEvent), on the raiser's goroutine with no lock held;
// fn must not block and must not modify the event. The returned cancel
// removes the registration and may be called more than once. Status:
// BadNodeIdUnknown; BadAttributeIdInvalid (not an Object or View: no
// EventNotifier attribute); BadNotSupported (EventNotifier lacks
// SubscribeToEvents).
func (as *AddressSpace) WatchEvents(nodeID *ua.NodeID, fn func(*events.Event)) (cancel func(), status ua.StatusCode) {
	as.mu.RLock()
	n := as.lookup(nodeID)
	var st ua.StatusCode
	switch {
	case n == nil:
		st = ua.StatusBadNodeIDUnknown
	case n.class != ua.NodeClassObject && n.class != ua.NodeClassView:
		st = ua.StatusBadAttributeIDInvalid
	case !n.notifies():
		st = ua.StatusBadNotSupported
	}
	as.mu.RUnlock()
	if st != ua.StatusOK {
		return func() {}, st
	}
	return n.notifier.add(fn), ua.StatusOK
}

// CheckEventType reports whether typ is an event type: Good,
// BadNodeIdUnknown, or BadTypeDefinitionInvalid (a node that is not
// BaseEventType or a subtype of it).
func (as *AddressSpace) CheckEventType(typ *ua.NodeID) ua.StatusCode {
	as.mu.RLock()
	defer as.mu.RUnlock()
	_, st := as.eventTypeLocked(typ)
	return st
}

func (as *AddressSpace) eventTypeLocked(typ *ua.NodeID) (*node, ua.StatusCode) {
	t := as.lookup(typ)
	switch {
	case t == nil:
		return nil, ua.StatusBadNodeIDUnknown
	case t.class != ua.NodeClassObjectType || !t.isSubtypeOf(as.nodes[numKey(id.BaseEventType)]):
		return nil, ua.StatusBadTypeDefinitionInvalid
	}
	return t, ua.StatusOK
}

// CheckEventField reports whether path names a field of events of type
// typ (the BrowsePath of a SimpleAttributeOperand, Part 4 §7.22.3): an
// InstanceDeclaration reached by forward hierarchical references from typ,
// from one of its supertypes (inherited fields) or from one of its
// subtypes (a field some events of typ have; BaseEventType thus accepts
// every field of every event type). Status: Good, BadNodeIdUnknown and
// BadTypeDefinitionInvalid as CheckEventType, BadBrowseNameInvalid (an
// empty name, or a path no such type declares).
func (as *AddressSpace) CheckEventField(typ *ua.NodeID, path []*ua.QualifiedName) ua.StatusCode {
	for _, q := range path {
		if q == nil || q.Name == "" {
			return ua.StatusBadBrowseNameInvalid
		}
	}
	as.mu.RLock()
	defer as.mu.RUnlock()
	t, st := as.eventTypeLocked(typ)
	if st != ua.StatusOK {
		return st
	}
	for x, depth := t, 0; x != nil && depth < maxTypeDepth; x, depth = x.super, depth+1 {
		if as.declaresLocked(x, path) {
			return ua.StatusOK
		}
	}
	if as.subtypeDeclaresLocked(t, path) {
		return ua.StatusOK
	}
	return ua.StatusBadBrowseNameInvalid
}

// declaresLocked reports whether path leads from type t through forward
// hierarchical references to a node. mu must be held.
func (as *AddressSpace) declaresLocked(t *node, path []*ua.QualifiedName) bool {
	hier := refFilter{typ: as.nodes[numKey(id.HierarchicalReferences)], subtypes: true}
	cur := []*node{t}
	for _, q := range path {
		cur = step(cur, hier, true, q)
		if len(cur) == 0 {
			return false
		}
	}
	return true
}

// subtypeDeclaresLocked reports whether a subtype of t (at any depth)
// declares path. mu must be held.
func (as *AddressSpace) subtypeDeclaresLocked(t *node, path []*ua.QualifiedName) bool {
	hasSubtype := as.nodes[numKey(id.HasSubtype)]
	todo := []*node{t}
	for i := 0; i < len(todo) && i < maxNotifierWalk; i++ {
		for _, r := range todo[i].refs {
			if !r.forward || r.typ != hasSubtype || contains(todo, r.target) {
				continue
			}
			if as.declaresLocked(r.target, path) {
				return true
			}
			todo = append(todo, r.target)
		}
	}
	return false
}

// WatchEvents is AddressSpace.WatchEvents (subscription.EventSource).
func (s *Source) WatchEvents(nodeID *ua.NodeID, fn func(*events.Event)) (cancel func(), status ua.StatusCode) {
	return s.as.WatchEvents(nodeID, fn)
}

// CheckEventType is AddressSpace.CheckEventType.
func (s *Source) CheckEventType(typ *ua.NodeID) ua.StatusCode { return s.as.CheckEventType(typ) }

// CheckEventField is AddressSpace.CheckEventField.
func (s *Source) CheckEventField(typ *ua.NodeID, path []*ua.QualifiedName) ua.StatusCode {
	return s.as.CheckEventField(typ, path)
}
