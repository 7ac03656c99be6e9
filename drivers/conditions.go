package drivers

import (
	"context"
	"time"

	"github.com/gopcua/opcua/ua"
)

// UpstreamCondition is one alarm or condition of a device as the device
// reports it (an OPC UA Part 9 condition event of an opcua device).
type UpstreamCondition struct {
	// ID identifies the condition at the device and stays across the
	// device's restarts: the upstream ConditionId as text ("ns=2;s=Tank1.High").
	ID string
	// Name is the condition's name there (ConditionName), else ID.
	Name string
	// Tag is the device's tag whose upstream node is the condition's
	// SourceNode; "" when no tag mirrors it. SourceName is the upstream's.
	Tag, SourceName string
	// The condition's Part 9 state.
	Active, Acked, Confirmed, Enabled, Retain bool
	// Severity is 1..1000.
	Severity int
	Message  string
	// Comment and User are those of the last Acknowledge, Confirm or
	// AddComment upstream (Comment, ClientUserId).
	Comment, User string
	// Time is the upstream event's Time.
	Time time.Time
	// EventID is the upstream EventId of its last event: what an
	// acknowledgement sends back.
	EventID []byte
}

// ConditionUpdate is what a device reports of its conditions.
type ConditionUpdate struct {
	Device string
	// Refresh: Conditions are every condition the device retains, as a
	// ConditionRefresh after a (re)connect listed them; a condition known
	// before and missing from them has nothing to attend to any more
	// (inactive, acknowledged, confirmed). Otherwise Conditions is one
	// event's change, in the device's order.
	Refresh    bool
	Conditions []UpstreamCondition
}

// ConditionSink receives a device's condition updates (drivers.Options).
// It is called one call at a time per device, from the driver's
// goroutines; it must not block. The update is the sink's to keep.
type ConditionSink func(ConditionUpdate)

// ConditionMethods is a Driver that mirrors its device's conditions and
// sends the methods of its client back to the device.
type ConditionMethods interface {
	// AckCondition calls Acknowledge (Confirm when confirm) on condition
	// id of the device with the condition's last EventId and comment, once,
	// and returns the device's status: BadNodeIdUnknown for a condition it
	// does not know, BadCommunicationError when the device cannot be asked,
	// BadTimeout when it did not answer within the device's timeout.
	AckCondition(ctx context.Context, id string, confirm bool, comment string) ua.StatusCode
}
