package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/opcua/uawire"
)

// serviceLevelNode is Server.ServiceLevel.
var serviceLevelNode = ua.NewNumericNodeID(0, id.Server_ServiceLevel)

// watchInterval is the publishing interval of the ServiceLevel watch.
const watchInterval = 100 * time.Millisecond

// publishesInFlight is how many Publish requests each session keeps
// queued at its server, so a response never waits for the next request
// (Options.PublishRequests' default).
const publishesInFlight = 2

// conn is one open session to one server: the secure channel, the
// activated session, the ServiceLevel watch subscription and the Publish
// loop that serves every subscription of the session.
type conn struct {
	c   *Client
	srv *server
	url string
	ch  *uaclient.Channel
	ses *uaclient.Session
	uri string

	watchID   uint32
	lastReply atomic.Int64 // unix nanoseconds of the last Publish response
	lastUser  atomic.Int64 // unix nanoseconds of the last Publish response of a user subscription

	mu   sync.Mutex
	acks []*ua.SubscriptionAcknowledgement // mu must be held.
	subs map[uint32]*userSub               // user subscriptions here; mu must be held.

	// keepChannel: another conn took over ch (a mirrored session
	// activated on it); ending this conn leaves the channel open.
	keepChannel atomic.Bool

	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error     // set before lost is closed
	lostAt   time.Time // set before lost is closed
}

// openConn connects to url, opens a session and starts watching the
// server's ServiceLevel. Every step is bounded by the client's Timeout.
func openConn(ctx context.Context, c *Client, srv *server, url string) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	chOpts, err := c.channelOptions(ctx, url)
	if err != nil {
		return nil, err
	}
	ch, err := uaclient.Dial(ctx, url, chOpts)
	if err != nil {
		return nil, err
	}
	ses, err := uaclient.OpenSession(ctx, ch, uaclient.SessionParams{
		Name:        c.opts.ApplicationName,
		Application: c.app,
		Timeout:     sessionTimeout,
		CallTimeout: c.opts.Timeout,
		User:        c.opts.User,
	})
	if err != nil {
		ch.Close()
		return nil, err
	}
	cn := &conn{c: c, srv: srv, url: url, ch: ch, ses: ses, uri: ses.ServerURI,
		subs: make(map[uint32]*userSub), lost: make(chan struct{})}
	if err := cn.watch(ctx); err != nil {
		ch.Close()
		return nil, err
	}
	cn.start()
	return cn, nil
}

// start runs cn's Publish loops and its watchdog.
func (cn *conn) start() {
	cn.lastReply.Store(time.Now().UnixNano())
	for range cn.c.opts.PublishRequests {
		go cn.publishLoop()
	}
	go cn.watchdog()
}

// sessionTimeout is asked for every session: long enough that a
// subscription survives a network blip and can be transferred.
const sessionTimeout = 60 * time.Second

// keepAliveCount is the keep-alive count that makes a subscription with
// the given publishing interval answer at least every LostAfter/3.
func (c *Client) keepAliveCount(interval time.Duration) uint32 {
	return uint32(max(1, (c.opts.LostAfter/3)/max(interval, time.Millisecond)))
}

// watch creates the subscription that monitors ServiceLevel.
func (cn *conn) watch(ctx context.Context) error {
	ka := cn.c.keepAliveCount(watchInterval)
	resp, err := cn.call(ctx, &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: float64(watchInterval / time.Millisecond),
		RequestedLifetimeCount:      ka * 10,
		RequestedMaxKeepAliveCount:  ka,
		PublishingEnabled:           true,
	})
	if err != nil {
		return fmt.Errorf("watch ServiceLevel: %w", err)
	}
	cn.watchID = resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	_, err = cn.call(ctx, &ua.CreateMonitoredItemsRequest{
		SubscriptionID:     cn.watchID,
		TimestampsToReturn: ua.TimestampsToReturnNeither,
		ItemsToCreate: []*ua.MonitoredItemCreateRequest{{
			ItemToMonitor:  &ua.ReadValueID{NodeID: serviceLevelNode, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{
				ClientHandle: 0, SamplingInterval: 0, QueueSize: 1, DiscardOldest: true,
				Filter: ua.NewExtensionObject(nil),
			},
		}},
	})
	if err != nil {
		return fmt.Errorf("watch ServiceLevel: %w", err)
	}
	// A Bad result for the item (a server without ServiceLevel) leaves the
	// level unknown; the session still serves.
	return nil
}

// call sends one request on the session, bounded by the client's Timeout.
// A broken or silent connection marks the conn lost.
func (cn *conn) call(ctx context.Context, req ua.Request) (ua.Response, error) {
	resp, err := cn.ses.Call(ctx, req, cn.c.opts.Timeout)
	if transportError(err) {
		cn.fail(err)
	}
	return resp, err
}

// transportError tells a connection that failed from a service that
// answered Bad.
func transportError(err error) bool {
	return errors.Is(err, uaclient.ErrClosed) || errors.Is(err, uaclient.ErrTimeout)
}

