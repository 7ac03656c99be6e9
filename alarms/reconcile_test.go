package alarms

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

func TestReconcilerCases(t *testing.T) {
	type step struct {
		op     string // "L" local, "R" remote, "P" promote
		active bool
		want   Outcome
	}
	A, I := true, false
	for _, tc := range []struct {
		name    string
		primary bool // acting as Primary for L and R
		steps   []step
		pending int
		credits int
	}{
		{"secondary ahead: held, then matched in order", false,
			[]step{{"L", A, Hold}, {"L", I, Hold}, {"R", A, Matched}, {"R", I, Matched}}, 0, 0},
		{"secondary behind: credits consumed in order", false,
			[]step{{"R", A, Credited}, {"R", I, Credited}, {"L", A, Matched}, {"L", I, Matched}}, 0, 0},
		{"a lost Primary message: the next one drops the older pending", false,
			[]step{{"L", A, Hold}, {"L", I, Hold}, {"L", A, Hold}, {"R", I, Matched}}, 1, 0},
		{"a Primary change of the other state drops the pending one", false,
			[]step{{"L", A, Hold}, {"R", I, Credited}, {"L", I, Matched}}, 0, 0},
		{"a detection behind a credit of the other state is dropped", false,
			[]step{{"R", I, Credited}, {"L", A, Matched}, {"L", I, Matched}}, 0, 0},
		{"a change the start state took in", false,
			[]step{{"X", A, 0}, {"R", A, Matched}, {"L", I, Hold}, {"R", I, Matched}}, 0, 0},
		{"only the first event after the start", false,
			[]step{{"X", A, 0}, {"R", I, Credited}, {"R", A, Credited}}, 0, 2},
		{"acting Primary publishes and ignores others", true,
			[]step{{"L", A, Publish}, {"R", A, Ignored}, {"L", I, Publish}}, 0, 0},
		{"a credit from before the promotion still silences", false,
			[]step{{"R", A, Credited}, {"P", false, 0}, {"L", A, Matched}}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Reconciler[int]
			for i, s := range tc.steps {
				var got Outcome
				switch s.op {
				case "L":
					got = r.Local(s.active, i, tc.primary, int64(i))
				case "R":
					got = r.Remote(s.active, tc.primary, int64(i))
				case "P":
					r.Promote()
					continue
				case "X":
					r.Reset(s.active)
					continue
				}
				if got != s.want {
					t.Fatalf("step %d %s(%v) = %v, want %v", i, s.op, s.active, got, s.want)
				}
			}
			if r.Pending() != tc.pending || r.Credits() != tc.credits {
				t.Fatalf("pending %d credits %d, want %d %d", r.Pending(), r.Credits(), tc.pending, tc.credits)
			}
		})
	}
}

func TestReconcilerPromoteAndTTL(t *testing.T) {
	r := Reconciler[string]{TTL: 10}
	r.Local(true, "a1", false, 0)
	r.Local(false, "i1", false, 1)
	if got := r.Promote(); !slices.Equal(got, []string{"a1", "i1"}) || !r.InSync() {
		t.Fatalf("Promote = %v, in sync %v", got, r.InSync())
	}
	r.Remote(true, false, 100)
	if r.Local(true, "x", false, 110) != Matched {
		t.Fatal("a credit within TTL was not consumed")
	}
	r.Remote(false, false, 200)
	if r.Local(false, "y", false, 211) != Hold || r.Credits() != 0 {
		t.Fatal("a credit older than TTL was consumed")
	}
	r.Reset(false)
	for i := 0; i < MaxPending+5; i++ {
		r.Local(i%2 == 0, "z", false, 0)
	}
	if r.Pending() != MaxPending {
		t.Fatalf("pending %d, want the bound %d", r.Pending(), MaxPending)
	}
}

// pairRun is one random run of a pair: a sequence of toggles of one alarm
// (active, inactive, active, …) that each node detects with its own delay,
// a Primary P that publishes what it detects — and its state every
// snapEvery — until it dies, and a Secondary S that reconciles and is
// promoted after P died.
type pairRun struct {
	n       int     // toggles; toggle i has state i%2 == 0 (active first)
	missP   []bool  // toggles P never detects (in pairs: a pulse too short for its polls)
	missS   []bool  // toggles S never detects
	toggle  []int64 // time of each toggle
	tP, tS  []int64 // detection times (-1: not detected)
	arrive  []int64 // arrival at S of P's message for toggle i (-1: not published or lost)
	seq     []int   // position of that message in P's stream
	final   []bool  // P's message for toggle i was lost in flight when P died
	snaps   []snap  // P's state snapshots that reached S
	died    int64   // P's death
	promote int64   // S's promotion
	ttl     int64
}

