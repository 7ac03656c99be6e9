package woken

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const pause = 3 * time.Second

func at(d time.Duration) time.Time { return t0.Add(d) }

// TestDetector: a tick more than a pause after the last one is a wake;
// a pause exactly is not; before the tick, the gap itself says frozen;
// for one pause after the wake the node is unsure.
func TestDetector(t *testing.T) {
	tests := []struct {
		name            string
		ticks           []time.Duration // after t0, t0 being New's instant
		ask             time.Duration
		woke            bool // the last tick woke
		frozen, unsure  bool // at ask
		wokeAt, settled time.Duration
		neverWoke       bool
	}{
		{name: "ticks every 250 ms", ticks: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}, ask: 600 * time.Millisecond, neverWoke: true},
		{name: "a gap of a pause exactly is no wake", ticks: []time.Duration{pause}, ask: pause, neverWoke: true},
		{name: "a gap just over the pause wakes", ticks: []time.Duration{pause + time.Millisecond}, ask: pause + time.Millisecond,
			woke: true, unsure: true, wokeAt: pause + time.Millisecond, settled: 2*pause + time.Millisecond},
		{name: "before the tick the gap says frozen", ticks: []time.Duration{time.Second}, ask: time.Second + pause + time.Millisecond,
			frozen: true, unsure: true, neverWoke: true},
		{name: "unsure for a pause after the wake", ticks: []time.Duration{20 * time.Second, 21 * time.Second, 22 * time.Second}, ask: 22*time.Second + 999*time.Millisecond,
			unsure: true, wokeAt: 20 * time.Second, settled: 23 * time.Second},
		{name: "sure a pause after the wake", ticks: []time.Duration{20 * time.Second, 21 * time.Second, 22 * time.Second, 23 * time.Second}, ask: 23 * time.Second,
			wokeAt: 20 * time.Second, settled: 23 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDetector(pause, t0)
			var woke bool
			for _, tk := range tt.ticks {
				_, woke = d.Tick(at(tk))
			}
			if woke != tt.woke || d.Frozen(at(tt.ask)) != tt.frozen || d.Unsure(at(tt.ask)) != tt.unsure {
				t.Fatalf("woke %v frozen %v unsure %v, want %v %v %v", woke, d.Frozen(at(tt.ask)), d.Unsure(at(tt.ask)), tt.woke, tt.frozen, tt.unsure)
			}
			if tt.neverWoke {
				if !d.WokeAt().IsZero() || !d.Settled().IsZero() {
					t.Fatalf("woke at %v, want never", d.WokeAt())
				}
				return
			}
			if !d.WokeAt().Equal(at(tt.wokeAt)) || !d.Settled().Equal(at(tt.settled)) {
				t.Fatalf("woke at %v settled %v, want %v %v", d.WokeAt(), d.Settled(), at(tt.wokeAt), at(tt.settled))
			}
		})
	}
	d := NewDetector(pause, t0)
	d.Tick(at(10 * time.Second))
	d.Reset(at(11 * time.Second))
	if !d.WokeAt().IsZero() || d.Unsure(at(12*time.Second)) {
		t.Fatal("Reset kept the wake")
	}
}

func heard(id string, d time.Duration) Peer { return Peer{ID: id, Heard: true, LastHeard: at(d)} }

