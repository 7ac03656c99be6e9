// Package conditions is otopcua's OPC UA Alarms & Conditions surface
// (Part 9): condition instances of AlarmConditionType in the address
// space, their events, the condition methods and ConditionRefresh. The
// alarm engine drives it: it defines a condition per deployed alarm
// (Manager.Define), reports each transition (Manager.Update) and carries
// out what clients call (Actions). The engine decides the states; this
// package only shows them and routes the calls.
//
// It sits on top of package opcua and uses its hooks: the address space
// (nodes and events), RegisterMethod (Call), InjectEvents (events for one
// subscription only) and, for HistoryRead, the HistoryRead bit it sets on
// the parents (the event store itself is set with
// opcua.Server.SetEventHistory by whoever owns it).
//
// # What a client sees
//
// A condition Spec{Name: "HighTemperature", NodeID: ns=1;s=press1/HighTemperature,
// Parent: ns=1;s=press1, SourceNode: ns=1;s=press1/Temperature} is:
//
//   - An Object of type AlarmConditionType (i=2915), BrowseName and
//     DisplayName the Name, a HasComponent of Parent. Its EventNotifier is
//     SubscribeToEvents: clients may watch the condition alone.
//   - Its components, read-only, NodeIds "<condition id>.<path>"
//     (…HighTemperature.ActiveState.Id), namespace 0 browse names:
//     the BaseEventType properties EventId, EventType, SourceNode,
//     SourceName, Time, ReceiveTime, Message, Severity (those of the last
//     event; before the first Update EventId is null); ConditionClassId
//     (BaseConditionClassType, i=11163), ConditionClassName
//     ("BaseConditionClass"), ConditionName, BranchId (the null NodeId:
//     no branches), Retain; EnabledState, AckedState, ConfirmedState and
//     ActiveState (TwoStateVariableType: LocalizedText "Enabled"/"Disabled",
//     "Acknowledged"/"Unacknowledged", "Confirmed"/"Unconfirmed",
//     "Active"/"Inactive", each with properties Id, Boolean, and
//     TransitionTime); Quality, LastSeverity and Comment
//     (ConditionVariableType, each with SourceTimestamp); ClientUserId;
//     InputNode (the SourceNode); SuppressedOrShelved (false: no shelving
//     or suppression).
//   - HasComponent references to the type's methods Acknowledge (i=9111),
//     Confirm (i=9113), Enable (i=9027), Disable (i=9028) and AddComment
//     (i=9029), marked Executable. Clients call them with ObjectId the
//     condition and MethodId the standard id.
//   - Server (i=2253) -HasNotifier-> Parent -HasEventSource-> condition
//     and SourceNode, SourceNode -HasCondition-> condition. Parent's
//     EventNotifier gets SubscribeToEvents and HistoryRead.
//
// # Events
//
// Every Update raises one AlarmConditionType event on the condition, with
// a new EventId, which reaches the condition, its parent and the Server
// object. Its fields are every component above, by the same browse paths
// (EventFilter select clauses such as AlarmConditionType/ActiveState/Id,
// AcknowledgeableConditionType/AckedState/Id, ConditionType/Quality/
// SourceTimestamp, ConditionType/EnabledState/TransitionTime), and the
// ConditionId: the select clause with TypeDefinitionId ConditionType
// (i=2782), an empty BrowsePath and AttributeId NodeId selects the
// condition's NodeId. A field selected on a type the event is not of, or
// one the event has no value for (e.g. LocalTime), is a null Variant. The
// components are written before the event is raised.
//
// Update stamps what changed with State.Time: the TransitionTime of each
// two-state variable whose Id changed, LastSeverity (the severity before,
// when it changed) and its SourceTimestamp, Comment's SourceTimestamp;
// Quality's SourceTimestamp is State.Time on every Update. The event's Time
// is State.Time, its ReceiveTime the time of the Update, its SourceNode
// and SourceName the Spec's, its Message and Severity the State's (the
// Spec's when empty or zero).
//
// # Methods and their status codes
//
// Call checks before the Manager sees anything (package uaserver):
// an unknown object BadNodeIdUnknown; a method that is not the object's
// BadMethodInvalid; too few input arguments BadArgumentsMissing, too many
// BadTooManyArguments; an argument of the wrong type BadInvalidArgument
// with BadTypeMismatch in its InputArgumentResults. Acknowledge, Confirm
// and AddComment take (EventId ByteString, Comment LocalizedText); Enable
// and Disable none. An object that has the method but is not one of this
// Manager's conditions answers BadNodeIdUnknown. Then the Manager calls
// Actions with the condition's Name and the session's user
// (uaserver.AnonymousUser) and answers what it returns (Good,
// BadConditionBranchAlreadyAcked, BadConditionBranchAlreadyConfirmed,
// BadEventIdUnknown, BadConditionAlreadyEnabled,
// BadConditionAlreadyDisabled, BadInvalidState when not the Primary, …).
// The Manager does not change any state itself: the engine reports the
// transition a method caused with Update, from inside the Action or
// later.
//
// ConditionRefresh (i=3875; input SubscriptionId UInt32) and
// ConditionRefresh2 (i=12912; SubscriptionId, MonitoredItemId), called on
// the ConditionType (i=2782) or on a condition, deliver to the event items
// of that subscription (or that one item) only: a RefreshStartEvent
// (i=2787), then the last event of every condition whose Retain is true,
// in Name order, to each item whose notifier that event reaches (the same
// EventId as when it was raised, carrying the current state: Part 9
// §5.5.7), then a RefreshEndEvent (i=2788). Start and End have SourceNode
// the Server object, one EventId each for all their copies, and pass any
// where clause (Part 9 §4.5); the conditions' events meet each item's
// where clause. Other subscriptions, of this session or another, see
// nothing. Status: Good; BadSubscriptionIdInvalid (no such subscription);
// BadUserAccessDenied (another session's subscription);
// BadMonitoredItemIdInvalid (ConditionRefresh2 with an item that is not
// an event item of it); BadNothingToDo (no event item). A refresh runs
// while the call is served; BadRefreshInProgress is never answered.
//
// # Invariants
//
//  1. A condition's component variables and its last event agree: both
//     are written under Manager.mu, the variables first, and the event is
//     raised after.
//  2. The conditions' events reach clients in the order of the Updates,
//     and a ConditionRefresh never delivers a state older than one raised
//     live after it started (Manager.raiseMu).
//  3. Every condition Define created is in the address space until Remove,
//     and nothing of a failed Define stays.
//  4. Actions run with no lock of the Manager held (see
//     locksordering.txt).
//
// # Duties of the caller (the alarm engine)
//
//  1. Create one Manager per opcua.Server (NewManager registers the
//     methods; a second one panics) and Close it before the server.
//  2. Define a condition per deployed alarm before reporting it; Remove it
//     when the deployment drops the alarm. Give each its own String NodeId
//     and an existing Parent (and SourceNode).
//  3. Call Update on every transition, with the complete State (not from
//     a WatchEvents callback of a notifier the conditions reach); keep the
//     EventId it returns to check the eventID an Acknowledge, Confirm or
//     AddComment names (the Manager passes it unchecked).
//  4. Keep Actions quick and non-blocking (they run on the caller's
//     channel goroutine) and apply the Primary gate there.
//  5. Set Retain as Part 9 defines it (active, or unacknowledged, or
//     unconfirmed): ConditionRefresh sends exactly the retained ones.
package conditions
