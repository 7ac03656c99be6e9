package opcua

import (
	"fmt"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// This file holds the hooks other packages use to add behaviour to the
// server without the server importing them (opcua/conditions imports
// opcua): executable methods, per-subscription event delivery and the
// event history behind HistoryRead.

// EventHistory is the store of past events HistoryRead reads; see
// uaserver.EventHistory for its contract.
type EventHistory = uaserver.EventHistory

// RegisterMethod makes method methodID (a Method node of the address
// space) callable through Call and marks it Executable and
// UserExecutable. See uaserver.Server.RegisterMethod for the checks Call
// runs before m.Func and uaserver.MethodFunc for its rules (it runs on the
// caller's channel goroutine and must be quick).
func (s *Server) RegisterMethod(methodID *ua.NodeID, m uaserver.Method) error {
	if err := s.space.SetExecutable(methodID, true, true); err != nil {
		return fmt.Errorf("opcua: RegisterMethod: %w", err)
	}
	if err := s.ua.RegisterMethod(methodID, m); err != nil {
		return err
	}
	return nil
}

// UnregisterMethod removes the handler of methodID and marks the method
// not executable.
func (s *Server) UnregisterMethod(methodID *ua.NodeID) {
	s.ua.UnregisterMethod(methodID)
	_ = s.space.SetExecutable(methodID, false, false)
}

// InjectEvents delivers events to the event items of subscription subID of
// session sess only (item itemID alone when it is not 0): what
// ConditionRefresh needs. See subscription.Engine.InjectEvents.
func (s *Server) InjectEvents(sess subscription.SessionID, subID, itemID uint32, events func(notifier *ua.NodeID) []subscription.Injection) ua.StatusCode {
	return s.engine.InjectEvents(sess, subID, itemID, events)
}

// SetEventHistory makes HistoryRead with ReadEventDetails read h for the
// notifiers whose EventNotifier has the HistoryRead bit, and sets that bit
// on the Server object (i=2253) and
// HistoryServerCapabilities.AccessHistoryEventsCapability; nil removes the
// provider and clears both. Filters and stored events are checked and
// completed against the address space's event types.
func (s *Server) SetEventHistory(h EventHistory) error {
	bits := addrspace.SubscribeToEvents
	if h != nil {
		bits |= addrspace.HistoryRead
		s.ua.SetEventHistory(h, s.space)
	} else {
		s.ua.SetEventHistory(nil, nil)
	}
	if err := s.space.SetEventNotifier(nsid(id.Server), bits); err != nil {
		return fmt.Errorf("opcua: SetEventHistory: %w", err)
	}
	return s.setAll(map[uint32]any{id.HistoryServerCapabilities_AccessHistoryEventsCapability: h != nil})
}

// ValueHistory is the archive of past tag values HistoryRead reads; see
// uaserver.ValueHistory for its contract.
type ValueHistory = uaserver.ValueHistory

// HistorizedNode and HistoryValue are ValueHistory's types.
type (
	HistorizedNode = uaserver.HistorizedNode
	HistoryValue   = uaserver.HistoryValue
)

// SetValueHistory makes HistoryRead of values (raw, at time, processed)
// read h, and publishes what the server offers:
// HistoryServerCapabilities.AccessHistoryDataCapability,
// MaxReturnDataValues, and each supported aggregate (aggregates, the
// standard AggregateFunction objects) organised under
// HistoryServerCapabilities.AggregateFunctions and
// ServerCapabilities.AggregateFunctions. nil removes the provider and
// clears AccessHistoryDataCapability. Which Variables are historized is
// their Historizing attribute and the HistoryRead bit of their
// AccessLevel (set by whoever builds them).
func (s *Server) SetValueHistory(h ValueHistory, aggregates []*ua.NodeID) error {
	s.ua.SetValueHistory(h)
	if h != nil {
		for _, folder := range []uint32{id.HistoryServerCapabilities_AggregateFunctions, id.Server_ServerCapabilities_AggregateFunctions} {
			for _, a := range aggregates {
				if err := s.space.AddReference(nsid(folder), nsid(id.Organizes), a); err != nil {
					return fmt.Errorf("opcua: SetValueHistory: aggregate %s: %w", a, err)
				}
			}
		}
	}
	return s.setAll(map[uint32]any{id.HistoryServerCapabilities_AccessHistoryDataCapability: h != nil})
}
