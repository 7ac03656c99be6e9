package uaserver

import (
	"fmt"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// serviceFunc handles one request. It returns the response, or an error
// (a ua.StatusCode becomes a ServiceFault with that status). A handler that
// answers later sets c.async and returns nil, nil.
type serviceFunc func(c *call) (ua.Response, error)

// call is one decoded request on its way through dispatch.
type call struct {
	ch     *channel
	reqID  uint32 // secure channel request id, echoed by the response
	req    ua.Request
	hdr    *ua.RequestHeader // never nil
	typeID uint16
	sess   *session // set by admit for services that run in a session
	async  bool     // set by a handler that answers later (Publish)
	size   int      // encoded bytes, held in the channel's budget until served
}

// defaultHandlers returns the built-in service table. A type not listed
// answers BadServiceUnsupported.
func (s *Server) defaultHandlers() map[uint16]serviceFunc {
	unsupported := func(*call) (ua.Response, error) { return nil, ua.StatusBadServiceUnsupported }
	return map[uint16]serviceFunc{
		// Discovery.
		id.GetEndpointsRequest_Encoding_DefaultBinary:         s.getEndpoints,
		id.FindServersRequest_Encoding_DefaultBinary:          s.findServers,
		id.FindServersOnNetworkRequest_Encoding_DefaultBinary: unsupported,
		id.RegisterServerRequest_Encoding_DefaultBinary:       unsupported,
		id.RegisterServer2Request_Encoding_DefaultBinary:      unsupported,

		// Session.
		id.CreateSessionRequest_Encoding_DefaultBinary:   s.createSession,
		id.ActivateSessionRequest_Encoding_DefaultBinary: s.activateSession,
		id.CloseSessionRequest_Encoding_DefaultBinary:    s.closeSession,
		id.CancelRequest_Encoding_DefaultBinary:          s.cancelRequests,

		// Attribute, view, method.
		id.ReadRequest_Encoding_DefaultBinary:                          s.read,
		id.WriteRequest_Encoding_DefaultBinary:                         s.write,
		id.BrowseRequest_Encoding_DefaultBinary:                        s.browse,
		id.BrowseNextRequest_Encoding_DefaultBinary:                    s.browseNext,
		id.TranslateBrowsePathsToNodeIDsRequest_Encoding_DefaultBinary: s.translate,
		id.RegisterNodesRequest_Encoding_DefaultBinary:                 s.registerNodes,
		id.UnregisterNodesRequest_Encoding_DefaultBinary:               s.unregisterNodes,
		id.CallRequest_Encoding_DefaultBinary:                          s.callMethods,

		// History: events only.
		id.HistoryReadRequest_Encoding_DefaultBinary: s.historyRead,

		// Not offered.
		id.HistoryUpdateRequest_Encoding_DefaultBinary:    unsupported,
		id.QueryFirstRequest_Encoding_DefaultBinary:       unsupported,
		id.QueryNextRequest_Encoding_DefaultBinary:        unsupported,
		id.AddNodesRequest_Encoding_DefaultBinary:         unsupported,
		id.AddReferencesRequest_Encoding_DefaultBinary:    unsupported,
		id.DeleteNodesRequest_Encoding_DefaultBinary:      unsupported,
		id.DeleteReferencesRequest_Encoding_DefaultBinary: unsupported,

		// Subscription and monitored item: the engine.
		id.CreateSubscriptionRequest_Encoding_DefaultBinary:    s.createSubscription,
		id.ModifySubscriptionRequest_Encoding_DefaultBinary:    s.modifySubscription,
		id.SetPublishingModeRequest_Encoding_DefaultBinary:     s.setPublishingMode,
		id.DeleteSubscriptionsRequest_Encoding_DefaultBinary:   s.deleteSubscriptions,
		id.TransferSubscriptionsRequest_Encoding_DefaultBinary: s.transferSubscriptions,
		id.RepublishRequest_Encoding_DefaultBinary:             s.republish,
		id.PublishRequest_Encoding_DefaultBinary:               s.publish,
		id.CreateMonitoredItemsRequest_Encoding_DefaultBinary:  s.createMonitoredItems,
		id.ModifyMonitoredItemsRequest_Encoding_DefaultBinary:  s.modifyMonitoredItems,
		id.SetMonitoringModeRequest_Encoding_DefaultBinary:     s.setMonitoringMode,
		id.SetTriggeringRequest_Encoding_DefaultBinary:         s.setTriggering,
		id.DeleteMonitoredItemsRequest_Encoding_DefaultBinary:  s.deleteMonitoredItems,
	}
}

// sessionless lists the services a client may call without a session.
// ActivateSession finds its session itself.
var sessionless = map[uint16]bool{
	id.GetEndpointsRequest_Encoding_DefaultBinary:         true,
	id.FindServersRequest_Encoding_DefaultBinary:          true,
	id.FindServersOnNetworkRequest_Encoding_DefaultBinary: true,
	id.RegisterServerRequest_Encoding_DefaultBinary:       true,
	id.RegisterServer2Request_Encoding_DefaultBinary:      true,
	id.CreateSessionRequest_Encoding_DefaultBinary:        true,
	id.ActivateSessionRequest_Encoding_DefaultBinary:      true,
}

// dispatch handles c and writes its response unless the handler answers
// later. Called on the channel's worker goroutine.
func (s *Server) dispatch(c *call) {
	resp := s.serve(c)
	if resp == nil {
		return // answered later (Publish)
	}
	if _, ok := resp.(*ua.ServiceFault); ok {
		s.counters.rejectedRequests.Add(1)
	}
	stampHeader(resp, c.hdr.RequestHandle, s.cfg.Clock.Now())
	_ = c.ch.send(c.reqID, resp)
}

// serve runs the handler of c under recover and turns every failure into a
// ServiceFault. It returns nil only when the handler answers later.
func (s *Server) serve(c *call) (resp ua.Response) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("uaserver: service handler panicked",
				"service", fmt.Sprintf("%T", c.req), "request_handle", c.hdr.RequestHandle,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			resp = s.fault(ua.StatusBadInternalError)
		}
	}()
	h, ok := s.handlers[c.typeID]
	if !ok {
		return s.fault(ua.StatusBadServiceUnsupported)
	}
	if code := s.admit(c); code != ua.StatusOK {
		return s.fault(code)
	}
	r, err := h(c)
	switch {
	case err != nil:
		code, ok := err.(ua.StatusCode)
		if !ok {
			s.log.Error("uaserver: service handler failed", "service", fmt.Sprintf("%T", c.req), "err", err)
			code = ua.StatusBadInternalError
		}
		return s.fault(code)
	case isNil(r) && c.async:
		return nil
	case isNil(r):
		s.log.Error("uaserver: service handler returned no response", "service", fmt.Sprintf("%T", c.req))
		return s.fault(ua.StatusBadInternalError)
	}
	return r
}

