package dataplane

import (
	"log/slog"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/events"
)

// ServerAuditor raises every audited write as an AuditWriteUpdateEventType
// event on the Server object (i=2253), where a client subscribed to the
// Server's events with an OfType filter sees it.
type ServerAuditor struct {
	AS       *addrspace.AddressSpace
	ServerID string // the server's ApplicationUri
	Logger   *slog.Logger
}

var _ Auditor = (*ServerAuditor)(nil)

// AuditWrite raises one event; a failure is logged, never returned.
func (a *ServerAuditor) AuditWrite(r AuditRecord) {
	ev, err := events.AuditWriteUpdate{
		Node: r.Node, ActionTimeStamp: r.At, Status: r.OK, ServerID: a.ServerID,
		AttributeID: ua.AttributeIDValue, OldValue: r.Old, NewValue: r.New, Message: r.Message,
	}.Event()
	if err == nil {
		err = a.AS.RaiseEvent(ua.NewNumericNodeID(0, id.Server), ev)
	}
	if err != nil && a.Logger != nil {
		a.Logger.Warn("dataplane: audit event not raised", "node", r.Node.String(), "err", err)
	}
}
