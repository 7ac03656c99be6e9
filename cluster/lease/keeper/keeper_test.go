package keeper

import (
	"testing"
	"time"

	"github.com/otopcua/otopcua/gate"
)

// TestConfigTimings: the derived timings are today's (a 1 s heartbeat, a
// 2 s pause and a 6 s TTL: suspect after 1.5 s, renew every 2 s, a grant
// valid 5 s), and a config the keeper cannot run with is refused.
func TestConfigTimings(t *testing.T) {
	c := Config{Owner: "a", Expected: 2, Heartbeat: time.Second, Pause: 2 * time.Second, TTL: 6 * time.Second}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{
		{"suspect after", c.SuspectAfter(), 1500 * time.Millisecond},
		{"renew every", c.RenewEvery(), 2 * time.Second},
		{"margin", c.Margin(), time.Second},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	for _, bad := range []Config{{Expected: 2, Heartbeat: 1, Pause: 1, TTL: 1}, {Owner: "a", Heartbeat: 1, Pause: 1, TTL: 1},
		{Owner: "a", Expected: 1, Pause: 1, TTL: 1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestLicenceIsAQuery: asking for the licence changes nothing — the same
// question at the same instant gets the same answer, and the next tick
// still reports the change it would have reported without the question.
func TestLicenceIsAQuery(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := Config{Owner: "a", Expected: 2, Heartbeat: time.Second, Pause: 2 * time.Second, TTL: 6 * time.Second}
	obs := Observation{Primary: true, Self: true, Peers: []Peer{{ID: "b", Member: true, Reachable: true, Heard: true, LastHeard: t0}}}
	k := New(cfg, t0)
	k.Step(t0, Follow{})
	k.Tick(t0, obs)
	at := t0.Add(2500 * time.Millisecond) // b silent past the pause, no tick since t0: not whole
	for range 3 {
		if l := k.Licence(at); l != gate.Unlicensed {
			t.Fatalf("licence %v, want unlicensed", l)
		}
	}
	var changed []gate.Licence
	for _, e := range k.Tick(at, obs) {
		if c, ok := e.(LicenceChanged); ok {
			changed = append(changed, c.Licence)
		}
	}
	if len(changed) != 1 || changed[0] != gate.Unlicensed {
		t.Fatalf("the tick after the queries reported %v, want [unlicensed]", changed)
	}
}

// TestNothingIsGatedBeforeFollow: the cluster core may take the lease
// before the keeper follows its set (the role view starts later); until
// then the licence is Licensed and no change is reported.
func TestNothingIsGatedBeforeFollow(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	k := New(Config{Owner: "a", Expected: 2, Heartbeat: time.Second, Pause: 2 * time.Second, TTL: 6 * time.Second}, t0)
	effs := k.Step(t0, CoreAcquire{})
	if len(effs) != 1 || effs[0].(Acquire).Purpose != ForCore {
		t.Fatalf("core acquire: effects %v", effs)
	}
	effs = k.Step(t0, AcquireResult{Purpose: ForCore, Start: t0, Outcome: Held, Holder: "b", Epoch: 3})
	for _, e := range effs {
		if _, ok := e.(LicenceChanged); ok {
			t.Fatalf("a licence change before Follow: %v", effs)
		}
	}
	if l := k.Licence(t0.Add(time.Minute)); l != gate.Licensed || k.Holder() != "b" {
		t.Fatalf("before Follow: licence %v, holder %q; want licensed, b", l, k.Holder())
	}
	k.Step(t0.Add(time.Minute), Follow{})
	if l := k.Licence(t0.Add(time.Minute)); l != gate.Unlicensed {
		t.Fatalf("following, alone, lease elsewhere: %v, want unlicensed", l)
	}
}

// TestHoldStartsFromTheGossipsDowning: the observation that first names
// this node Primary starts the promotion hold when it shows the old
// Primary Down, also when the driver has not stepped its Downed message
// yet (the role view reacted to the downing first: CI saw a survivor at
// 250 with no hold); a peer proven dead starts none.
func TestHoldStartsFromTheGossipsDowning(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := Config{Owner: "b", Expected: 2, Heartbeat: 500 * time.Millisecond, Pause: time.Second, TTL: 2 * time.Second, Hold: 250 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		proven bool
		want   bool
	}{{"maybe alive", false, true}, {"proven dead", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			k := New(cfg, t0)
			k.Step(t0, Follow{})
			k.Tick(t0, Observation{Self: true, Peers: []Peer{{ID: "a", Member: true, Reachable: true, Heard: true, LastHeard: t0}}})
			at := t0.Add(3 * time.Second)
			effs := k.Step(at, Observed{Observation: Observation{Primary: true, Self: true, Peers: []Peer{{ID: "a", Down: true, Proven: tc.proven}}}})
			held := false
			for _, e := range effs {
				if n, ok := e.(Note); ok && n.Kind == NoteHold && n.Peer == "a" {
					held = true
				}
			}
			if held != tc.want || (k.holdUntil.After(at)) != tc.want {
				t.Fatalf("hold noted %v, hold until %v; want %v", held, k.holdUntil, tc.want)
			}
			// The Downed message arriving afterwards changes nothing.
			k.Step(at.Add(time.Millisecond), Downed{Peer: "a", Proven: tc.proven})
			if (k.holdUntil.After(at)) != tc.want {
				t.Fatalf("after the Downed message: hold until %v", k.holdUntil)
			}
		})
	}
}
