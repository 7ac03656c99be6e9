package uaserver

import (
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/subscription"
)

// engineCall runs a synchronous engine method for the session of c.
func engineCall[Req ua.Request, Resp ua.Response](s *Server, c *call,
	f func(subscriptionService, subscription.SessionID, Req) (Resp, error)) (ua.Response, error) {
	return itemsCall(s, c, nil, f)
}

// itemsCall is engineCall for a service whose operation list is bounded
// by MaxMonitoredItemsPerCall: count returns the list's length (nil: no
// bound). An empty list is left to the engine (BadNothingToDo).
func itemsCall[Req ua.Request, Resp ua.Response](s *Server, c *call, count func(Req) int,
	f func(subscriptionService, subscription.SessionID, Req) (Resp, error)) (ua.Response, error) {
	if s.subs == nil {
		return nil, ua.StatusBadServiceUnsupported
	}
	req, err := reqAs[Req](c)
	if err != nil {
		return nil, err
	}
	if count != nil {
		if n := count(req); n > 0 {
			if err := s.checkCount(n, s.cfg.MaxMonitoredItemsPerCall); err != nil {
				return nil, err
			}
		}
	}
	resp, err := f(s.subs, c.sess.sid, req)
	if err == nil && s.cfg.Mirror != nil {
		s.cfg.Mirror.Service(c.sess.id, req, resp)
	}
	return result(resp, err)
}

// createSubscription records the session's user as the subscription's
// owner: only a session of the same user may transfer it.
func (s *Server) createSubscription(c *call) (ua.Response, error) {
	resp, err := engineCall(s, c, subscriptionService.CreateSubscription)
	if r, ok := resp.(*ua.CreateSubscriptionResponse); ok && err == nil {
		s.subs.SetOwner(r.SubscriptionID, c.sess.info().UserID)
	}
	return resp, err
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

// transferSubscriptions moves subscriptions of the same user only (Part 4
// §5.13.7); another user's answer BadUserAccessDenied. A subscription
// mirrored here from another member of the set is served here from then
// on.
func (s *Server) transferSubscriptions(c *call) (ua.Response, error) {
	user := c.sess.info().UserID
	return engineCall(s, c, func(e subscriptionService, sid subscription.SessionID, r *ua.TransferSubscriptionsRequest) (*ua.TransferSubscriptionsResponse, error) {
		return e.TransferSubscriptionsAs(sid, user, r)
	})
}

func (s *Server) republish(c *call) (ua.Response, error) {
	return engineCall(s, c, subscriptionService.Republish)
}

// createMonitoredItems passes the channel's context: a request whose
// channel closes while its items are being created is abandoned.
func (s *Server) createMonitoredItems(c *call) (ua.Response, error) {
	return itemsCall(s, c, func(r *ua.CreateMonitoredItemsRequest) int { return len(r.ItemsToCreate) },
		func(e subscriptionService, sid subscription.SessionID, r *ua.CreateMonitoredItemsRequest) (*ua.CreateMonitoredItemsResponse, error) {
			return e.CreateMonitoredItemsContext(c.ch.ctx, sid, r)
		})
}

func (s *Server) modifyMonitoredItems(c *call) (ua.Response, error) {
	return itemsCall(s, c, func(r *ua.ModifyMonitoredItemsRequest) int { return len(r.ItemsToModify) },
		subscriptionService.ModifyMonitoredItems)
}

func (s *Server) setMonitoringMode(c *call) (ua.Response, error) {
	return itemsCall(s, c, func(r *ua.SetMonitoringModeRequest) int { return len(r.MonitoredItemIDs) },
		subscriptionService.SetMonitoringMode)
}

func (s *Server) setTriggering(c *call) (ua.Response, error) {
	return itemsCall(s, c, func(r *ua.SetTriggeringRequest) int { return max(len(r.LinksToAdd), len(r.LinksToRemove)) },
		subscriptionService.SetTriggering)
}

func (s *Server) deleteMonitoredItems(c *call) (ua.Response, error) {
	return itemsCall(s, c, func(r *ua.DeleteMonitoredItemsRequest) int { return len(r.MonitoredItemIDs) },
		subscriptionService.DeleteMonitoredItems)
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
	var out subscription.Sender = c.ch.pub
	if m := s.cfg.Mirror; m != nil {
		if len(req.SubscriptionAcknowledgements) > 0 {
			m.Acked(c.sess.id, req.SubscriptionAcknowledgements)
		}
		out = mirrorSender{out: out, m: m, id: c.sess.id}
	}
	s.subs.Publish(c.sess.sid, out, c.reqID, req)
	return nil, nil
}