// admit checks the session of a request: unknown token →
// BadSessionIdInvalid; not yet activated → BadSessionNotActivated (except
// CloseSession); bound to another channel → BadSecureChannelIdInvalid. An
// admitted request resets the session's timeout.
func (s *Server) admit(c *call) ua.StatusCode {
	if sessionless[c.typeID] {
		return ua.StatusOK
	}
	sess := s.sessions.lookup(c.hdr.AuthenticationToken)
	if sess == nil {
		return ua.StatusBadSessionIDInvalid
	}
	closing := c.typeID == id.CloseSessionRequest_Encoding_DefaultBinary
	if code := sess.admit(c.ch.id, closing); code != ua.StatusOK {
		return code
	}
	c.sess = sess
	return ua.StatusOK
}

func (s *Server) fault(code ua.StatusCode) ua.Response {
	return &ua.ServiceFault{ResponseHeader: newResponseHeader(0, code, s.cfg.Clock.Now())}
}

// newResponseHeader returns a header with every pointer field set (gopcua's
// encoder cannot encode nil pointers).
func newResponseHeader(handle uint32, code ua.StatusCode, now time.Time) *ua.ResponseHeader {
	return &ua.ResponseHeader{
		Timestamp:          now,
		RequestHandle:      handle,
		ServiceResult:      code,
		ServiceDiagnostics: &ua.DiagnosticInfo{},
		StringTable:        []string{},
		AdditionalHeader:   ua.NewExtensionObject(nil),
	}
}

// stampHeader sets the RequestHandle and Timestamp of resp's header and
// fills the header's nil fields.
func stampHeader(resp ua.Response, handle uint32, now time.Time) {
	h := resp.Header()
	if h == nil {
		resp.SetHeader(newResponseHeader(handle, ua.StatusOK, now))
		return
	}
	h.RequestHandle = handle
	h.Timestamp = now
	if h.ServiceDiagnostics == nil {
		h.ServiceDiagnostics = &ua.DiagnosticInfo{}
	}
	if h.StringTable == nil {
		h.StringTable = []string{}
	}
	if h.AdditionalHeader == nil {
		h.AdditionalHeader = ua.NewExtensionObject(nil)
	}
}

// requestHeader returns req's header, or an empty one when the client sent
// none.
func requestHeader(req ua.Request) *ua.RequestHeader {
	if h := req.Header(); h != nil {
		return h
	}
	h := &ua.RequestHeader{}
	req.SetHeader(h)
	return h
}

// isNil reports whether r is nil or a typed nil pointer.
func isNil(r ua.Response) bool {
	if r == nil {
		return true
	}
	v := reflect.ValueOf(r)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// result passes on a typed handler's answer, turning a nil response without
// an error into BadInternalError.
func result[T ua.Response](r T, err error) (ua.Response, error) {
	if err != nil {
		return nil, err
	}
	if isNil(r) {
		return nil, ua.StatusBadInternalError
	}
	return r, nil
}
