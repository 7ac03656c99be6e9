package main

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaclient"
)

// Orphaned subscriptions: publishing interval × lifetime count is how long
// each lives after its client vanished (the server revises the lifetime
// to at least 3 × the keep-alive count).
const (
	orphanPublishing = 500 * time.Millisecond
	orphanKeepAlive  = 2
	orphanLifetime   = 6 // 3 s
)

// itemsRequest asks for the items [from, to) of a subscription of
// a.Items items; item k watches a.Vars[(offset+k) mod len].
func (a *Abuse) itemsRequest(subID uint32, offset, from, to int) *ua.CreateMonitoredItemsRequest {
	items := make([]*ua.MonitoredItemCreateRequest, 0, to-from)
	for k := from; k < to; k++ {
		items = append(items, &ua.MonitoredItemCreateRequest{
			ItemToMonitor: &ua.ReadValueID{NodeID: ua.NewNumericNodeID(0, a.Vars[(offset+k)%len(a.Vars)]),
				AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: uint32(k), SamplingInterval: 1000,
				Filter: ua.NewExtensionObject(nil), QueueSize: 1, DiscardOldest: true},
		})
	}
	return &ua.CreateMonitoredItemsRequest{SubscriptionID: subID, TimestampsToReturn: ua.TimestampsToReturnBoth, ItemsToCreate: items}
}

// noteItems counts the per-item results that are not Good.
func (a *Abuse) noteItems(name string, resp ua.Response) {
	r, ok := resp.(*ua.CreateMonitoredItemsResponse)
	if !ok {
		return
	}
	for _, it := range r.Results {
		if it.StatusCode != ua.StatusOK {
			a.Tally.Saw(name, "item "+statusName(it.StatusCode))
		}
	}
}

// subChurn creates a subscription of Items items on one long-lived
// session, then deletes it, once per cycle; each cycle starts its items
// at another offset of Vars.
type subChurn struct {
	abuse *Abuse
	name  string
	ch    *uaclient.Channel
	sess  *uaclient.Session
	round int
}

func (s *subChurn) cycle(ctx context.Context, _ *rand.Rand) {
	a := s.abuse
	if s.sess == nil {
		if err := s.connect(ctx); err != nil {
			a.note(ctx, s.name, "session: ", err)
			return
		}
	}
	resp, err := s.sess.Call(ctx, &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 1000, RequestedLifetimeCount: 60,
		RequestedMaxKeepAliveCount: 10, PublishingEnabled: true}, opTimeout)
	a.note(ctx, s.name, "CreateSubscription ", err)
	if err != nil {
		s.drop(err)
		return
	}
	subID := resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	s.round++
	offset := s.round * 7919 // a prime: successive cycles start far apart
	for from := 0; from < a.Items; from += a.Batch {
		resp, err := s.sess.Call(ctx, a.itemsRequest(subID, offset, from, min(from+a.Batch, a.Items)), bigCallTimeout)
		a.note(ctx, s.name, "CreateMonitoredItems ", err)
		if err != nil {
			break
		}
		a.noteItems(s.name, resp)
	}
	// Deleted even when the abuse has ended: the churn leaves nothing.
	del, cancel := context.WithTimeout(context.Background(), bigCallTimeout)
	defer cancel()
	_, err = s.sess.Call(del, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{subID}}, bigCallTimeout)
	a.Tally.Saw(s.name, "DeleteSubscriptions "+outcome(err))
	s.drop(err)
}

func (s *subChurn) connect(ctx context.Context) error {
	ch, err := uaclient.Dial(ctx, s.abuse.Endpoint, uaclient.Options{DialTimeout: opTimeout, LocalIP: s.abuse.LocalIP})
	if err != nil {
		return err
	}
	sess, err := uaclient.OpenSession(ctx, ch, uaclient.SessionParams{Name: "soak churn", Application: hostileApp,
		Timeout: time.Minute, CallTimeout: opTimeout})
	if err != nil {
		ch.Close()
		return err
	}
	s.ch, s.sess = ch, sess
	return nil
}

// drop forgets the session after an error that may have broken it.
func (s *subChurn) drop(err error) {
	if err == nil {
		return
	}
	s.close()
}

func (s *subChurn) close() {
	if s.ch == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_ = s.sess.Close(ctx, opTimeout)
	s.ch.Close()
	s.ch, s.sess = nil, nil
}

// subOrphan creates, once per cycle, a subscription of Items items on a
// fresh connection and then resets that connection: the subscription gets
// no Publish request and must expire by its lifetime (about 3 s). The
// session outlives its channels (it is re-activated on the next cycle's),
// so the orphans keep coming when session churn has exhausted the
// server's sessions.
type subOrphan struct {
	abuse *Abuse
	name  string
	auth  *ua.NodeID
	round int
}

func (s *subOrphan) cycle(ctx context.Context, r *rand.Rand) {
	a := s.abuse
	rc, err := a.rawChannel(ctx)
	if err != nil {
		a.note(ctx, s.name, "channel: ", err)
		return
	}
	defer rc.drop()
	if s.auth != nil {
		if err := rawActivate(rc, s.auth); err != nil {
			a.note(ctx, s.name, "re-activate: ", err)
			s.auth = nil
		}
	}
	if s.auth == nil {
		if s.auth, err = rawSession(rc, a.Endpoint, r, time.Minute); err != nil {
			a.note(ctx, s.name, "session: ", err)
			s.auth = nil
			return
		}
	}
	resp, err := rc.call(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: ms(orphanPublishing),
		RequestedLifetimeCount: orphanLifetime, RequestedMaxKeepAliveCount: orphanKeepAlive, PublishingEnabled: true}, s.auth, opTimeout)
	a.note(ctx, s.name, "CreateSubscription ", err)
	if err != nil {
		return
	}
	subID := resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	s.round++
	offset := s.round*7919 + len(a.Vars)/2
	for from := 0; from < a.Items; from += a.Batch {
		resp, err := rc.call(a.itemsRequest(subID, offset, from, min(from+a.Batch, a.Items)), s.auth, bigCallTimeout)
		a.note(ctx, s.name, "CreateMonitoredItems ", err)
		if err != nil {
			return
		}
		a.noteItems(s.name, resp)
	}
}
