package opcua

import (
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Server.ServerDiagnostics (i=2274): the summary (i=2275, a
// ServerDiagnosticsSummaryDataType) and its twelve UInt32 children, taken
// from the service layer's and the engine's Stats, and EnabledFlag (i=2294)
// true and read-only.
//
// Two paths read them:
//
//   - Clients (Read, through the service layer): a Getter computes the value
//     at the read, from the one or two Stats the variable needs.
//   - The subscription engine (monitored items, through diagSource): the
//     value the status tick last stored. The engine may call Source.Read
//     with its own locks held (SetMonitoringMode), and Engine.Stats takes
//     them, so the engine must never reach a Getter that calls it.
//
// publishDiagnostics, on the 1 s status tick, takes each Stats once and
// stores the variables whose value changed, which notifies subscribers.

// statsNeed says which Stats a diagnostics variable is computed from.
type statsNeed uint8

const (
	needUA     statsNeed = 1 << iota // uaserver.Server.Stats
	needEngine                       // subscription.Engine.Stats
)

// diagField is one child of ServerDiagnosticsSummary.
type diagField struct {
	id    uint32
	needs statsNeed // 0: a constant
	value func(*ua.ServerDiagnosticsSummaryDataType) uint32
}

// diagFields are the children of ServerDiagnosticsSummary.
var diagFields = []diagField{
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_ServerViewCount, 0,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.ServerViewCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount, needUA,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.CurrentSessionCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSessionCount, needUA,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.CumulatedSessionCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedSessionCount, 0,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.SecurityRejectedSessionCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedSessionCount, needUA,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.RejectedSessionCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionTimeoutCount, needUA,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.SessionTimeoutCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SessionAbortCount, 0,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.SessionAbortCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_PublishingIntervalCount, needEngine,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.PublishingIntervalCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSubscriptionCount, needEngine,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.CurrentSubscriptionCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_CumulatedSubscriptionCount, needEngine,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.CumulatedSubscriptionCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_SecurityRejectedRequestsCount, 0,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.SecurityRejectedRequestsCount }},
	{id.Server_ServerDiagnostics_ServerDiagnosticsSummary_RejectedRequestsCount, needUA,
		func(d *ua.ServerDiagnosticsSummaryDataType) uint32 { return d.RejectedRequestsCount }},
}

// summarize maps the two Stats onto the summary (Part 5 §12.9). Counters
// wrap at 2^32 like every OPC UA Counter. Security None is the only policy,
// so nothing is rejected for security; ServerViewCount is 0 (no views) and
// SessionAbortCount 0: a session whose channel breaks is kept for its
// client and, if it does not come back, counted in SessionTimeoutCount.
func summarize(u uaserver.Stats, e subscription.Stats) *ua.ServerDiagnosticsSummaryDataType {
	return &ua.ServerDiagnosticsSummaryDataType{
		CurrentSessionCount:        uint32(u.SessionsActivated + u.SessionsUnactivated),
		CumulatedSessionCount:      uint32(u.CumulatedSessions),
		RejectedSessionCount:       uint32(u.RejectedSessions),
		SessionTimeoutCount:        uint32(u.SessionTimeouts),
		CurrentSubscriptionCount:   uint32(e.Subscriptions),
		CumulatedSubscriptionCount: uint32(e.CumulatedSubscriptions),
		PublishingIntervalCount:    uint32(e.PublishingIntervals),
		RejectedRequestsCount:      uint32(u.RejectedRequests),
	}
}

// diagnostics holds the ServerDiagnostics variables and what the status tick
// last stored in them.
type diagnostics struct {
	summary *addrspace.Variable
	fields  []*addrspace.Variable // parallel to diagFields
	// last is written by New and then only by the tick goroutine; the
	// engine reads it through diagSource. Never nil once New returns.
	last atomic.Pointer[diagSnapshot]
}

// diagSnapshot is one publication: the summary and the DataValue stored in
// each variable, by numeric NodeId of namespace 0. Immutable.
type diagSnapshot struct {
	summary ua.ServerDiagnosticsSummaryDataType
	values  map[uint32]*ua.DataValue
}

