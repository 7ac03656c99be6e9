package uaserver

import (
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/subscription"
)

// engineCall runs a synchronous engine method for the session of c.
func engineCall[Req ua.Request, Resp ua.Response](s *Server, c *call,
	f func(subscriptionService, subscription.SessionID, Req) (Resp, error)) (ua.Response, error) {
	if s.subs == nil {
		return nil, ua.StatusBadServiceUnsupported
	}
	req, err := reqAs[Req](c)
	if err != nil {
		return nil, err
	}
	return result(f(s.subs, c.sess.sid, req))
}

func (s *Server) createSubscription(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.CreateSubscription)
}

func (s *Server) modifySubscription(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.ModifySubscription)
}

func (s *Server) setPublishingMode(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.SetPublishingMode)
}

func (s *Server) deleteSubscriptions(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.DeleteSubscriptions)
}

func (s *Server) transferSubscriptions(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.TransferSubscriptions)
}

func (s *Server) republish(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.Republish)
}

func (s *Server) createMonitoredItems(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.CreateMonitoredItems)
}

func (s *Server) modifyMonitoredItems(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.ModifyMonitoredItems)
}

func (s *Server) setMonitoringMode(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.SetMonitoringMode)
}

func (s *Server) setTriggering(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.SetTriggering)
}

func (s *Server) deleteMonitoredItems(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.DeleteMonitoredItems)
}

// publish hands the request to the engine, which answers it later through
// the channel's publishSender; the worker goes on with the next request.
func (s *Server) publish(c *call) (ua.Response, error) {
	if s.subs == nil {
		return nil, ua.StatusBadServiceUnsupported
	}
	req, err := reqAs[*ua.PublishRequest](c)
	if err != nil {
		return nil, err
	}
	c.ch.pub.expect(c.reqID, c.hdr.RequestHandle)
	c.async = true
	s.subs.Publish(c.sess.sid, c.ch.pub, c.reqID, req)
	return nil, nil
}