type snap struct {
	at     int64 // arrival at S
	seq    int   // position in P's stream
	active bool  // P's state when it sent it
}

const (
	maxDetect = 40  // longest detection delay after a toggle
	maxNet    = 30  // longest delivery delay
	snapEvery = 100 // P's snapshot period
	// ttl exceeds the longest time a legitimate credit or pending
	// detection waits for its match: maxDetect + maxNet.
	ttl = maxDetect + maxNet + 1
	// quiet is a rest long enough for the pair to heal after a missed
	// pulse: credits expire (ttl) and a snapshot settles pending
	// detections (snapEvery + maxNet later).
	quiet = maxDetect + ttl + snapEvery + maxNet + 1
)

// drawRun draws a run. withMisses lets each node miss pulses; midLoss lets
// single messages of P vanish while P is alive (never two in a row).
func drawRun(rt *rapid.T, withMisses, midLoss bool) *pairRun {
	r := &pairRun{n: rapid.IntRange(0, 24).Draw(rt, "toggles"), ttl: ttl}
	r.missP, r.missS = make([]bool, r.n), make([]bool, r.n)
	if withMisses {
		for i := 0; i+1 < r.n; i++ {
			if r.missP[i] || r.missS[i] {
				continue
			}
			// a missed pulse: toggles i and i+1
			switch rapid.IntRange(0, 7).Draw(rt, "miss") {
			case 0:
				r.missP[i], r.missP[i+1] = true, true
			case 1:
				r.missS[i], r.missS[i+1] = true, true
			}
		}
	}
	tau := make([]int64, r.n)
	var last int64
	for i := range tau {
		gap := rapid.IntRange(1, 60).Draw(rt, "gap")
		if gap > 50 {
			gap = quiet // now and then the alarm rests
		}
		last += int64(gap)
		tau[i] = last
	}
	r.toggle = tau
	detect := func(miss []bool, label string) []int64 {
		out := make([]int64, r.n)
		var prev int64
		for i := range out {
			d := tau[i] + int64(rapid.IntRange(0, maxDetect).Draw(rt, label))
			prev = max(prev, d)
			out[i] = prev
			if miss[i] {
				out[i] = -1
			}
		}
		return out
	}
	r.tP, r.tS = detect(r.missP, "delayP"), detect(r.missS, "delayS")
	r.died = int64(rapid.IntRange(0, int(last)+maxDetect+10).Draw(rt, "died"))

	// P's outgoing stream in send order: its alerts and its snapshots.
	type out struct {
		at     int64
		idx    int // toggle, or -1 for a snapshot
		active bool
	}
	var stream []out
	for i := 0; i < r.n; i++ {
		if r.tP[i] >= 0 && r.tP[i] < r.died {
			stream = append(stream, out{r.tP[i], i, i%2 == 0})
		}
	}
	for at := int64(snapEvery); at < r.died; at += snapEvery {
		active := false // P's state: its last detection before at
		for i := 0; i < r.n; i++ {
			if r.tP[i] >= 0 && r.tP[i] <= at {
				active = i%2 == 0
			}
		}
		stream = append(stream, out{at, -1, active})
	}
	sort.SliceStable(stream, func(a, b int) bool { return stream[a].at < stream[b].at })
	arrive := make([]int64, len(stream))
	var prev int64
	var alerts []int // positions in stream
	for j, o := range stream {
		prev = max(prev, o.at+int64(rapid.IntRange(0, maxNet).Draw(rt, "net")))
		arrive[j] = prev
		if o.idx >= 0 {
			alerts = append(alerts, j)
		}
	}
	if midLoss {
		for n, j := range alerts {
			if (n == 0 || arrive[alerts[n-1]] >= 0) && rapid.IntRange(0, 4).Draw(rt, "lose") == 0 {
				arrive[j] = -1
			}
		}
	}
	// The last k alerts P sent before it died are lost in flight, and
	// everything it sent after the first of them.
	r.final = make([]bool, r.n)
	if k := rapid.IntRange(0, len(alerts)).Draw(rt, "lostLast"); k > 0 {
		for j := alerts[len(alerts)-k]; j < len(stream); j++ {
			arrive[j] = -1
			if stream[j].idx >= 0 {
				r.final[stream[j].idx] = true
			}
		}
	}
	r.arrive, r.seq = make([]int64, r.n), make([]int, r.n)
	for i := range r.arrive {
		r.arrive[i] = -1
	}
	for j, o := range stream {
		switch {
		case arrive[j] < 0:
		case o.idx >= 0:
			r.arrive[o.idx], r.seq[o.idx] = arrive[j], j
		default:
			r.snaps = append(r.snaps, snap{arrive[j], j, o.active})
		}
	}
	// Every message P sent is delivered or lost before S is promoted (a
	// promotion waits for the failure detector, seconds, not milliseconds).
	r.promote = r.died + maxNet + 1 + int64(rapid.IntRange(0, 60).Draw(rt, "hold"))
	return r
}