// initDiagnostics installs the Getters, sets EnabledFlag and publishes the
// first snapshot. It needs s.ua and s.engine and runs before the server is
// shared.
func (s *Server) initDiagnostics() error {
	d := &s.diag
	v, err := s.space.Variable(nsid(id.Server_ServerDiagnostics_ServerDiagnosticsSummary))
	if err != nil {
		return err
	}
	d.summary = v
	v.SetGetter(func() *ua.DataValue {
		return s.diagValue(ua.NewExtensionObject(s.liveSummary(needUA|needEngine)), s.clock.Now())
	})
	d.fields = make([]*addrspace.Variable, len(diagFields))
	for k, f := range diagFields {
		v, err := s.space.Variable(nsid(f.id))
		if err != nil {
			return err
		}
		d.fields[k] = v
		v.SetGetter(func() *ua.DataValue { return s.diagValue(f.value(s.liveSummary(f.needs)), s.clock.Now()) })
	}
	enabled := nsid(id.Server_ServerDiagnostics_EnabledFlag)
	if err := s.space.SetValue(enabled, true, ua.StatusOK, time.Time{}); err != nil {
		return err
	}
	// Diagnostics cost one Stats per tick; they cannot be switched off.
	ro := byte(ua.AccessLevelTypeCurrentRead)
	if err := s.space.SetAccessLevel(enabled, ro, ro); err != nil {
		return err
	}
	s.publishDiagnostics(s.clock.Now())
	return nil
}

// liveSummary is the summary computed now from the Stats needs names (the
// fields of the other one read 0).
func (s *Server) liveSummary(needs statsNeed) *ua.ServerDiagnosticsSummaryDataType {
	var u uaserver.Stats
	var e subscription.Stats
	if needs&needUA != 0 {
		u = s.ua.Stats()
	}
	if needs&needEngine != 0 {
		e = s.engine.Stats()
	}
	return summarize(u, e)
}

// diagValue is a Good DataValue of v as of now.
func (s *Server) diagValue(v any, now time.Time) *ua.DataValue {
	return &ua.DataValue{
		EncodingMask:    ua.DataValueValue | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
		Value:           ua.MustVariant(v),
		SourceTimestamp: now,
		ServerTimestamp: now,
	}
}

// publishDiagnostics takes each Stats once and stores, as of now, the
// variables whose value changed since the last publication, notifying their
// subscribers. The snapshot is swapped in before the stores, so that an
// item created meanwhile reads a value no older than the change it is
// notified of. Called by New, then only by the tick goroutine.
func (s *Server) publishDiagnostics(now time.Time) {
	d := &s.diag
	sum := summarize(s.ua.Stats(), s.engine.Stats())
	prev := d.last.Load()
	if prev != nil && prev.summary == *sum {
		return
	}
	next := &diagSnapshot{summary: *sum, values: make(map[uint32]*ua.DataValue, 1+len(diagFields))}
	var changed []*addrspace.Variable
	for k, f := range diagFields {
		v := f.value(sum)
		if prev != nil && f.value(&prev.summary) == v {
			next.values[f.id] = prev.values[f.id]
			continue
		}
		next.values[f.id] = s.diagValue(v, now)
		changed = append(changed, d.fields[k])
	}
	summaryID := uint32(id.Server_ServerDiagnostics_ServerDiagnosticsSummary)
	next.values[summaryID] = s.diagValue(ua.NewExtensionObject(sum), now)
	d.last.Store(next)
	d.summary.SetDataValue(next.values[summaryID])
	for _, v := range changed {
		v.SetDataValue(next.values[v.NodeID().IntID()])
	}
}

// published returns the DataValue last stored in diagnostics variable nid,
// or false when nid is not one.
func (d *diagnostics) published(nid *ua.NodeID) (*ua.DataValue, bool) {
	if nid == nil || nid.Namespace() != 0 {
		return nil, false
	}
	switch nid.Type() {
	case ua.NodeIDTypeTwoByte, ua.NodeIDTypeFourByte, ua.NodeIDTypeNumeric:
	default:
		return nil, false
	}
	snap := d.last.Load()
	if snap == nil {
		return nil, false
	}
	dv, ok := snap.values[nid.IntID()]
	return dv, ok
}

// diagSource is the address space as the subscription engine sees it, with
// the Values of the diagnostics variables taken from the last publication
// instead of their Getters (see the top of this file).
type diagSource struct {
	src  subscription.Source
	diag *diagnostics
}

var _ subscription.Source = diagSource{}

func (d diagSource) Read(nid *ua.NodeID, attr ua.AttributeID) *ua.DataValue {
	if attr == ua.AttributeIDValue {
		if dv, ok := d.diag.published(nid); ok {
			return dv
		}
	}
	return d.src.Read(nid, attr)
}

func (d diagSource) Watch(nid *ua.NodeID, fn func(*ua.DataValue)) (cancel func(), status ua.StatusCode) {
	return d.src.Watch(nid, fn)
}