// TestFence is the rule's table: a wake raises the fence; it comes down
// only on a tick at which every peer of the ClusterId (and at least
// Expected−1 of them) was heard after the wake plus one pause; a node
// alone by configuration is never fenced. Every case wakes at 20 s (the
// loop last ran at 1 s) unless it says otherwise.
func TestFence(t *testing.T) {
	const wake = 20 * time.Second
	settled := wake + pause
	tests := []struct {
		name    string
		cfg     Config
		peers   []Peer
		tick    time.Duration // the tick after the wake (0: none)
		woken   bool          // Woken at tick (or at wake when no tick)
		cleared bool
		missing []string
		noWake  bool // tick every 250 ms instead of the gap
	}{
		{name: "no gap: never woken", cfg: Config{Pause: pause, Expected: 2}, peers: []Peer{heard("b", 0)}, noWake: true},
		{name: "woken at the tick that ends the gap", cfg: Config{Pause: pause, Expected: 2}, peers: []Peer{heard("b", wake)},
			woken: true, missing: []string{"b"}},
		{name: "a message that waited in the socket does not count", cfg: Config{Pause: pause, Expected: 2},
			peers: []Peer{heard("b", wake+10*time.Millisecond)}, tick: wake + 4*time.Second, woken: true, missing: []string{"b"}},
		{name: "heard at the settle instant exactly does not count", cfg: Config{Pause: pause, Expected: 2},
			peers: []Peer{heard("b", settled)}, tick: settled + time.Second, woken: true, missing: []string{"b"}},
		{name: "heard after the wake settled: cleared", cfg: Config{Pause: pause, Expected: 2},
			peers: []Peer{heard("b", settled+time.Millisecond)}, tick: settled + time.Second, cleared: true},
		{name: "never heard", cfg: Config{Pause: pause, Expected: 2}, peers: []Peer{{ID: "b"}}, tick: wake + time.Minute,
			woken: true, missing: []string{"b"}},
		{name: "one of two peers heard", cfg: Config{Pause: pause, Expected: 3},
			peers: []Peer{heard("b", settled+time.Second), heard("c", wake-time.Second)}, tick: settled + 2*time.Second,
			woken: true, missing: []string{"c"}},
		{name: "both of two peers heard", cfg: Config{Pause: pause, Expected: 3},
			peers: []Peer{heard("b", settled+time.Second), heard("c", settled+time.Second)}, tick: settled + 2*time.Second, cleared: true},
		{name: "a configured peer the membership no longer lists", cfg: Config{Pause: pause, Expected: 2},
			tick: settled + 2*time.Second, woken: true, missing: []string{"(a configured peer the membership does not list)"}},
		{name: "an extra member of the ClusterId must be heard too", cfg: Config{Pause: pause, Expected: 2},
			peers: []Peer{heard("b", settled+time.Second), {ID: "b2"}}, tick: settled + 2*time.Second, woken: true, missing: []string{"b2"}},
		{name: "alone by configuration", cfg: Config{Pause: pause, Expected: 1, Alone: true}, tick: settled},
		{name: "a single-node set that is not alone (seed list names others)", cfg: Config{Pause: pause, Expected: 1},
			tick: settled + time.Millisecond, cleared: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			f := NewFence(tt.cfg, t0)
			f.Tick(at(time.Second), Observation{})
			obs := Observation{Peers: tt.peers}
			if tt.noWake {
				for d := time.Second; d <= wake; d += 250 * time.Millisecond {
					if c := f.Tick(at(d), obs); c.Woke || f.Woken(at(d)) {
						t.Fatalf("woken at %v without a gap", d)
					}
				}
				return
			}
			if !tt.cfg.Alone && !f.Woken(at(wake)) {
				t.Fatal("not woken before the tick that ends the gap: the gap itself must say so")
			}
			c := f.Tick(at(wake), obs)
			if c.Woke == tt.cfg.Alone || c.Gap != wake-time.Second {
				t.Fatalf("wake tick %+v", c)
			}
			now := at(wake)
			if tt.tick != 0 {
				now = at(tt.tick)
				c = tickUntil(f, at(wake), now, obs)
			}
			if f.Woken(now) != tt.woken || c.Cleared != tt.cleared || !slices.Equal(c.Missing, tt.missing) {
				t.Fatalf("woken %v, change %+v; want woken %v cleared %v missing %v", f.Woken(now), c, tt.woken, tt.cleared, tt.missing)
			}
		})
	}
}

// TestFenceStaysDownWhenAPeerGoesSilentLater: once cleared, a peer that
// goes silent is the failure detector's business, not the fence's; a
// second freeze raises it again.
func TestFenceStaysDownWhenAPeerGoesSilentLater(t *testing.T) {
	f := NewFence(Config{Pause: pause, Expected: 2}, t0)
	f.Tick(at(10*time.Second), Observation{})
	obs := Observation{Peers: []Peer{heard("b", 14*time.Second)}}
	if c := tickUntil(f, at(10*time.Second), at(15*time.Second), obs); !c.Cleared || f.Woken(at(15*time.Second)) {
		t.Fatalf("not cleared: %+v", c)
	}
	for d := 15 * time.Second; d < 30*time.Second; d += 250 * time.Millisecond {
		if c := f.Tick(at(d), obs); c.Woke || f.Woken(at(d)) {
			t.Fatalf("fenced again at %v while the loop ran", d)
		}
	}
	if c := f.Tick(at(40*time.Second), obs); !c.Woke || !f.Woken(at(40*time.Second)) {
		t.Fatalf("a second freeze did not raise the fence: %+v", c)
	}
	if f.WokeAt() != at(40*time.Second) {
		t.Fatalf("woke at %v", f.WokeAt())
	}
}

// tickUntil ticks f every 250 ms after from up to to (the loop running)
// and returns what the ticks changed: Cleared when one cleared.
func tickUntil(f *Fence, from, to time.Time, obs Observation) Change {
	var all Change
	for now := from.Add(250 * time.Millisecond); !now.After(to); now = now.Add(250 * time.Millisecond) {
		c := f.Tick(now, obs)
		all.Woke = all.Woke || c.Woke
		all.Cleared = all.Cleared || c.Cleared
		all.Missing = c.Missing
	}
	return all
}

func TestConfigValidate(t *testing.T) {
	for _, bad := range []Config{{Expected: 2}, {Pause: pause}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestWokenIsALeaf: the rule links the standard library only.
func TestWokenIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "github.com/otopcua/otopcua/cluster/woken" {
		t.Fatalf("woken depends on non-standard packages: %v", got)
	}
}
