package alarms_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/procs"
)

// levelSample is one answered read of Server.ServiceLevel.
type levelSample struct {
	sent  time.Time // when the read was sent
	at    time.Time // when the answer arrived
	level byte
}

// levelSampler reads a node's ServiceLevel every 50 ms over one session
// whose requests may wait 2 minutes: a read sent while the node is frozen
// waits in its socket and is answered the instant it runs again.
type levelSampler struct {
	mu      sync.Mutex
	samples []levelSample
	stop    func()
	done    chan struct{}
}

func sampleLevels(t *testing.T, endpoint string) *levelSampler {
	t.Helper()
	c, err := gopcua.NewClient(endpoint, gopcua.SecurityMode(ua.MessageSecurityModeNone), gopcua.AutoReconnect(false),
		gopcua.RequestTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if err := c.Connect(cctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &levelSampler{done: make(chan struct{})}
	s.stop = func() {
		cancel()
		<-s.done
		_ = c.Close(context.Background())
	}
	req := &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue}}}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			sent := time.Now()
			resp, err := c.Read(ctx, req)
			if err != nil {
				return // the node exited (or the test is over)
			}
			if len(resp.Results) == 1 && resp.Results[0].Status == ua.StatusOK {
				if lv, ok := resp.Results[0].Value.Value().(byte); ok {
					s.mu.Lock()
					s.samples = append(s.samples, levelSample{sent: sent, at: time.Now(), level: lv})
					s.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

// since returns the samples answered at or after t.
func (s *levelSampler) since(t time.Time) []levelSample {
	return s.filter(func(x levelSample) bool { return !x.at.Before(t) })
}

// sentSince returns the samples of the reads sent at or after t.
func (s *levelSampler) sentSince(t time.Time) []levelSample {
	return s.filter(func(x levelSample) bool { return !x.sent.Before(t) })
}

func (s *levelSampler) filter(keep func(levelSample) bool) []levelSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []levelSample
	for _, x := range s.samples {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// TestWokenPrimaryEmitsNothingUnderAutoDown: under auto-down (the
// default) the Primary a, alarm inactive, is frozen by SIGSTOP past the
// detection window; b takes over and the alarm goes active, inactive and
// active again while a sleeps. On SIGCONT a reads the device, finds its
// alarm active — a transition it would publish if nothing fenced it — and
// the woken-process fence denies it: alarm_history holds the three
// transitions once each, all published by b; b's /alerts shows the alarm
// active without a flicker until a is gone; and every read of
// ServiceLevel sent to a once it was stopped — the one that waited in its
// socket through the freeze first — is answered at most 100 until a
// exits.
func TestWokenPrimaryEmitsNothingUnderAutoDown(t *testing.T) {
	r := startRig(t)
	sampler := sampleLevels(t, r.a.Endpoint())
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if s := sampler.since(time.Time{}); len(s) == 0 || s[len(s)-1].level != 250 {
			return fmt.Errorf("a's ServiceLevel samples %v, want 250", s)
		}
		return nil
	})

	view, err := r.b.Members()
	if err != nil {
		t.Fatal(err)
	}
	bUID, err := strconv.ParseUint(string(view.Self.UID), 10, 64)
	if err != nil {
		t.Fatalf("b's uid %q: %v", view.Self.UID, err)
	}

	r.a.Signal(syscall.SIGSTOP)
	r.a.WaitStopped(10 * time.Second)
	frozen := time.Now()
	r.waitRole(r.b, "primary")
	t.Logf("b Primary %v after the SIGSTOP of a", time.Since(frozen).Round(time.Millisecond))
	var toggles []int
	for _, v := range []int{high, low, high} {
		r.dev.SetHolding(0, uint16(v))
		toggles = append(toggles, v)
		procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
			s, err := alertsOf(r.b)
			if err != nil {
				return err
			}
			if len(s) != 1 || s[0].Active != (v == high) {
				return fmt.Errorf("b /alerts %+v, want active=%v", s, v == high)
			}
			return nil
		})
	}

	woke := time.Now()
	r.a.Signal(syscall.SIGCONT)
	// Until a has gone and a second after, b's view of the alarm never
	// moves: a's stale or fenced transitions would reach it on the alerts
	// topic.
	for {
		s, err := alertsOf(r.b)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 1 || !s[0].Active {
			t.Fatalf("b /alerts %+v after a woke, want the alarm active throughout", s)
		}
		if _, exited := r.a.Exited(); exited {
			break
		}
		if time.Since(woke) > 40*time.Second {
			t.Fatalf("a has not left 40 s after its SIGCONT\n%s", r.a.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	exited := time.Now()
	procs.Holds(t, time.Second, 50*time.Millisecond, func() error {
		s, err := alertsOf(r.b)
		if err != nil {
			return err
		}
		if len(s) != 1 || !s[0].Active {
			return fmt.Errorf("b /alerts %+v after a left, want the alarm active", s)
		}
		return nil
	})

	// The reads sent once a was stopped: the first waited in its socket
	// through the freeze. (A read sent before may have been answered
	// before the freeze and its answer written after the SIGCONT: the
	// level a had then, not one it shows after waking.)
	after := sampler.sentSince(frozen)
	if len(after) == 0 {
		t.Fatalf("a answered no ServiceLevel read between its SIGCONT and its exit %v later", exited.Sub(woke).Round(time.Millisecond))
	}
	for _, x := range after {
		if x.level > 100 {
			t.Fatalf("a answered ServiceLevel %d %v after its SIGCONT to a read sent %v after its SIGSTOP (samples %v), want at most 100 until it exits",
				x.level, x.at.Sub(woke), x.sent.Sub(frozen), after)
		}
	}
	t.Logf("a woke and exited %v later; its %d ServiceLevel answers since: first %d, max ≤ 100",
		exited.Sub(woke).Round(time.Millisecond), len(after), after[0].level)

	checkExactlyOnce(t, r, r.b, toggles)
	// A transition's id starts with its publisher's uid in hex.
	h, err := r.history()
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("%016x/", bUID)
	for i, row := range h {
		if !strings.HasPrefix(row.TransitionID, prefix) {
			t.Fatalf("alarm_history row %d (%s) was not published by b (uid prefix %s): %+v", i, row.TransitionID, prefix, h)
		}
	}
	if log := r.a.Log(); !strings.Contains(log, "woken-process fence up") {
		t.Fatalf("a never raised the woken-process fence\n%s", log)
	}
}
