package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/h2hostile"
)

// heldSessions is five addresses × five never-activated sessions, each
// kept by its own channel and created again whenever the host drops it
// (evicted for a newcomer, or timed out unactivated).
type heldSessions struct {
	abuse   *Abuse
	holders []*unactivated
}

// unactivated holds one never-activated session from ip.
type unactivated struct {
	ip   string
	r    *rand.Rand
	rc   *rawConn
	auth *ua.NodeID
}

func newHeldSessions(a *Abuse) *heldSessions {
	h := &heldSessions{abuse: a}
	for k, ip := range holderIPs {
		for j := range holdersPerIP {
			h.holders = append(h.holders, &unactivated{ip: ip, r: rand.New(rand.NewPCG(a.Seed, uint64(100+k*holdersPerIP+j)))})
		}
	}
	return h
}

// round steps every holder once, at the same time.
func (h *heldSessions) round(ctx context.Context, _ *rand.Rand) {
	var wg sync.WaitGroup
	for _, u := range h.holders {
		wg.Go(func() {
			got := u.step(ctx, h.abuse)
			if got != "" && ended(ctx) {
				got = cutShort
			}
			if got != "" {
				h.abuse.Tally.Saw(abuserHeld, got)
			}
		})
	}
	wg.Wait()
}

// step opens a channel, creates the session, or checks that the session
// is still held (a Read in it answers BadSessionNotActivated), and names
// what happened ("" for a session still held).
func (u *unactivated) step(ctx context.Context, a *Abuse) string {
	if u.rc == nil {
		rc, err := a.rawChannelFrom(ctx, u.ip)
		if err != nil {
			return "channel: " + outcome(err)
		}
		u.rc = rc
	}
	if u.auth == nil {
		resp, err := u.rc.call(createSessionRequest(a.Endpoint, u.r, hostileTimeout), nil, opTimeout)
		if err != nil {
			u.hangUpUnlessStatus(err)
			return "create: " + outcome(err)
		}
		u.auth = resp.(*ua.CreateSessionResponse).AuthenticationToken
		return "created"
	}
	_, err := u.rc.call(validRequests[0](), u.auth, opTimeout)
	if errors.Is(err, ua.StatusBadSessionNotActivated) {
		return ""
	}
	u.auth = nil
	u.hangUpUnlessStatus(err)
	return "dropped: " + outcome(err)
}

// hangUpUnlessStatus closes the channel unless err is a service result
// (the channel goes on).
func (u *unactivated) hangUpUnlessStatus(err error) {
	var st ua.StatusCode
	if !errors.As(err, &st) {
		u.close()
	}
}

func (u *unactivated) close() {
	if u.rc != nil {
		u.rc.close()
	}
	u.rc, u.auth = nil, nil
}

// release closes every holder's channel; the host drops their sessions.
func (h *heldSessions) release() {
	for _, u := range h.holders {
		u.close()
	}
}

// The keyless streams' shape: the 800 streams, each announcing a
// 4 MiB message and sending its first KiB.
const (
	keylessConns    = 16
	keylessPerConn  = 50
	keylessAnnounce = 4 << 20
	keylessSent     = 1024
	keylessAnswered = 10 * time.Second // how long the answers are awaited
	syncPull        = "/otopcua.localdb.v1.Sync/Pull"
	nonceHeader     = "x-otopcua-replication-nonce"
)

// keyless holds up to keylessConns connections to the host's LocalDb
// sync port, each with keylessPerConn streams without the key announcing
// 4 MiB, until the host closes them or the abuse ends.
type keyless struct {
	abuse *Abuse
	wg    sync.WaitGroup

	mu      sync.Mutex
	conns   map[*h2hostile.Client]bool // mu must be held.
	closing bool                       // mu must be held.
}

// open opens one connection of streams, counts how each was answered,
// and holds it; false when keylessConns are held.
func (k *keyless) open(ctx context.Context, _ *rand.Rand) bool {
	k.mu.Lock()
	full := len(k.conns) >= keylessConns
	k.mu.Unlock()
	if full {
		return false
	}
	a := k.abuse
	c, err := h2hostile.Dial(ctx, keylessIP, a.Hardening.Replication)
	if err != nil {
		a.note(ctx, abuserKeyless, "dial: ", err)
		return true
	}
	var ids []uint32
	for range keylessPerConn {
		id, err := c.Open(syncPull, nonceHeader, "00112233445566778899aabbccddeeff")
		if err == nil {
			err = c.Announce(id, keylessAnnounce, keylessSent)
		}
		if err != nil {
			a.note(ctx, abuserKeyless, "stream: ", err)
			break
		}
		ids = append(ids, id)
	}
	k.count(ctx, c, ids)
	k.hold(ctx, c)
	return true
}

// count waits up to keylessAnswered for every stream's answer and counts
// them ("no answer" for the others).
func (k *keyless) count(ctx context.Context, c *h2hostile.Client, ids []uint32) {
	deadline := time.Now().Add(keylessAnswered)
	for _, id := range ids {
		got := c.Answer(id)
		for got == "" && time.Now().Before(deadline) && ctx.Err() == nil {
			pause(ctx, 20*time.Millisecond)
			got = c.Answer(id)
		}
		switch {
		case got != "":
		case ended(ctx):
			got = cutShort
		default:
			got = "no answer"
		}
		k.abuse.Tally.Saw(abuserKeyless, got)
	}
}

// hold keeps c until the host closes it or the abuse ends.
func (k *keyless) hold(ctx context.Context, c *h2hostile.Client) {
	k.mu.Lock()
	if k.closing {
		k.mu.Unlock()
		_ = c.Conn.Close()
		return
	}
	k.conns[c] = true
	k.mu.Unlock()
	since := time.Now()
	k.wg.Go(func() {
		<-c.Done()
		k.mu.Lock()
		closing := k.closing || ctx.Err() != nil
		delete(k.conns, c)
		k.mu.Unlock()
		if closing {
			k.abuse.Tally.Saw(abuserKeyless, "connection held until the end")
		} else {
			_, goAway, _ := c.State()
			k.abuse.Tally.Saw(abuserKeyless, fmt.Sprintf("connection closed by the host after %s%s", holdBucket(time.Since(since)), goAwayText(goAway)))
		}
		_ = c.Conn.Close()
	})
}

func goAwayText(g string) string {
	if g == "" {
		return ""
	}
	return " (GOAWAY " + g + ")"
}

// closeAll closes every held connection and waits for the watchers.
func (k *keyless) closeAll() {
	k.mu.Lock()
	k.closing = true
	for c := range k.conns {
		_ = c.Conn.Close()
	}
	k.mu.Unlock()
	k.wg.Wait()
}
