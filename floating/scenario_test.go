package floating

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios runs testdata/scenarios/*.txt: the members of one ClusterId
// on one simulated stream clock (the Config DB server's), each writing its
// heartbeat to the shared stream, and Decide asked for any of them.
// Regenerate the expected output with -rewrite and read the diff.
//
//	members a b [ttl=3s] [hold=2s] [interval=1s] [licence] [auto=off]
//	primary b [view=a]         b becomes Primary (the epoch moves); view=a: only a's view says so
//	stream-tick 2s             run the stream clock; live members heartbeat every interval
//	run 5s                     as stream-tick, and every live member decides and acts each
//	                           100 ms; a line per change of a member's decision
//	heartbeat a [claims=true]  one heartbeat of a now (claims: defaults to whether a holds it)
//	skew a +10s                a's wall clock runs 10 s ahead (its EmittedAt)
//	freeze a / thaw a / kill a SIGSTOP, SIGCONT, SIGKILL (kill: proven gone, the address stays)
//	drain a / undrain a / healthy a=false / licence a lost|granted
//	stall / resume             the stream stops (and starts) observing heartbeats
//	observe holder=a|none|foreign:MAC   who the network shows holding the address
//	decide b [apply]           b's decision now (apply: b's executor runs it)
//	stream / skews             the projection: last heartbeats, EmittedAt − ObservedAt
//
// Member i heartbeats at i×10 ms past each interval. The network has one
// holder: a seize or reassign makes the decider the holder, a release
// leaves nobody. Every command also runs on a twin whose members' clocks
// are ±10 s off (and which ignores skew commands); every output but skews
// must be the same: the members' clocks never enter a decision.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		e, twin := &env{}, &env{twin: true}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := e.handle(t, d)
			if tw := twin.handle(t, d); d.Cmd != "skews" && tw != out {
				t.Fatalf("%s: %s: members' clock skew changed the outcome:\nunskewed:\n%s\nskewed ±10s:\n%s", d.Pos, d.Cmd, out, tw)
			}
			return out
		})
	})
}

var t0 = time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)

const simStep = 10 * time.Millisecond

type env struct {
	twin     bool
	now      time.Duration // stream time since t0
	p        Params
	interval time.Duration
	members  []*simMember
	primary  string
	// successor is the member the election picks after the Primary
	// ("" none): the target of a planned hand-over.
	successor string
	epoch     uint64
	holder    string // "", a member, or "foreign:ID"
	stalled   bool
	stream    *Stream
	out       *strings.Builder
}

type simMember struct {
	name                           string
	idx                            int
	views                          string // override of who is Primary in its own view ("" none)
	viewSet                        bool
	draining, unhealthy, unlicence bool
	frozen, gone                   bool
	skew                           time.Duration
	seq                            uint64
	last                           string // its last printed decision (run)
}

func (e *env) at() time.Time { return t0.Add(e.now) }

func (e *env) handle(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	e.out = &out
	switch d.Cmd {
	case "members": // a new run from scratch
		*e = env{twin: e.twin, out: &out}
		e.addMembers(t, d)
	case "primary":
		e.setPrimary(t, d)
	case "successor":
		e.successor = names(d)[0]
	case "stream-tick", "run":
		e.tick(durOf(t, d, names(d)[0]), d.Cmd == "run")
	case "heartbeat":
		e.heartbeatCmd(t, d)
	case "skew":
		e.skewCmd(t, d)
	case "freeze", "thaw", "kill", "drain", "undrain":
		e.process(t, d)
	case "healthy":
		for _, a := range d.CmdArgs {
			e.member(t, d, a.Key).unhealthy = a.Vals[0] == "false"
		}
	case "licence":
		e.member(t, d, names(d)[0]).unlicence = names(d)[1] == "lost"
	case "stall", "resume":
		e.stalled = d.Cmd == "stall"
	case "observe":
		e.observeCmd(t, d)
	case "decide":
		m := e.member(t, d, names(d)[0])
		dec := e.decide(m)
		e.printDecision(m, dec)
		if d.HasArg("apply") {
			e.apply(m, dec)
		}
	case "stream":
		e.printStream()
	case "skews":
		e.printSkews()
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
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

func durOf(t *testing.T, d *datadriven.TestData, s string) time.Duration {
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s: %v", d.Cmd, err)
	}
	return v
}

func durArg(t *testing.T, d *datadriven.TestData, key string, def time.Duration) time.Duration {
	if !d.HasArg(key) {
		return def
	}
	var s string
	d.ScanArgs(t, key, &s)
	return durOf(t, d, s)
}

func (e *env) member(t *testing.T, d *datadriven.TestData, name string) *simMember {
	for _, m := range e.members {
		if m.name == name {
			return m
		}
	}
	d.Fatalf(t, "no member %q", name)
	return nil
}

func (e *env) addMembers(t *testing.T, d *datadriven.TestData) {
	e.p = Params{
		AutoFailover:    true,
		HeartbeatTTL:    durArg(t, d, "ttl", 3*time.Second),
		PromotionHold:   durArg(t, d, "hold", 2*time.Second),
		LicenceRequired: d.HasArg("licence"),
	}
	if a, ok := d.Arg("auto"); ok && a.Vals[0] == "off" {
		e.p.AutoFailover = false
	}
	var ns []string
	for _, n := range names(d) {
		if n != "licence" {
			ns = append(ns, n)
		}
	}
	e.start(ns, durArg(t, d, "interval", time.Second), nil)
}

// start makes the members ns, heartbeating every interval. skew gives
// member i's clock offset (nil: none; the twin's are ±10 s).
func (e *env) start(ns []string, interval time.Duration, skew func(i int) time.Duration) {
	e.interval = interval
	e.stream = NewStream("c1")
	if skew == nil && e.twin { // the twin's clocks: +10 s, −10 s, +10 s, …
		skew = func(i int) time.Duration { return 10 * time.Second * time.Duration(1-2*(i%2)) }
	}
	for i, n := range ns {
		m := &simMember{name: n, idx: i}
		if skew != nil {
			m.skew = skew(i)
		}
		e.members = append(e.members, m)
	}
}

func (e *env) setPrimary(t *testing.T, d *datadriven.TestData) {
	name := names(d)[0]
	if name == "none" {
		name = ""
	} else {
		e.member(t, d, name)
	}
	if a, ok := d.Arg("view"); ok {
		m := e.member(t, d, a.Vals[0])
		m.views, m.viewSet = name, true
		return
	}
	if name != e.primary {
		e.primary = name
		e.epoch++
	}
	fmt.Fprintf(e.out, "primary %s, epoch %d\n", orNone(name), e.epoch)
}

func (e *env) skewCmd(t *testing.T, d *datadriven.TestData) {
	m := e.member(t, d, names(d)[0])
	if !e.twin {
		m.skew = durOf(t, d, strings.TrimPrefix(names(d)[1], "+"))
	}
}

func (e *env) process(t *testing.T, d *datadriven.TestData) {
	for _, n := range names(d) {
		m := e.member(t, d, n)
		switch d.Cmd {
		case "freeze":
			m.frozen = true
		case "thaw":
			m.frozen = false
		case "kill":
			m.gone = true
		case "drain", "undrain":
			m.draining = d.Cmd == "drain"
		}
	}
}

func (e *env) observeCmd(t *testing.T, d *datadriven.TestData) {
	var h string
	d.ScanArgs(t, "holder", &h)
	switch {
	case h == "none":
		h = ""
	case strings.HasPrefix(h, "foreign:"):
	default:
		e.member(t, d, h)
	}
	e.holder = h
}

func (e *env) heartbeatCmd(t *testing.T, d *datadriven.TestData) {
	m := e.member(t, d, names(d)[0])
	claims := e.holder == m.name
	if a, ok := d.Arg("claims"); ok {
		v, err := strconv.ParseBool(a.Vals[0])
		if err != nil {
			d.Fatalf(t, "claims: %v", err)
		}
		claims = v
	}
	e.beat(m, claims)
}

// beat is m's heartbeat row, stamped by the stream's clock (unless the
// stream is stalled: the row is never observed).
func (e *env) beat(m *simMember, claims bool) bool {
	if e.stalled {
		return false
	}
	m.seq++
	e.stream.Observe(Heartbeat{ClusterID: "c1", Node: m.name, Seq: m.seq, EmittedAt: e.at().Add(m.skew),
		ObservedAt: e.at(), Claims: claims, Epoch: e.epoch, MAC: "mac-" + m.name})
	return true
}

func (e *env) live(m *simMember) bool { return !m.frozen && !m.gone }

// tick runs the stream clock by dur in simStep steps.
func (e *env) tick(dur time.Duration, decide bool) {
	for end := e.now + dur; e.now < end; {
		e.now += simStep
		for _, m := range e.members {
			if e.live(m) && (e.now-time.Duration(m.idx)*simStep)%e.interval == 0 {
				e.beat(m, e.holder == m.name)
			}
		}
		if decide && e.now%(100*time.Millisecond) == 0 {
			e.decideAll()
		}
	}
}

// decideAll: every live member decides and acts; a line for each change.
func (e *env) decideAll() {
	for _, m := range e.members {
		if !e.live(m) {
			continue
		}
		dec := e.decide(m)
		line := fmt.Sprintf("%s owner=%s verb=%s", m.name, orNone(dec.Owner), dec.Verb)
		if dec.From != "" {
			line += " from=" + dec.From
		}
		if line != m.last || dec.Verb == VerbSeize || dec.Verb == VerbReassign || dec.Verb == VerbRelease {
			fmt.Fprintf(e.out, "%s %s epoch=%d\n  %s\n", clock(e.at()), line, dec.Epoch, dec.Reason)
			m.last = line
		}
		e.apply(m, dec)
	}
}

func (e *env) view(m *simMember) View {
	v := View{Self: m.name, StreamMax: e.stream.Max(), Epoch: e.epoch, Holder: e.observation(m)}
	primary := e.primary
	if m.viewSet {
		primary = m.views
	}
	for _, o := range e.members {
		v.Members = append(v.Members, Member{Node: o.name, Primary: o.name == primary, Draining: o.draining,
			Healthy: !o.unhealthy, Licensed: !o.unlicence, Gone: o.gone, Successor: o.name == e.successor})
	}
	e.stream.Fill(v.Members)
	return v
}

func (e *env) observation(m *simMember) Observation {
	switch {
	case e.holder == "":
		return Observation{Kind: HolderNone}
	case e.holder == m.name:
		return Observation{Kind: HolderSelf, Member: m.name, ID: "mac-" + m.name}
	case strings.HasPrefix(e.holder, "foreign:"):
		return Observation{Kind: HolderForeign, ID: strings.TrimPrefix(e.holder, "foreign:")}
	}
	return Observation{Kind: HolderMember, Member: e.holder, ID: "mac-" + e.holder}
}

func (e *env) decide(m *simMember) Decision { return Decide(e.view(m), e.p) }

// apply is m's executor running dec on the one-holder network, under the
// caller's duties: a claim is stored on the stream before a seize (no
// stored claim, no seize), and withdrawn after a release.
func (e *env) apply(m *simMember, dec Decision) {
	switch dec.Verb {
	case VerbSeize, VerbReassign:
		if !e.beat(m, true) {
			fmt.Fprintf(e.out, "  %s's claim is not stored (the stream is stalled): no %s\n", m.name, dec.Verb)
			return
		}
		e.holder = m.name
	case VerbRelease:
		if e.holder == m.name {
			e.holder = ""
		}
		e.beat(m, false)
	}
}

func (e *env) printDecision(m *simMember, d Decision) {
	fmt.Fprintf(e.out, "%s: owner=%s verb=%s", m.name, orNone(d.Owner), d.Verb)
	if d.From != "" {
		fmt.Fprintf(e.out, " from=%s", d.From)
	}
	fmt.Fprintf(e.out, " epoch=%d\n  %s\n", d.Epoch, d.Reason)
}

func (e *env) printStream() {
	fmt.Fprintf(e.out, "stream at %s, holder %s\n", clock(e.stream.Max()), orNone(e.holder))
	for _, m := range e.members {
		if h, ok := e.stream.Last(m.name); ok {
			fmt.Fprintf(e.out, "%s: seq %d at %s claims=%t\n", m.name, h.Seq, clock(h.ObservedAt), h.Claims)
		}
	}
}

func (e *env) printSkews() {
	s := e.stream.Skews()
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(e.out, "%s: %s\n", k, s[k])
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
