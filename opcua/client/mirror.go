package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaclient"
)

// The Mirrored mode's failover (HotAndMirrored and Transparent sets): the
// servers share the session, so instead of a new session the client
// activates the same session on the secure channel it already holds to
// the next server (its ServiceLevel watch's; for a single URL, a floating
// address, the channel of its reconnection to the same URL), with
// uaclient.Session.Reactivate (the signature over the original server
// certificate and the last nonce). Then, per subscription, it asks for
// every message after the last one it received (Republish last+1, +2, …
// until BadMessageNotAvailable), delivers them in order, and goes on
// publishing on that channel. A message whose sequence number was
// delivered already is dropped (userSub.seqs), so no value arrives twice.
// A refusal falls back to the Warm path on that server, and the failover
// event says so (Event.Fallback). A planned move (LeftBand, Outranked)
// takes the same path once moveTo has closed the channel to the old
// server, which still serves: a new subscription would deliver the
// current values a second time.

// mirrorTo moves the session of lost, the conn that held the
// subscriptions, onto the channel the client holds to `to`. done: the session lives on
// there, with the subscriptions; otherwise fallback says why the Warm path
// follows ("" when there was no session to move).
func (c *Client) mirrorTo(ctx context.Context, to *server, lost *conn, subs []*userSub) (done bool, fallback string) {
	if lost == nil || !hosts(lost, subs) {
		c.log.Debug("mirrored failover: no session to move", "lost", lost != nil)
		return false, ""
	}
	c.mu.Lock()
	own := to.conn
	c.mu.Unlock()
	if own == nil {
		return false, ""
	}
	cn, shared, err := c.reactivate(ctx, to, own, lost)
	if err != nil {
		c.log.Warn("mirrored failover: the session could not be activated on the next server; taking the warm path", "server", own.uri, "url", own.url, "err", err)
		return false, fmt.Sprintf("ActivateSession of the session on %s failed: %v", own.uri, err)
	}
	c.mu.Lock()
	swapped := to.conn == own && !c.closed
	if swapped {
		to.conn = cn
	}
	c.mu.Unlock()
	if !swapped {
		cn.keepChannel.Store(shared) // own's, when shared: it lives on
		cn.fail(errors.New("the server changed during the mirrored failover"))
		return false, "the server changed during the failover"
	}
	// The backup's own watch session ends; the mirrored one watches now
	// (on the same channel when they share it).
	own.keepChannel.Store(shared)
	go own.close(time.Second)
	for _, s := range subs {
		s.adopt(cn, lost)
	}
	n := c.republish(ctx, cn, subs)
	cn.start()
	c.log.Info("mirrored failover: the session is active on the next server", "server", cn.uri, "url", cn.url, "republished", n)
	return true, ""
}

// hosts reports whether the user subscriptions lived on cn.
func hosts(cn *conn, subs []*userSub) bool {
	if len(subs) == 0 {
		return false
	}
	for _, s := range subs {
		s.mu.Lock()
		h := s.host
		s.mu.Unlock()
		if h != cn {
			return false
		}
	}
	return true
}

// reactivate activates lost's session on a secure channel to `to`. An
// anonymous session goes on the channel the client already holds there
// (own's, the channel of its ServiceLevel watch): no new connection,
// handshake or endpoint discovery stands between the loss and the
// session's return; the conn returned shares own's channel and owns it
// from then on. A user's session gets a channel of its own: the server
// checks the password (a bcrypt) on the worker of the channel it arrives
// on, and on own's channel that check would hold back the watch's Publish
// responses until the watchdog declared the backup lost. The conn is not
// started.
func (c *Client) reactivate(ctx context.Context, to *server, own, lost *conn) (cn *conn, shared bool, err error) {
	ch, shared := own.ch, c.opts.User == nil
	var cert []byte
	if !shared {
		chOpts, err := c.channelOptions(ctx, own.url)
		if err != nil {
			return nil, false, err
		}
		if chOpts.Security == nil {
			// On None the password is still encrypted, for the
			// certificate of the server the channel talks to.
			cert = own.ses.ServerCertificate()
		}
		if ch, err = uaclient.Dial(ctx, own.url, chOpts); err != nil {
			return nil, false, err
		}
	}
	ses, err := lost.ses.Reactivate(ctx, ch, cert, c.opts.Timeout)
	if err != nil {
		if !shared {
			ch.Close()
		}
		return nil, false, err
	}
	lost.mu.Lock()
	subs := maps.Clone(lost.subs)
	acks := slices.Clone(lost.acks)
	lost.mu.Unlock()
	return &conn{c: c, srv: to, url: own.url, ch: ch, ses: ses, uri: own.uri, watchID: lost.watchID,
		subs: subs, acks: acks, lost: make(chan struct{})}, shared, nil
}