type simEvent struct {
	at     int64
	kind   int // 0 local detection, 1 remote arrival, 2 promotion, 3 snapshot
	idx    int
	seq    int  // order within its source: the toggle for S, the stream position for P
	active bool // of a snapshot
}

// interleave orders events by time; at one instant it takes the next event
// of a source drawn at random, so that S's own detections keep their order
// and so does P's stream (alerts and snapshots: one publisher).
func interleave(rt *rapid.T, evs []simEvent) []simEvent {
	src := func(e simEvent) int {
		switch e.kind {
		case 0:
			return 0
		case 2:
			return 2
		}
		return 1
	}
	var queues [3][]simEvent
	for _, e := range evs {
		queues[src(e)] = append(queues[src(e)], e)
	}
	for _, q := range queues {
		sort.SliceStable(q, func(a, b int) bool {
			if q[a].at != q[b].at {
				return q[a].at < q[b].at
			}
			return q[a].seq < q[b].seq
		})
	}
	out := make([]simEvent, 0, len(evs))
	for len(out) < len(evs) {
		var first []int
		for k, q := range queues {
			switch {
			case len(q) == 0:
			case len(first) == 0 || q[0].at < queues[first[0]][0].at:
				first = []int{k}
			case q[0].at == queues[first[0]][0].at:
				first = append(first, k)
			}
		}
		k := first[0]
		if len(first) > 1 {
			k = first[rapid.IntRange(0, len(first)-1).Draw(rt, "tie")]
		}
		out = append(out, queues[k][0])
		queues[k] = queues[k][1:]
	}
	return out
}

// Repaired is a publication by Repair of state active (not a toggle's):
// repaired(true) and repaired(false) are negative.
func repaired(active bool) int {
	if active {
		return -2
	}
	return -1
}

// secondary replays S's events in time order (ties in a random order) and
// returns the toggles S published, in publication order (Repair's as
// repaired(state)), and S's last state. After the last event S ticks once
// more, TTL later.
func (r *pairRun) secondary(rt *rapid.T) ([]int, bool) {
	var evs []simEvent
	for i := 0; i < r.n; i++ {
		if r.tS[i] >= 0 {
			evs = append(evs, simEvent{at: r.tS[i], kind: 0, idx: i, seq: i})
		}
		if r.arrive[i] >= 0 {
			evs = append(evs, simEvent{at: r.arrive[i], kind: 1, idx: i, seq: r.seq[i]})
		}
	}
	for _, s := range r.snaps {
		evs = append(evs, simEvent{at: s.at, kind: 3, seq: s.seq, active: s.active})
	}
	evs = append(evs, simEvent{at: r.promote, kind: 2})
	evs = interleave(rt, evs)
	evs = append(evs, simEvent{at: evs[len(evs)-1].at + r.ttl + 1, kind: 4})
	rec := Reconciler[int]{TTL: r.ttl}
	primary, state := false, false
	var out []int
	for _, e := range evs {
		switch e.kind {
		case 0:
			state = e.idx%2 == 0
			if rec.Local(state, e.idx, primary, e.at) == Publish {
				out = append(out, e.idx)
			}
		case 1:
			rec.Remote(e.idx%2 == 0, primary, e.at)
		case 2:
			primary = true
			out = append(out, rec.Promote()...)
		case 3:
			if !primary {
				rec.Settle(e.active, state, e.at)
			}
		}
		if rec.Repair(state, primary, e.at) {
			out = append(out, repaired(state))
		}
	}
	return out, state
}

// delivered are the toggles of P's messages that reached S.
func (r *pairRun) delivered() []int {
	var out []int
	for i, a := range r.arrive {
		if a >= 0 {
			out = append(out, i)
		}
	}
	return out
}

