package conditions

import (
	"strings"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/events"
)

// Node ids of namespace 0 the package uses.
var (
	alarmConditionType = nsid(id.AlarmConditionType)
	baseConditionClass = nsid(id.BaseConditionClassType)
	refreshStartType   = nsid(id.RefreshStartEventType)
	refreshEndType     = nsid(id.RefreshEndEventType)
	serverObject       = nsid(id.Server)
	nullNodeID         = ua.NewTwoByteNodeID(0)
	twoStateVariable   = uint32(id.TwoStateVariableType)
	conditionVariable  = uint32(id.ConditionVariableType)
	conditionMethodIDs = []uint32{id.AcknowledgeableConditionType_Acknowledge, id.AcknowledgeableConditionType_Confirm, id.ConditionType_Enable, id.ConditionType_Disable, id.ConditionType_AddComment}
	conditionClassName = ua.NewLocalizedText("BaseConditionClass")
	refreshMethodIDs   = []uint32{id.ConditionType_ConditionRefresh, id.ConditionType_ConditionRefresh2}
	allMethodIDs       = append(append([]uint32{}, conditionMethodIDs...), refreshMethodIDs...)
	hasComponent       = nsid(id.HasComponent)
	hasTypeDefinition  = nsid(id.HasTypeDefinition)
	hasEventSource     = nsid(id.HasEventSource)
	hasNotifier        = nsid(id.HasNotifier)
	hasCondition       = nsid(id.HasCondition)
	organizes          = nsid(id.Organizes)
	baseDataVariable   = nsid(id.BaseDataVariableType)
	readOnly           = byte(ua.AccessLevelTypeCurrentRead)
)

func nsid(n uint32) *ua.NodeID { return ua.NewNumericNodeID(0, n) }

// component is one browsable node below a condition, which is also the
// event field of the same browse path.
type component struct {
	path     []string
	dataType uint32
	// typeDef is the VariableType of a component variable (HasComponent);
	// 0 for a property (HasProperty, PropertyType).
	typeDef uint32
	// value is the component's value for condition c before the first
	// Update, and the event field's for every event Update raises (the
	// BaseEventType ones Prepare fills from the event itself; Update then
	// writes each variable from its event's field).
	value func(c *condition) any
}

func (k component) key() events.FieldKey { return events.Field(k.path...) }

// nodeID is the component's NodeId below the condition cond.
func (k component) nodeID(cond *ua.NodeID) *ua.NodeID {
	return ua.NewStringNodeID(cond.Namespace(), cond.StringID()+"."+strings.Join(k.path, "."))
}

// twoState returns the text of a TwoStateVariable.
func twoState(b bool, yes, no string) *ua.LocalizedText {
	if b {
		return ua.NewLocalizedText(yes)
	}
	return ua.NewLocalizedText(no)
}

func orNull(n *ua.NodeID) *ua.NodeID {
	if n == nil {
		return nullNodeID
	}
	return n
}

