package keeper

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs testdata/*.txt: the keepers of a set of nodes on one
// simulated clock, with heartbeats between them, a shared lease store and
// the commands below. Regenerate the expected output with -rewrite and
// read the diff.
//
//	nodes a b [c] [pause=2s] [heartbeat=1s] [ttl=6s] [hold=2s] [expected=N] [absent=(b)]
//	role a=primary b=secondary   what each node's role view says
//	tick 3s [silent]             run the clock (keeper ticks every 250 ms)
//	freeze a / thaw a / kill a   SIGSTOP, SIGCONT, SIGKILL
//	partition a|b / heal         cut the links between groups / restore them
//	join b                       b (absent) becomes an Up member seen by all
//	leave b                      b leaves gracefully: seen Leaving by all, still heartbeating
//	removed b                    b's exit confirmed: gone from every view, its process ended
//	down a by=b [proven]         b's membership downs a (proven: fast path)
//	core-acquire b / core-release b / fast-path b dead=a
//	store down|up|cut=a|mend=a|latency=300ms|leader-change
//	store                        prints the store's holder
//	licence [a]                  prints each running node's licence now
//
// The simulation: node i heartbeats every heartbeat at i×100 ms past the
// interval to every peer it holds a member and can reach; a frozen node
// neither ticks nor sends, and hears what it was sent when it thaws (so a
// woken process finds its peers "heard just now"). A node's failure
// detector marks a peer unreachable after pause + heartbeat of silence.
// The store applies a call when its latency has passed and counts expiry
// on the scenario clock.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := &env{}
		datadriven.RunTest(t, path, e.handle)
	})
}

const (
	tickEvery = 250 * time.Millisecond
	simStep   = 10 * time.Millisecond
)

var epoch0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type env struct {
	now   time.Duration // since epoch0
	nodes []*node
	cfg   Config
	cut   [][]string // partition groups; nil when whole
	store store
	calls []call
	out   *strings.Builder
}

type node struct {
	name      string
	idx       int
	k         *Keeper
	primary   bool
	member    bool // an Up driver member (of its own view)
	leaving   bool // leaving gracefully: its peers see it Leaving
	removed   bool // gone from every view after its graceful leave
	frozen    bool
	dead      bool
	members   map[string]bool // peers it holds Up driver members
	heard     map[string]time.Duration
	reachable map[string]bool
	queued    []string // heartbeats that arrived while frozen, by sender
}

type store struct {
	holder  string
	epoch   uint64
	expires time.Duration
	down    bool
	cut     map[string]bool
	latency time.Duration
}

type call struct {
	n   *node
	eff Effect
	due time.Duration
}

func (e *env) at() time.Time { return epoch0.Add(e.now) }

func (e *env) handle(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	e.out = &out
	switch d.Cmd {
	case "nodes":
		e.addNodes(t, d)
	case "role":
		for _, a := range d.CmdArgs {
			e.node(t, d, a.Key).primary = a.Vals[0] == "primary"
		}
	case "tick":
		dur, err := time.ParseDuration(names(d)[0])
		if err != nil {
			d.Fatalf(t, "tick: %v", err)
		}
		e.run(dur)
	case "freeze", "thaw", "kill":
		for _, name := range names(d) {
			e.process(t, d, e.node(t, d, name))
		}
	case "partition":
		e.cut = nil
		for _, g := range strings.Split(d.CmdArgs[0].Key, "|") {
			e.cut = append(e.cut, strings.Split(g, ","))
		}
	case "heal":
		e.cut = nil
	case "join":
		e.join(e.node(t, d, names(d)[0]))
	case "leave":
		n := e.node(t, d, names(d)[0])
		n.leaving = true
		e.logf(n, "leaving")
	case "removed":
		e.remove(e.node(t, d, names(d)[0]))
	case "down":
		e.down(t, d)
	case "core-acquire":
		n := e.node(t, d, names(d)[0])
		e.effects(n, n.k.Step(e.at(), CoreAcquire{}))
	case "core-release":
		n := e.node(t, d, names(d)[0])
		e.effects(n, n.k.Step(e.at(), CoreRelease{}))
	case "fast-path":
		var dead string
		d.ScanArgs(t, "dead", &dead)
		n := e.node(t, d, names(d)[0])
		e.effects(n, n.k.Step(e.at(), FastPath{Dead: dead}))
	case "store":
		e.storeCmd(t, d)
	case "licence":
		e.licence(names(d))
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	e.answer() // calls without latency are answered at once
	if d.HasArg("silent") {
		out.Reset()
	}
	return out.String()
}

// names are the bare arguments (no value) of a command.
func names(d *datadriven.TestData) []string {
	var ns []string
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			ns = append(ns, a.Key)
		}
	}
	return ns
}

func durArg(t *testing.T, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	if !d.HasArg(key) {
		return def
	}
	var s string
	d.ScanArgs(t, key, &s)
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return v
}

func (e *env) addNodes(t *testing.T, d *datadriven.TestData) {
	ns := names(d)
	e.cfg = Config{
		Expected: len(ns), Heartbeat: durArg(t, d, "heartbeat", time.Second), Pause: durArg(t, d, "pause", 2*time.Second),
		Hold: durArg(t, d, "hold", 2*time.Second), TTL: durArg(t, d, "ttl", 6*time.Second),
	}
	if d.HasArg("expected") {
		d.ScanArgs(t, "expected", &e.cfg.Expected)
	}
	var absent []string
	for _, a := range d.CmdArgs {
		if a.Key == "absent" {
			absent = a.Vals
		}
	}
	e.store.cut = map[string]bool{}
	for i, name := range ns {
		cfg := e.cfg
		cfg.Owner = name
		if err := cfg.Validate(); err != nil {
			d.Fatalf(t, "%v", err)
		}
		n := &node{name: name, idx: i, k: New(cfg, e.at()), member: !slices.Contains(absent, name),
			members: map[string]bool{}, heard: map[string]time.Duration{}, reachable: map[string]bool{}}
		n.k.Step(e.at(), Follow{})
		e.nodes = append(e.nodes, n)
	}
	for _, n := range e.nodes {
		for _, p := range e.nodes {
			if p != n && n.member && p.member {
				n.members[p.name], n.heard[p.name], n.reachable[p.name] = true, e.now, true
			}
		}
	}
}

func (e *env) node(t *testing.T, d *datadriven.TestData, name string) *node {
	for _, n := range e.nodes {
		if n.name == name {
			return n
		}
	}
	d.Fatalf(t, "no node %q", name)
	return nil
}

func (e *env) logf(n *node, format string, args ...any) {
	name := "store"
	if n != nil {
		name = n.name
	}
	fmt.Fprintf(e.out, "%.2fs %s: %s\n", e.now.Seconds(), name, fmt.Sprintf(format, args...))
}

func (e *env) process(t *testing.T, d *datadriven.TestData, n *node) {
	switch d.Cmd {
	case "freeze":
		n.frozen = true
		e.logf(n, "frozen")
	case "thaw":
		n.frozen = false
		e.logf(n, "thawed")
		for _, from := range n.queued {
			n.heard[from] = e.now
		}
		n.queued = nil
	case "kill":
		n.dead = true
		e.logf(n, "killed")
	}
}

// connected reports whether a message from a reaches b (the partition).
func (e *env) connected(a, b string) bool {
	if e.cut == nil {
		return true
	}
	for _, g := range e.cut {
		if slices.Contains(g, a) && slices.Contains(g, b) {
			return true
		}
	}
	return false
}

// remove ends a leaver: its peers drop it from their views, its process
// exits.
func (e *env) remove(r *node) {
	r.removed, r.dead, r.member = true, true, false
	for _, n := range e.nodes {
		delete(n.members, r.name)
	}
	e.logf(r, "removed")
}

func (e *env) join(j *node) {
	if j.removed { // a new process: a new keeper
		cfg := e.cfg
		cfg.Owner = j.name
		j.k = New(cfg, e.at())
		j.k.Step(e.at(), Follow{})
	}
	j.member, j.leaving, j.removed, j.dead = true, false, false, false
	for _, n := range e.nodes {
		if n != j && !n.dead {
			n.members[j.name], n.heard[j.name], n.reachable[j.name] = true, e.now, true
			j.members[n.name], j.heard[n.name], j.reachable[n.name] = true, e.now, true
		}
	}
	e.logf(j, "joined: Up")
}

func (e *env) down(t *testing.T, d *datadriven.TestData) {
	var by string
	d.ScanArgs(t, "by", &by)
	victim, b := names(d)[0], e.node(t, d, by)
	delete(b.members, victim)
	e.logf(b, "downed %s", victim)
	e.effects(b, b.k.Step(e.at(), Downed{Peer: victim, Proven: d.HasArg("proven")}))
}

func (e *env) storeCmd(t *testing.T, d *datadriven.TestData) {
	if len(d.CmdArgs) == 0 {
		if h := e.store.live(e.now); h != "" {
			e.logf(nil, "held by %s (epoch %d), %.2fs left", h, e.store.epoch, (e.store.expires - e.now).Seconds())
		} else {
			e.logf(nil, "free (epoch %d)", e.store.epoch)
		}
		return
	}
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "down":
			e.store.down = true
		case "up":
			e.store.down = false
		case "cut":
			e.store.cut[a.Vals[0]] = true
		case "mend":
			delete(e.store.cut, a.Vals[0])
		case "latency":
			e.store.latency = durArg(t, d, "latency", 0)
		case "leader-change":
			// etcd's new leader gives every live lease a fresh TTL.
			if h := e.store.live(e.now); h != "" {
				e.store.expires = e.now + e.cfg.TTL
				e.logf(nil, "leader change: %s's lease extended to %.2fs", h, e.store.expires.Seconds())
			}
		default:
			d.Fatalf(t, "store: unknown argument %q", a.Key)
		}
	}
}

func (s *store) live(now time.Duration) string {
	if s.holder == "" || now >= s.expires {
		return ""
	}
	return s.holder
}

func (e *env) licence(only []string) {
	for _, n := range e.nodes {
		if n.dead || n.frozen || (len(only) > 0 && !slices.Contains(only, n.name)) {
			continue
		}
		// As the host does: a fresh observation, then the pure query.
		e.effects(n, n.k.Step(e.at(), Observed{Observation: e.observe(n)}))
		holder := "none"
		if h := n.k.Holder(); h != "" {
			holder = h
		}
		fmt.Fprintf(e.out, "%s: %v; last holder seen: %s\n", n.name, n.k.Licence(e.at()), holder)
	}
}

func (e *env) observe(n *node) Observation {
	obs := Observation{Primary: n.primary, Self: n.member}
	for _, p := range e.nodes {
		if p == n || p.removed {
			continue
		}
		h, ok := n.heard[p.name]
		obs.Peers = append(obs.Peers, Peer{ID: p.name, Member: n.members[p.name] && !p.leaving, Leaving: n.members[p.name] && p.leaving,
			Reachable: n.reachable[p.name], Heard: ok, LastHeard: epoch0.Add(h)})
	}
	return obs
}

// run advances the clock by dur in simulation steps: heartbeats, then
// store answers, then keeper ticks (nodes in order).
func (e *env) run(dur time.Duration) {
	end := e.now + dur
	for e.now < end {
		e.now += simStep
		e.heartbeats()
		e.answer()
		if e.now%tickEvery == 0 {
			for _, n := range e.nodes {
				if !n.dead && !n.frozen {
					e.detect(n)
					e.effects(n, n.k.Tick(e.at(), e.observe(n)))
				}
			}
			e.answer() // calls without latency are answered at once
		}
	}
}

func (e *env) heartbeats() {
	for _, s := range e.nodes {
		if s.dead || s.frozen || (e.now-time.Duration(s.idx)*100*time.Millisecond)%e.cfg.Heartbeat != 0 {
			continue
		}
		for _, r := range e.nodes {
			if r == s || r.dead || !s.members[r.name] || !e.connected(s.name, r.name) {
				continue
			}
			if r.frozen {
				r.queued = append(r.queued, s.name)
			} else {
				r.heard[s.name] = e.now
			}
		}
	}
}

// detect is n's failure detector (it runs only while n runs).
func (e *env) detect(n *node) {
	for _, p := range slices.Sorted(maps.Keys(n.heard)) {
		at := n.heard[p]
		reach := e.now-at <= e.cfg.Pause+e.cfg.Heartbeat
		if reach != n.reachable[p] && n.members[p] {
			if reach {
				e.logf(n, "%s reachable again", p)
			} else {
				e.logf(n, "%s unreachable", p)
			}
		}
		n.reachable[p] = reach
	}
}

// effects runs a keeper's effects: store calls are queued for the store.
func (e *env) effects(n *node, effs []Effect) {
	for _, eff := range effs {
		switch eff := eff.(type) {
		case Acquire:
			e.logf(n, "acquire (%v)", eff.Purpose)
			e.calls = append(e.calls, call{n: n, eff: eff, due: e.now + e.store.latency})
		case Release:
			e.logf(n, "release")
			e.calls = append(e.calls, call{n: n, eff: eff, due: e.now + e.store.latency})
		case LicenceChanged:
			e.logf(n, "licence: %v", eff.Licence)
		case DownSelf:
			e.logf(n, "downs itself: %s holds the lease and the set is split", eff.Holder)
		case Note:
			e.logf(n, "%v", eff)
		}
	}
}

// answer applies the store calls that are due and steps their results.
func (e *env) answer() {
	var later []call
	due := e.calls
	e.calls = nil
	for _, c := range due {
		if c.due > e.now || c.n.frozen {
			later = append(later, c)
			continue
		}
		if c.n.dead {
			continue
		}
		var msg Message
		switch eff := c.eff.(type) {
		case Acquire:
			msg = e.storeAcquire(c.n, eff)
		case Release:
			ok := !e.store.down && !e.store.cut[c.n.name]
			if ok && e.store.holder == c.n.name {
				e.store.holder, e.store.expires = "", 0
			}
			e.logf(c.n, "released: %v", ok)
			msg = ReleaseResult{OK: ok}
		}
		e.effects(c.n, c.n.k.Step(e.at(), msg))
	}
	e.calls = append(later, e.calls...)
}

func (e *env) storeAcquire(n *node, a Acquire) AcquireResult {
	r := AcquireResult{Purpose: a.Purpose, Start: a.Start}
	if e.store.down || e.store.cut[n.name] {
		r.Outcome, r.Err = Failed, "store unreachable"
		e.logf(n, "failed (%v): store unreachable", a.Purpose)
		return r
	}
	if h := e.store.live(e.now); h != "" && h != n.name {
		r.Outcome, r.Holder, r.Epoch = Held, h, e.store.epoch
		e.logf(n, "refused (%v): held by %s until %.2fs", a.Purpose, h, e.store.expires.Seconds())
		return r
	}
	if e.store.holder != n.name {
		e.store.epoch++
	}
	e.store.holder, e.store.expires = n.name, e.now+e.cfg.TTL
	r.Outcome, r.Holder, r.Epoch = Granted, n.name, e.store.epoch
	e.logf(n, "granted (%v): epoch %d until %.2fs", a.Purpose, e.store.epoch, e.store.expires.Seconds())
	return r
}
