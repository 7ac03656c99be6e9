package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Outcomes of the OpenSecureChannel replayer, which Verdict reads.
const (
	replayCaptured = "capture opened a channel"
	replayRefused  = "replay refused: ERR BadNonceInvalid"
	replayPrefix   = "replay " // every outcome of a replay begins so
)

// replayRecapture is how long one captured request is replayed before a
// new one is captured: well inside the host's SecureChannelReplayWindow
// (10 min), beyond which the same bytes are new again.
const replayRecapture = time.Minute

// replayer captures a secured OpenSecureChannel (Issue) as a client sent
// it, byte for byte, then sends those bytes again on a new connection per
// operation: the replay of a handshake sniffed on the network.
type replayer struct {
	abuse    *Abuse
	captured []byte
	at       time.Time
}

// replay does one operation: a capture when none is fresh, else a replay.
func (p *replayer) replay(ctx context.Context, _ *rand.Rand) {
	a := p.abuse
	first := p.captured == nil || time.Since(p.at) >= replayRecapture
	if first {
		opn, err := a.Hardening.Secure.sealedOpen(0, 1)
		if err != nil {
			a.note(ctx, abuserReplay, "capture: seal: ", err)
			return
		}
		p.captured, p.at = opn, time.Now()
	}
	rc, err := dialRaw(ctx, a.Endpoint, opTimeout, replayIP)
	if err == nil {
		defer rc.close()
		err = rc.hello(opTimeout)
	}
	if err == nil {
		_, err = rc.sendOpen(p.captured, opTimeout)
	}
	switch {
	case first && err == nil:
		a.Tally.Saw(abuserReplay, replayCaptured)
	case first:
		a.note(ctx, abuserReplay, "capture: ", err)
	case err == nil:
		a.Tally.Saw(abuserReplay, replayPrefix+"opened a channel")
	default:
		a.note(ctx, abuserReplay, replayPrefix+"refused: ", err)
	}
}

// maxRenewals bounds one renew storm.
const maxRenewals = 200

// renewStorm opens a secured channel and renews its token as fast as the
// answers come, up to maxRenewals, until the host refuses; each renewal
// answered is counted, then how the storm ended.
func (a *Abuse) renewStorm(ctx context.Context, _ *rand.Rand) {
	s := a.Hardening.Secure
	rc, err := dialRaw(ctx, a.Endpoint, opTimeout, renewIP)
	if err != nil {
		a.note(ctx, abuserRenew, "dial: ", err)
		return
	}
	defer rc.close()
	var scID uint32
	opn, err := s.sealedOpen(0, 1)
	if err == nil {
		if err = rc.hello(opTimeout); err == nil {
			scID, err = rc.sendOpen(opn, opTimeout)
		}
	}
	if err != nil {
		a.note(ctx, abuserRenew, "open: ", err)
		return
	}
	renewed := 0
	for seq := uint32(2); renewed < maxRenewals && ctx.Err() == nil; seq++ {
		if opn, err = s.sealedOpen(scID, seq); err == nil {
			_, err = rc.sendOpen(opn, opTimeout)
		}
		if err != nil {
			break
		}
		renewed++
	}
	a.Tally.Saw(abuserRenew, fmt.Sprintf("renewals answered: %s", countBucket(renewed)))
	switch {
	case err == nil:
		a.Tally.Saw(abuserRenew, fmt.Sprintf("not throttled after %d renewals", maxRenewals))
	default:
		a.note(ctx, abuserRenew, "then ", err)
	}
}

// countBucket names the range n falls in, coarse enough to keep the
// histogram short.
func countBucket(n int) string {
	for _, b := range []int{0, 5, 10, 20, 50, 100} {
		if n <= b {
			if b == 0 {
				return "0"
			}
			return fmt.Sprintf("≤ %d", b)
		}
	}
	return "> 100"
}