// TestReconcileExactlyOnce is the exactly-once property: when each node
// detects every toggle, the transitions P delivered before it died and the
// transitions S published are the toggle sequence, each toggle once —
// whatever the delays, the interleaving, the moment P dies and how many of
// its last messages were lost.
func TestReconcileExactlyOnce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := drawRun(rt, false, false)
		pub, _ := r.secondary(rt) // a Repair would show as a negative entry
		got := append(r.delivered(), pub...)
		sort.Ints(got)
		want := make([]int, r.n)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) {
			rt.Fatalf("published %v, want every toggle once %v\nrun %+v", got, want, r)
		}
	})
}

// TestReconcileLossWhileAlive: messages of a live Primary lost on the way
// (delivered to this node or not) never make S publish a transition P
// delivered; what goes unpublished is among the messages lost (the
// Primary's own node historized them: it receives its own publications).
func TestReconcileLossWhileAlive(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := drawRun(rt, false, true)
		delivered := r.delivered()
		pub, _ := r.secondary(rt)
		seen := map[int]int{}
		for _, i := range append(slices.Clone(delivered), pub...) {
			seen[i]++
		}
		for i := 0; i < r.n; i++ {
			switch {
			case seen[i] > 1:
				rt.Fatalf("toggle %d published twice (delivered %v, S published %v)\n%s", i, delivered, pub, r)
			case seen[i] == 0 && !r.lostMid(i):
				rt.Fatalf("toggle %d neither delivered nor published though not lost (delivered %v, S published %v)", i, delivered, pub)
			}
		}
	})
}

// TestReconcileMissedPulses is the invariant when a node misses a toggle
// — a pulse too short for its polls, so it misses two (going active and
// back) — or when messages of a live Primary are lost:
//
//  1. the published sequence ends in the survivor's state: the last
//     transition P delivered or S published has S's final state (S
//     publishes its state when it differs once its credits are spent or
//     expired, Reconciler.Repair);
//  2. after the alarm rested for `quiet` (TTL, a snapshot period and a
//     delivery) following the last missed pulse, every toggle both nodes
//     detect is published exactly once again;
//  3. until then, toggles near a missed pulse may be published twice or
//     not at all: at most two per missed pulse or lost message.
func TestReconcileMissedPulses(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := drawRun(rt, true, rapid.Bool().Draw(rt, "midLoss"))
		delivered := r.delivered()
		pub, state := r.secondary(rt)
		count := map[int]int{}
		for _, i := range append(slices.Clone(delivered), pub...) {
			count[i]++
		}
		merged := append(slices.Clone(delivered), pub...)
		last := false
		if len(merged) > 0 {
			x := merged[len(merged)-1]
			last = x == repaired(true) || x >= 0 && x%2 == 0
		}
		if last != state {
			rt.Fatalf("the published sequence ends %v, S is %v (delivered %v, S published %v)\n%s", last, state, delivered, pub, r)
		}
		healed := 0 // first toggle after a rest following the last anomaly
		anomalies := 0
		for i := 0; i < r.n; i++ {
			if r.missP[i] || r.missS[i] || r.lostMid(i) {
				anomalies++
				healed = r.n
				for g := i + 1; g < r.n; g++ {
					if r.toggle[g]-r.toggle[g-1] >= quiet {
						healed = g
						break
					}
				}
			}
		}
		wrong := 0
		for i := 0; i < r.n; i++ {
			if r.missP[i] || r.missS[i] {
				continue
			}
			if c := count[i]; c != 1 && !(c == 0 && r.lostMid(i)) {
				wrong++
				if i >= healed {
					rt.Fatalf("toggle %d, after the pair healed at %d, published %d times (delivered %v, S published %v)\n%s",
						i, healed, c, delivered, pub, r)
				}
			}
		}
		if wrong > 2*anomalies {
			rt.Fatalf("%d toggles published wrongly for %d anomalies (delivered %v, S published %v)\n%s", wrong, anomalies, delivered, pub, r)
		}
	})
}

func (r *pairRun) String() string {
	return fmt.Sprintf("n=%d missP=%v missS=%v tP=%v tS=%v arrive=%v died=%d promote=%d", r.n, r.missP, r.missS, r.tP, r.tS, r.arrive, r.died, r.promote)
}

// lostMid reports whether P's message for toggle i was lost while P lived
// on (its own node historized it).
func (r *pairRun) lostMid(i int) bool {
	return r.tP[i] >= 0 && r.tP[i] < r.died && r.arrive[i] < 0 && !r.final[i]
}