// adopt makes the subscription, as it lived on lost, live on cn (the same
// session on a new channel): same id and items, and the sequence numbers
// delivered so far, so that nothing is delivered twice.
func (s *userSub) adopt(cn, lost *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host == lost {
		s.host, s.uri = cn, cn.uri
	}
}

// republish asks cn for every message of each subscription after the last
// one received and delivers them in order; it returns how many came.
func (c *Client) republish(ctx context.Context, cn *conn, subs []*userSub) (n int) {
	for _, s := range subs {
		s.mu.Lock()
		id, next, ok := s.id, s.seqs.newest+1, s.seqs.seen != nil
		s.mu.Unlock()
		if !ok {
			continue // nothing received yet: the next Publish brings it
		}
		for range maxRepublish {
			resp, err := cn.call(ctx, &ua.RepublishRequest{SubscriptionID: id, RetransmitSequenceNumber: next})
			if err != nil {
				if !errors.Is(err, ua.StatusBadMessageNotAvailable) {
					c.log.Warn("mirrored failover: Republish failed", "server", cn.uri, "subscription", id, "sequence", next, "err", err)
				}
				break
			}
			msg := resp.(*ua.RepublishResponse).NotificationMessage
			if msg == nil {
				break
			}
			at := time.Now()
			cn.mu.Lock()
			cn.acks = append(cn.acks, &ua.SubscriptionAcknowledgement{SubscriptionID: id, SequenceNumber: msg.SequenceNumber})
			cn.mu.Unlock()
			cn.lastUser.Store(at.UnixNano())
			c.publishSeen(cn, at)
			s.deliverMessage(cn, id, at, msg)
			next = msg.SequenceNumber + 1
			n++
		}
	}
	return n
}

// fillGap republishes the messages of subscription id that were sent but
// never received, when a message (or a keep-alive, which carries the next
// number) with sequence number seq shows a gap after the newest one
// delivered: after a reactivation on the same server the Publish
// requests of the dead channel were answered into the void. Called from a
// Publish loop, before the message with seq is delivered.
//
// Several Publish loops hand their messages over in any order, so a gap
// is most often a message another loop is delivering right now: each
// missing number gets reorderWait to arrive before it is asked for. The
// wait also keeps the messages in order: the message with seq is
// delivered after the ones before it.
func (c *Client) fillGap(cn *conn, s *userSub, id, seq uint32) {
	s.mu.Lock()
	known := s.host == cn && s.id == id && s.seqs.seen != nil
	from := s.seqs.newest + 1
	s.mu.Unlock()
	if !known || int32(seq-from) <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	for n := from; int32(seq-n) > 0 && n-from < maxRepublish; n++ {
		if s.awaitSeq(n, reorderWait) {
			continue
		}
		resp, err := cn.call(ctx, &ua.RepublishRequest{SubscriptionID: id, RetransmitSequenceNumber: n})
		if err != nil {
			if !errors.Is(err, ua.StatusBadMessageNotAvailable) {
				c.log.Warn("Republish of a missed message failed", "server", cn.uri, "subscription", id, "sequence", n, "err", err)
			}
			continue
		}
		if msg := resp.(*ua.RepublishResponse).NotificationMessage; msg != nil {
			cn.mu.Lock()
			cn.acks = append(cn.acks, &ua.SubscriptionAcknowledgement{SubscriptionID: id, SequenceNumber: msg.SequenceNumber})
			cn.mu.Unlock()
			s.deliverMessage(cn, id, time.Now(), msg)
		}
	}
}

// reorderWait is how long fillGap waits for a missing message that
// another Publish loop may be delivering before it asks for it again.
const reorderWait = 100 * time.Millisecond

// awaitSeq reports whether message n was delivered, waiting up to d for
// it (another Publish loop's).
func (s *userSub) awaitSeq(n uint32, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		s.mu.Lock()
		_, seen := s.seqs.seen[n]
		s.mu.Unlock()
		if seen || !time.Now().Before(deadline) {
			return seen
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// maxRepublish bounds the Republish calls per subscription at a failover
// (a server keeps far fewer messages for retransmission).
const maxRepublish = 1000
