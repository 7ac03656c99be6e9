package subscription

import (
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
)

// SessionID identifies the OPC UA session a request arrived on. The server
// layer chooses the value (the session's NodeId rendered as a string); the
// engine only compares them.
type SessionID string

// Sender answers a request asynchronously on the secure channel it arrived
// on. The engine calls SendResponse from its own goroutines, never from the
// goroutine that called Publish. Implementations must be safe for concurrent
// use; they may block on the socket write but must return an error (not hang)
// once the channel is closed.
type Sender interface {
	SendResponse(reqID uint32, resp ua.Response) error
}

// Source is the address space as the engine sees it.
//
// Read must be safe for concurrent use and must not block on anything but
// short internal locks. It returns a DataValue whose Status carries
// BadNodeIdUnknown or BadAttributeIdInvalid when the node or attribute does
// not exist.
//
// Watch registers fn to be called after every change of the Value attribute
// of node id. fn is called on the writer's goroutine, possibly concurrently
// for different nodes, and must not block. The returned cancel function
// removes the registration; it is safe to call more than once. Watch returns
// BadNodeIdUnknown when the node does not exist and BadAttributeIdInvalid when
// it has no Value attribute (not a Variable).
type Source interface {
	Read(id *ua.NodeID, attr ua.AttributeID) *ua.DataValue
	Watch(id *ua.NodeID, fn func(*ua.DataValue)) (cancel func(), status ua.StatusCode)
}

// EventSource is the address space as the engine sees it for event
// monitored items (items on the EventNotifier attribute with an
// EventFilter). Set it in Options.Events.
//
// WatchEvents registers fn to be called with every event notifier id
// reports. fn is called on the raiser's goroutine with no lock of the
// EventSource held, possibly concurrently for different events, and must
// not block; the event is shared and must not be modified. The returned
// cancel function removes the registration; it is safe to call more than
// once. Status: BadNodeIdUnknown, BadAttributeIdInvalid (the node has no
// EventNotifier attribute), BadNotSupported (it is not an event notifier).
//
// CheckEventType reports whether typ is BaseEventType or a subtype:
// Good, BadNodeIdUnknown or BadTypeDefinitionInvalid.
//
// CheckEventField reports whether path names a field of events of type
// typ, its supertypes or its subtypes: Good, the CheckEventType codes, or
// BadBrowseNameInvalid.
//
// The Check methods are called when items are created or modified, with
// no engine lock held; they must be safe for concurrent use.
type EventSource interface {
	WatchEvents(id *ua.NodeID, fn func(*events.Event)) (cancel func(), status ua.StatusCode)
	EventTypeChecker
}

// EventTypeChecker is the part of an EventSource that validates an
// EventFilter (see EventSource for the methods); ParseEventFilter needs
// only it.
type EventTypeChecker interface {
	CheckEventType(typ *ua.NodeID) ua.StatusCode
	CheckEventField(typ *ua.NodeID, path []*ua.QualifiedName) ua.StatusCode
}
