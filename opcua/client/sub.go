package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"
)

// userSub is one Subscribe call: the nodes, and where they are monitored
// now. The controller moves it; the Publish loops deliver to it.
type userSub struct {
	c        *Client
	nodes    []*ua.NodeID
	interval time.Duration
	out      chan Notification

	mu    sync.Mutex
	host  *conn  // the conn the server subscription lives on; mu must be held.
	id    uint32 // its id at that server; mu must be held.
	uri   string // that server's ApplicationUri, for TransferSubscriptions; mu must be held.
	ended bool   // out is closed; mu must be held.
}

// Subscription is a set of monitored nodes that follows the active server.
type Subscription struct{ s *userSub }

// Notifications delivers every data change, in order per server. It is
// closed by Client.Close.
func (s *Subscription) Notifications() <-chan Notification { return s.s.out }

// deliver hands one monitored item value to the subscriber. Only the
// subscription's current host delivers.
func (s *userSub) deliver(cn *conn, at time.Time, handle uint32, v *ua.DataValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.host != cn || int(handle) >= len(s.nodes) {
		return
	}
	// Sending under mu keeps end() from closing out meanwhile; a slow
	// reader holds back only this server's Publish loop.
	select {
	case s.out <- Notification{At: at, Node: s.nodes[handle], Value: v, Server: ServerRef{URI: cn.uri, URL: cn.url}}:
	case <-s.c.ctx.Done():
	}
}

func (s *userSub) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		close(s.out)
	}
}

// placeOn makes the subscription live on cn: by TransferSubscriptions
// when cn's server already holds it (a reconnect to the same server),
// otherwise by creating it. It reports whether it was transferred.
func (s *userSub) placeOn(ctx context.Context, cn *conn) (bool, error) {
	s.mu.Lock()
	oldHost, oldID, oldURI := s.host, s.id, s.uri
	s.mu.Unlock()
	if oldHost == cn {
		return false, nil
	}
	if oldID != 0 && oldURI != "" && oldURI == cn.uri && oldHost != nil && oldHost.isLost() {
		ok, err := s.transfer(ctx, cn, oldID)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, s.create(ctx, cn)
}

// transfer moves subscription id to cn's session; false when the server
// refused (the subscription is gone there), so it must be re-created.
func (s *userSub) transfer(ctx context.Context, cn *conn, id uint32) (bool, error) {
	cn.mu.Lock()
	cn.subs[id] = s
	cn.mu.Unlock()
	s.host0(cn, id)
	s.c.markTransferred(true)
	resp, err := cn.call(ctx, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{id}, SendInitialValues: true})
	if err != nil && transportError(err) {
		return false, err
	}
	if err == nil {
		tr := resp.(*ua.TransferSubscriptionsResponse)
		if len(tr.Results) == 1 && tr.Results[0].StatusCode == ua.StatusOK {
			return true, nil
		}
	}
	s.c.markTransferred(false)
	cn.mu.Lock()
	delete(cn.subs, id)
	cn.mu.Unlock()
	return false, nil
}

// host0 records where the subscription lives.
func (s *userSub) host0(cn *conn, id uint32) {
	s.mu.Lock()
	s.host, s.id, s.uri = cn, id, cn.uri
	s.mu.Unlock()
}

// create creates the subscription and its monitored items on cn. Items
// the server refuses are reported once as a notification with the
// refusal's status.
func (s *userSub) create(ctx context.Context, cn *conn) error {
	ms := max(s.interval, time.Millisecond)
	resp, err := cn.call(ctx, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: float64(ms) / float64(time.Millisecond),
		RequestedLifetimeCount:      s.c.keepAliveCount(ms) * 10,
		RequestedMaxKeepAliveCount:  s.c.keepAliveCount(ms),
		PublishingEnabled:           true,
	})
	if err != nil {
		return fmt.Errorf("CreateSubscription: %w", err)
	}
	id := resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	cn.mu.Lock()
	cn.subs[id] = s
	cn.mu.Unlock()
	s.host0(cn, id)
	items := make([]*ua.MonitoredItemCreateRequest, len(s.nodes))
	for i, n := range s.nodes {
		items[i] = &ua.MonitoredItemCreateRequest{
			ItemToMonitor:  &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{
				ClientHandle: uint32(i), SamplingInterval: float64(ms) / float64(time.Millisecond),
				QueueSize: 10, DiscardOldest: true, Filter: ua.NewExtensionObject(nil),
			},
		}
	}
	mresp, err := cn.call(ctx, &ua.CreateMonitoredItemsRequest{
		SubscriptionID: id, TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: items,
	})
	if err != nil {
		return fmt.Errorf("CreateMonitoredItems: %w", err)
	}
	now := time.Now()
	for i, r := range mresp.(*ua.CreateMonitoredItemsResponse).Results {
		if r != nil && r.StatusCode != ua.StatusOK && i < len(s.nodes) {
			s.deliver(cn, now, uint32(i), &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: r.StatusCode})
		}
	}
	return nil
}

// leave deletes the subscription from cn (a planned move: cn still
// serves), without waiting for the answer.
func (s *userSub) leave(cn *conn, id uint32) {
	cn.mu.Lock()
	delete(cn.subs, id)
	cn.mu.Unlock()
	if cn.isLost() {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.c.opts.Timeout)
		defer cancel()
		_, _ = cn.call(ctx, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{id}})
	}()
}
