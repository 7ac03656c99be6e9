package events

import (
	"fmt"
	"time"

	"github.com/gopcua/opcua/ua"
)

// Keys of the fields of AuditEventType (Part 5 §6.4.3) and
// AuditWriteUpdateEventType (Part 5 §6.4.27).
var (
	KeyActionTimeStamp    = Field("ActionTimeStamp")
	KeyStatus             = Field("Status")
	KeyServerID           = Field("ServerId")
	KeyClientAuditEntryID = Field("ClientAuditEntryId")
	KeyClientUserID       = Field("ClientUserId")
	KeyAttributeID        = Field("AttributeId")
	KeyIndexRange         = Field("IndexRange")
	KeyOldValue           = Field("OldValue")
	KeyNewValue           = Field("NewValue")
)

// AuditWriteUpdate describes one write of an attribute for an
// AuditWriteUpdateEventType event: what the write path raises on the
// Server object when it services, reverts or refuses a client write.
type AuditWriteUpdate struct {
	// Node is the node written: the event's SourceNode.
	Node *ua.NodeID
	// ActionTimeStamp is when the write was requested; zero leaves the
	// field null.
	ActionTimeStamp time.Time
	// Status is true when the write succeeded.
	Status bool
	// ServerID is the server's ApplicationUri.
	ServerID string
	// ClientAuditEntryID is the request header's AuditEntryId.
	ClientAuditEntryID string
	// ClientUserID names the user of the writing session ("" for an
	// anonymous one).
	ClientUserID string
	// AttributeID is the attribute written (usually ua.AttributeIDValue).
	AttributeID ua.AttributeID
	// IndexRange is the write's IndexRange, "" for the whole value.
	IndexRange string
	// OldValue and NewValue are the values before and after (any type
	// ua.NewVariant accepts, or a *ua.Variant; nil is a null Variant).
	OldValue, NewValue any
	// Message explains the outcome ("not primary", a device error, ...).
	Message string
	// Severity of the event; 0 means 100 for a successful write and 500
	// for a failed one.
	Severity uint16
}

// Event returns the AuditWriteUpdateEventType event for a. SourceName is
// "Attribute/Write" (Part 5 §6.4.27).
func (a AuditWriteUpdate) Event() (Event, error) {
	sev := a.Severity
	if sev == 0 {
		sev = 500
		if a.Status {
			sev = 100
		}
	}
	ev := Event{
		EventType:  AuditWriteUpdateEventType,
		SourceNode: a.Node,
		SourceName: "Attribute/Write",
		Message:    ua.NewLocalizedText(a.Message),
		Severity:   sev,
	}
	fields := []struct {
		k FieldKey
		v any
	}{
		{KeyStatus, a.Status},
		{KeyServerID, a.ServerID},
		{KeyClientAuditEntryID, a.ClientAuditEntryID},
		{KeyClientUserID, a.ClientUserID},
		{KeyAttributeID, uint32(a.AttributeID)},
		{KeyIndexRange, a.IndexRange},
		{KeyOldValue, a.OldValue},
		{KeyNewValue, a.NewValue},
	}
	for _, f := range fields {
		if err := ev.Set(f.k, f.v); err != nil {
			return Event{}, fmt.Errorf("events: AuditWriteUpdate %s: %w", f.k, err)
		}
	}
	if !a.ActionTimeStamp.IsZero() {
		if err := ev.Set(KeyActionTimeStamp, a.ActionTimeStamp); err != nil {
			return Event{}, err
		}
	}
	return ev, nil
}
