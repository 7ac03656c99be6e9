package conditions

import (
	"errors"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/events"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Sentinel errors of the Manager.
var (
	// ErrUnknown: no condition of that name is defined.
	ErrUnknown = errors.New("conditions: unknown condition")
	// ErrConflict: Define with a name already defined by another Spec, or
	// with a NodeId another condition has.
	ErrConflict = errors.New("conditions: condition clashes with a defined one")
	// ErrClosed: the Manager was closed.
	ErrClosed = errors.New("conditions: manager closed")
	// ErrInvalidSpec: a Spec field is missing or unusable; the message
	// names it.
	ErrInvalidSpec = errors.New("conditions: invalid condition spec")
)

// Spec describes one condition instance: an AlarmConditionType (i=2915)
// object.
type Spec struct {
	// Name is the alarm's name in the deployment: the condition's
	// ConditionName, BrowseName and DisplayName. Required.
	Name string
	// NodeID is the condition object's NodeId, a String NodeId in a
	// registered namespace (e.g. ns=2;s=press1/HighTemperature); its
	// components are "<id>.<path>" (…HighTemperature.ActiveState.Id).
	// Required.
	NodeID *ua.NodeID
	// Parent is the object (a device folder) the condition sits under by
	// HasComponent. Define makes it an event notifier reachable from the
	// Server object: Server -HasNotifier-> Parent -HasEventSource->
	// condition and SourceNode. Required.
	Parent *ua.NodeID
	// SourceNode is the variable the condition watches (its SourceNode
	// and InputNode; SourceNode -HasCondition-> condition). Optional:
	// nil makes the condition its own source and InputNode null.
	SourceNode *ua.NodeID
	// SourceName is the events' SourceName (e.g. "press1/Temperature").
	SourceName string
	// Severity (1–1000) and Message are the condition's until an Update
	// gives others.
	Severity uint16
	Message  string
}

// equal reports whether two specs describe the same condition.
func (s Spec) equal(o Spec) bool {
	return s.Name == o.Name && events.SameNode(s.NodeID, o.NodeID) && events.SameNode(s.Parent, o.Parent) &&
		events.SameNode(s.SourceNode, o.SourceNode) && s.SourceName == o.SourceName &&
		s.Severity == o.Severity && s.Message == o.Message
}

// State is a condition's current state. Update writes it into the
// component variables and raises one event with it.
type State struct {
	Enabled, Active, Acked, Confirmed, Retain bool
	// Severity of the condition; 0 keeps Spec.Severity.
	Severity uint16
	// Message of the event; "" keeps Spec.Message.
	Message string
	// Comment is the last comment (Acknowledge, Confirm, AddComment).
	Comment string
	// ClientUserID names who last acknowledged, confirmed or commented.
	ClientUserID string
	// Quality is Good, or a Bad code when the alarm's expression failed.
	Quality ua.StatusCode
	// Time is when the transition happened: the event's Time; zero is the
	// time of the Update.
	Time time.Time
	// EventID, when set, is the EventId of the event Update raises (the
	// alarm engine's id for the change, which Acknowledge, Confirm and
	// AddComment then quote); nil gets a fresh one.
	EventID []byte
}

// Actions carry out the condition methods clients call; the alarm engine
// implements them and applies the Primary gate. Each returns the status
// the Call answers: Good, BadConditionBranchAlreadyAcked,
// BadConditionBranchAlreadyConfirmed, BadEventIdUnknown,
// BadConditionAlreadyEnabled, BadConditionAlreadyDisabled,
// BadConditionDisabled, BadInvalidState (not the Primary), …
//
// The Manager calls them on the caller's secure-channel goroutine, one
// call at a time per client channel but concurrently across clients, with
// no lock of the Manager held: they may call Update (a transition the
// method caused should be raised that way) and must return quickly (no
// waiting on other nodes; the channel's later requests wait). The Manager
// passes eventID as the client sent it without checking it: compare it
// with the EventIds Update returned (Snapshot gives the last one). by is
// the calling session: its user (uaserver.AnonymousUser for an anonymous
// session), role and SessionId.
type Actions interface {
	Acknowledge(name string, eventID []byte, comment ua.LocalizedText, by Caller) ua.StatusCode
	Confirm(name string, eventID []byte, comment ua.LocalizedText, by Caller) ua.StatusCode
	Enable(name string, by Caller) ua.StatusCode
	Disable(name string, by Caller) ua.StatusCode
	AddComment(name string, eventID []byte, comment ua.LocalizedText, by Caller) ua.StatusCode
}

// Caller is the session a condition method runs in.
type Caller struct {
	// User is the session's user, Role its role (OpcUa:Authorization).
	User, Role string
	// Session is the SessionId as a NodeId string.
	Session string
}

func callerOf(s uaserver.SessionInfo) Caller {
	c := Caller{User: s.UserID, Role: s.Role}
	if s.NodeID != nil {
		c.Session = s.NodeID.String()
	}
	return c
}