// components are the condition's nodes and event fields, parents before
// their children. The BaseEventType ones mirror the last event.
var components = []component{
	{[]string{"EventId"}, id.ByteString, 0, func(*condition) any { return []byte(nil) }},
	{[]string{"EventType"}, id.NodeID, 0, func(*condition) any { return alarmConditionType }},
	{[]string{"SourceNode"}, id.NodeID, 0, func(c *condition) any { return c.source() }},
	{[]string{"SourceName"}, id.String, 0, func(c *condition) any { return c.spec.SourceName }},
	{[]string{"Time"}, id.UtcTime, 0, func(c *condition) any { return c.state.Time }},
	{[]string{"ReceiveTime"}, id.UtcTime, 0, func(c *condition) any { return c.state.Time }},
	{[]string{"Message"}, id.LocalizedText, 0, func(c *condition) any { return ua.NewLocalizedText(c.message()) }},
	{[]string{"Severity"}, id.UInt16, 0, func(c *condition) any { return c.severity() }},

	{[]string{"ConditionClassId"}, id.NodeID, 0, func(*condition) any { return baseConditionClass }},
	{[]string{"ConditionClassName"}, id.LocalizedText, 0, func(*condition) any { return conditionClassName }},
	{[]string{"ConditionName"}, id.String, 0, func(c *condition) any { return c.spec.Name }},
	{[]string{"BranchId"}, id.NodeID, 0, func(*condition) any { return nullNodeID }},
	{[]string{"Retain"}, id.Boolean, 0, func(c *condition) any { return c.state.Retain }},
	{[]string{"EnabledState"}, id.LocalizedText, twoStateVariable, func(c *condition) any {
		return twoState(c.state.Enabled, "Enabled", "Disabled")
	}},
	{[]string{"EnabledState", "Id"}, id.Boolean, 0, func(c *condition) any { return c.state.Enabled }},
	{[]string{"EnabledState", "TransitionTime"}, id.UtcTime, 0, func(c *condition) any { return c.enabledAt }},
	{[]string{"Quality"}, id.StatusCode, conditionVariable, func(c *condition) any { return c.state.Quality }},
	{[]string{"Quality", "SourceTimestamp"}, id.UtcTime, 0, func(c *condition) any { return c.state.Time }},
	{[]string{"LastSeverity"}, id.UInt16, conditionVariable, func(c *condition) any { return c.lastSeverity }},
	{[]string{"LastSeverity", "SourceTimestamp"}, id.UtcTime, 0, func(c *condition) any { return c.lastSeverityAt }},
	{[]string{"Comment"}, id.LocalizedText, conditionVariable, func(c *condition) any { return ua.NewLocalizedText(c.state.Comment) }},
	{[]string{"Comment", "SourceTimestamp"}, id.UtcTime, 0, func(c *condition) any { return c.commentAt }},
	{[]string{"ClientUserId"}, id.String, 0, func(c *condition) any { return c.state.ClientUserID }},
	{[]string{"AckedState"}, id.LocalizedText, twoStateVariable, func(c *condition) any {
		return twoState(c.state.Acked, "Acknowledged", "Unacknowledged")
	}},
	{[]string{"AckedState", "Id"}, id.Boolean, 0, func(c *condition) any { return c.state.Acked }},
	{[]string{"AckedState", "TransitionTime"}, id.UtcTime, 0, func(c *condition) any { return c.ackedAt }},
	{[]string{"ConfirmedState"}, id.LocalizedText, twoStateVariable, func(c *condition) any {
		return twoState(c.state.Confirmed, "Confirmed", "Unconfirmed")
	}},
	{[]string{"ConfirmedState", "Id"}, id.Boolean, 0, func(c *condition) any { return c.state.Confirmed }},
	{[]string{"ConfirmedState", "TransitionTime"}, id.UtcTime, 0, func(c *condition) any { return c.confirmedAt }},
	{[]string{"ActiveState"}, id.LocalizedText, twoStateVariable, func(c *condition) any {
		return twoState(c.state.Active, "Active", "Inactive")
	}},
	{[]string{"ActiveState", "Id"}, id.Boolean, 0, func(c *condition) any { return c.state.Active }},
	{[]string{"ActiveState", "TransitionTime"}, id.UtcTime, 0, func(c *condition) any { return c.activeAt }},
	{[]string{"InputNode"}, id.NodeID, 0, func(c *condition) any { return orNull(c.spec.SourceNode) }},
	{[]string{"SuppressedOrShelved"}, id.Boolean, 0, func(*condition) any { return false }},
}

// standardField reports whether k is one of BaseEventType's fields, which
// Prepare fills from the event itself.
func standardField(k events.FieldKey) bool {
	switch k {
	case events.KeyEventID, events.KeyEventType, events.KeySourceNode, events.KeySourceName,
		events.KeyTime, events.KeyReceiveTime, events.KeyMessage, events.KeySeverity:
		return true
	}
	return false
}

// condition is one defined condition. Every field is guarded by
// Manager.mu.
type condition struct {
	spec  Spec
	vars  []*addrspace.Variable // one per components entry, same order
	nodes []*ua.NodeID          // every node Define created, the object first
	state State
	last  *events.Event // the last raised event; nil before the first Update
	// linked is set once the (Parent, SourceNode) reference is counted in
	// Manager.sources.
	linked bool

	enabledAt, activeAt, ackedAt, confirmedAt time.Time // TransitionTimes
	lastSeverity                              uint16
	lastSeverityAt, commentAt                 time.Time
}

func (c *condition) source() *ua.NodeID {
	if c.spec.SourceNode != nil {
		return c.spec.SourceNode
	}
	return c.spec.NodeID
}

func (c *condition) message() string {
	if c.state.Message != "" {
		return c.state.Message
	}
	return c.spec.Message
}

func (c *condition) severity() uint16 {
	if c.state.Severity != 0 {
		return c.state.Severity
	}
	return c.spec.Severity
}