// fail marks the conn lost (once) and closes its channel.
func (cn *conn) fail(err error) {
	cn.lostOnce.Do(func() {
		cn.lostErr = err
		cn.lostAt = time.Now()
		close(cn.lost)
		if !cn.keepChannel.Load() {
			go cn.ch.Close()
		}
	})
}

// isLost reports whether the conn is lost.
func (cn *conn) isLost() bool {
	select {
	case <-cn.lost:
		return true
	default:
		return false
	}
}

// watchdog fails the conn when no Publish response arrived for LostAfter:
// a server that stopped answering without closing the connection.
func (cn *conn) watchdog() {
	every := max(cn.c.opts.LostAfter/4, 10*time.Millisecond)
	tick := cn.c.clock.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-cn.lost:
			return
		case <-tick.Chan():
			if silent := time.Since(time.Unix(0, cn.lastReply.Load())); silent > cn.c.opts.LostAfter {
				cn.fail(fmt.Errorf("no Publish response for %v", silent.Round(time.Millisecond)))
				return
			}
		}
	}
}

func (cn *conn) takeAcks() []*ua.SubscriptionAcknowledgement {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	a := cn.acks
	cn.acks = nil
	if a == nil {
		a = []*ua.SubscriptionAcknowledgement{}
	}
	return a
}

// publishLoop keeps one Publish request queued at the server and hands
// every response to dispatch, until the conn is lost.
func (cn *conn) publishLoop() {
	timeout := cn.c.opts.LostAfter + cn.c.opts.Timeout
	for !cn.isLost() {
		r, err := cn.ch.Request(context.Background(), &ua.PublishRequest{SubscriptionAcknowledgements: cn.takeAcks()}, cn.ses.Auth(), timeout)
		if errors.Is(err, uaclient.ErrClosed) {
			cn.fail(err)
			return
		}
		if err != nil {
			continue // a timed-out Publish; the watchdog judges silence
		}
		cn.lastReply.Store(r.At.UnixNano())
		if code := uawire.CheckService(r.Body); code != ua.StatusOK {
			cn.fail(fmt.Errorf("Publish response refused before decoding: %w", code))
			return
		}
		_, svc, err := ua.DecodeService(r.Body)
		if err != nil {
			cn.fail(fmt.Errorf("decode Publish response: %w", err))
			return
		}
		resp, ok := svc.(*ua.PublishResponse)
		if !ok {
			if f, isFault := svc.(*ua.ServiceFault); isFault {
				if !cn.publishFault(f.ResponseHeader.ServiceResult) {
					return
				}
				continue
			}
			cn.fail(fmt.Errorf("Publish answered with %T", svc))
			return
		}
		if s := resp.ResponseHeader.ServiceResult; s != ua.StatusOK {
			if !cn.publishFault(s) {
				return
			}
			continue
		}
		cn.dispatch(resp, r.At)
	}
}

// publishFault handles a Publish that failed as a service; false ends
// this publish loop.
func (cn *conn) publishFault(s ua.StatusCode) bool {
	switch s {
	case ua.StatusBadTimeout, ua.StatusBadNoSubscription:
		return true
	case ua.StatusBadTooManyPublishRequests:
		return false // the other loop goes on
	}
	cn.fail(fmt.Errorf("Publish: %w", s))
	return false
}

// dispatch routes one Publish response: the watch's level to the
// controller, data changes to their user subscription.
func (cn *conn) dispatch(resp *ua.PublishResponse, at time.Time) {
	msg := resp.NotificationMessage
	if msg == nil {
		return
	}
	if len(msg.NotificationData) > 0 {
		cn.mu.Lock()
		cn.acks = append(cn.acks, &ua.SubscriptionAcknowledgement{SubscriptionID: resp.SubscriptionID, SequenceNumber: msg.SequenceNumber})
		cn.mu.Unlock()
	}
	if resp.SubscriptionID == cn.watchID {
		for _, eo := range msg.NotificationData {
			dc, ok := eo.Value.(*ua.DataChangeNotification)
			if !ok {
				continue
			}
			for _, it := range dc.MonitoredItems {
				cn.c.levelSeen(cn, it.Value)
			}
		}
		return
	}
	cn.mu.Lock()
	sub := cn.subs[resp.SubscriptionID]
	cn.mu.Unlock()
	if sub == nil {
		return
	}
	cn.lastUser.Store(at.UnixNano())
	cn.c.publishSeen(cn, at)
	if cn.c.mode() == ModeMirrored {
		cn.c.fillGap(cn, sub, resp.SubscriptionID, msg.SequenceNumber)
	}
	sub.deliverMessage(cn, resp.SubscriptionID, at, msg)
}

// close ends the session (deleting its subscriptions) and the channel,
// waiting at most wait.
func (cn *conn) close(wait time.Duration) {
	if !cn.isLost() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		_, _ = cn.ses.Call(ctx, &ua.CloseSessionRequest{DeleteSubscriptions: true}, wait)
		cancel()
	}
	cn.fail(ErrClosed)
}
