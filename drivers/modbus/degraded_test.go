package modbus

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

// TestSilentDeviceShowsDegraded: a device that accepts every connection
// and reads every request but never answers reports ConnectOK and a
// growing run of failed polls, which Condition shows as degraded (not
// connected, not disconnected); once it answers, the run ends and the
// device is connected again. A device that refuses connections stays
// disconnected however long its reads fail.
func TestSilentDeviceShowsDegraded(t *testing.T) {
	var answering atomic.Bool
	dev := startRaw(t, func(_ *rand.Rand, req []byte) ([]byte, bool) {
		if req == nil || !answering.Load() {
			return nil, false
		}
		txn, unit, fc, qty := reqParts(req)
		return frame(txn, 0, -1, unit, goodPayload(fc, qty)...), false
	})
	clock := clockwork.NewRealClock()
	rule := drivers.DegradedRule{Polls: 3, After: 300 * time.Millisecond}
	tags := []deployment.Tag{tg(H, 0, "int16"), tg(H, 1, "uint16")}
	d := newDriver(t, deployment.Device{Address: dev.Addr(), Tags: tags, Timeout: deployment.Duration(100 * time.Millisecond)}, clock)

	// pollUntil reads once per check until the device shows want.
	pollUntil := func(want drivers.State) drivers.Health {
		t.Helper()
		var h drivers.Health
		checkFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			_, _ = d.Read(ctxT(t))
			h = d.Health()
			if got := drivers.Condition(h, clock.Now(), rule); got != want {
				return fmt.Errorf("shows %v (health %+v), want %v", got, h, want)
			}
			return nil
		})
		return h
	}

	h := pollUntil(drivers.StateDegraded)
	if !h.ConnectOK || h.Reads.Failed < rule.Polls || !h.Reads.LastGood.IsZero() || !errors.Is(h.LastError, drivers.ErrCommunication) {
		t.Fatalf("degraded health %+v", h)
	}
	if st := d.Stats(); st.ReadsOK != 0 || st.ReadsFailed == 0 || st.Connects == 0 {
		t.Fatalf("stats %+v", st)
	}

	answering.Store(true)
	h = pollUntil(drivers.StateConnected)
	if h.Reads.Failed != 0 || h.Reads.LastGood.IsZero() || h.LastError != nil {
		t.Fatalf("recovered health %+v", h)
	}

	// Nothing listens at a closed port: connects fail, the device is
	// disconnected, never degraded.
	refused := newDriver(t, deployment.Device{Address: freeAddr(t), Tags: tags, Timeout: deployment.Duration(100 * time.Millisecond)}, clock)
	checkFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		_, _ = refused.Read(ctxT(t))
		h := refused.Health()
		if h.Reads.Failed < rule.Polls || clock.Since(h.Reads.Since) < rule.After {
			return fmt.Errorf("run %+v not yet past the rule", h.Reads)
		}
		if got := drivers.Condition(h, clock.Now(), rule); got != drivers.StateDisconnected || h.ConnectOK {
			t.Fatalf("a refusing device shows %v (health %+v)", got, h)
		}
		return nil
	})
}
