package chaos

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/client"
	"github.com/otopcua/otopcua/tests/chaos/check"
	"github.com/otopcua/otopcua/tests/procs"
)

// Client timing: the write rate and the bound of one write (below the
// checker's acknowledgement tolerance, 5 s, so that a write acknowledged
// late still lands within it).
const (
	writeEvery   = 200 * time.Millisecond
	writeTimeout = 4 * time.Second
)

// pairClient is a pair's SCADA client: otopcua's own failover client on
// both nodes' endpoints, subscribed to the counter and writing the
// setpoint.
type pairClient struct {
	p        *pair
	c        *client.Client
	names    map[string]string // ApplicationUri → node
	counter  *ua.NodeID
	setpoint *ua.NodeID
	started  time.Time // the first counter value

	mu        sync.Mutex
	outcomes  map[string]int // write outcome → count; mu must be held.
	secondary map[string]int // outcomes of the writes through the Secondary; mu must be held.
}

// startClient dials p's client (failing the test when it cannot), finds
// the ClusterId's namespace, subscribes to the counter and starts writing,
// and waits for its first counter value and its first acknowledged write.
func (r *rig) startClient(p *pair) {
	r.t.Helper()
	pc := &pairClient{p: p, names: map[string]string{}, outcomes: map[string]int{}, secondary: map[string]int{}}
	var urls []string
	for _, n := range p.nodes {
		pc.names[uri(n.name)] = n.name
		urls = append(urls, n.endpoint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{
		URLs: urls, NoDiscovery: true, Mode: client.ModeWarm, Timeout: writeTimeout,
		ApplicationName: "chaos client " + p.spec.ID, OnEvent: pc.event(r.rec),
	})
	if err != nil {
		r.t.Fatalf("%s: client: %v", p.spec.ID, err)
	}
	pc.c = c
	p.client = pc
	vs, err := c.Read(ctx, ua.NewNumericNodeID(0, id.Server_NamespaceArray))
	if err != nil || len(vs) != 1 || vs[0].Value == nil {
		r.t.Fatalf("%s: client: NamespaceArray: %v %v", p.spec.ID, vs, err)
	}
	uris, _ := vs[0].Value.Value().([]string)
	ns := slices.Index(uris, "urn:otopcua:cluster:"+p.spec.ID)
	if ns < 0 {
		r.t.Fatalf("%s: client: no namespace of the ClusterId in %v", p.spec.ID, uris)
	}
	p.ns = uint16(ns)
	pc.counter = ua.NewStringNodeID(p.ns, p.device+"/Counter")
	pc.setpoint = ua.NewStringNodeID(p.ns, p.device+"/Setpoint")
	sub, err := c.Subscribe(ctx, []*ua.NodeID{pc.counter}, 100*time.Millisecond)
	if err != nil {
		r.t.Fatalf("%s: client: subscribe: %v", p.spec.ID, err)
	}
	first := make(chan time.Time, 1)
	r.wg.Go(func() { pc.receive(r.rec, sub, first) })
	select {
	case pc.started = <-first:
	case <-time.After(30 * time.Second):
		r.t.Fatalf("%s: client: no counter value within 30 s", p.spec.ID)
	}
	r.wg.Go(func() { pc.write(r.rec, r.stop) })
	r.wg.Go(func() { r.writeThroughSecondary(pc) })
	poll.CheckFor(r.t, 30*time.Second, 50*time.Millisecond, func() error {
		if pc.acked() == 0 {
			return fmt.Errorf("%s: client: no write acknowledged yet (%s)", p.spec.ID, pc.outcomesText(false))
		}
		return nil
	})
}

// event records the client's failovers and losses (called one at a time,
// quickly).
func (pc *pairClient) event(rec *recorder) func(client.Event) {
	return func(ev client.Event) {
		switch ev.Kind {
		case client.EventFailover:
			rec.failover(check.ClientFailover{At: ev.At, From: pc.names[ev.From.URI], To: pc.names[ev.To.URI], Reason: ev.Reason})
		case client.EventLost:
			rec.lost(clientLoss{at: ev.At, cluster: pc.p.spec.ID, from: pc.names[ev.From.URI]})
		}
	}
}

// receive records every new counter value until the client closes; the
// first one's arrival goes to first.
func (pc *pairClient) receive(rec *recorder, sub *client.Subscription, first chan<- time.Time) {
	var last any
	for n := range sub.Notifications() {
		if n.Value == nil || n.Value.Status != ua.StatusOK || n.Value.Value == nil {
			continue
		}
		v := n.Value.Value.Value()
		if v == last {
			continue
		}
		if last == nil {
			first <- n.At
		}
		last = v
		rec.counterValue(pc.p.spec.ID, n.At)
	}
}

// write writes 1, 2, 3, … to the setpoint every writeEvery until stop,
// one write at a time, each bounded by writeTimeout, and records every
// write acknowledged Good with the node that was active when it was sent.
func (pc *pairClient) write(rec *recorder, stop <-chan struct{}) {
	tick := time.NewTicker(writeEvery)
	defer tick.Stop()
	for v := uint16(1); ; v++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		server := pc.names[pc.c.Active().URI]
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		st, err := pc.c.Write(ctx, &ua.WriteValue{NodeID: pc.setpoint, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}})
		cancel()
		outcome := "error"
		switch {
		case err != nil:
		case len(st) != 1:
			outcome = fmt.Sprintf("%d results", len(st))
		default:
			outcome = st[0].Error()
		}
		if err == nil && len(st) == 1 && st[0] == ua.StatusOK {
			at := time.Now()
			if server == "" {
				server = pc.names[pc.c.Active().URI]
			}
			if server == "" {
				server = pc.p.nodes[0].name // no server known: the ClusterId is what the checker needs
			}
			rec.ack(check.AckedWrite{At: at, NodeID: pc.setpoint.String(), Value: strconv.Itoa(int(v)), Server: server})
			outcome = "Good"
		}
		pc.count(pc.outcomes, outcome)
	}
}

func (pc *pairClient) count(m map[string]int, outcome string) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	m[outcome]++
}

// secondaryBase is the first value written through the Secondary, apart
// from the client's 1, 2, 3, …
const secondaryBase = 40000

// writeThroughSecondary writes the setpoint once a second through the node
// the samplers last read at 240, over sessions of its own that never
// follow ServiceLevel (a SCADA station configured with one server): under
// forwarded writes each reaches the device through the Primary, once.
// Every write acknowledged Good is recorded with the Secondary as the
// server; a node's mistake (a Secondary writing itself, an
// acknowledgement without a write) shows at the device.
func (r *rig) writeThroughSecondary(pc *pairClient) {
	sessions := map[string]*procs.Session{}
	for _, n := range pc.p.nodes {
		sessions[n.name] = procs.NewSession(n.endpoint)
		defer sessions[n.name].Close()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for v := uint16(secondaryBase); ; v++ {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		var secondary *node
		for _, n := range pc.p.nodes {
			if l, ok := r.rec.latest(n.name, time.Second); ok && l == check.LevelSecondary {
				secondary = n
			}
		}
		if secondary == nil {
			pc.count(pc.secondary, "no Secondary")
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		st, err := sessions[secondary.name].Write(ctx, pc.setpoint, v)
		cancel()
		switch {
		case err != nil:
			pc.count(pc.secondary, "error")
		case st != ua.StatusOK:
			pc.count(pc.secondary, st.Error())
		default:
			r.rec.ack(check.AckedWrite{At: time.Now(), NodeID: pc.setpoint.String(), Value: strconv.Itoa(int(v)), Server: secondary.name})
			pc.count(pc.secondary, "Good")
		}
	}
}

func (pc *pairClient) acked() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.outcomes["Good"]
}

// outcomesText is "Good 1200, error 14, …", most frequent first, of the
// client's writes, or (secondary) of the writes through the Secondary.
func (pc *pairClient) outcomesText(secondary bool) string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	m := pc.outcomes
	if secondary {
		m = pc.secondary
	}
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(m[b]-m[a], strings.Compare(a, b)) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", shortStatus(k), m[k]))
	}
	if len(parts) == 0 {
		return "no write yet"
	}
	return strings.Join(parts, ", ")
}

func (pc *pairClient) close() { _ = pc.c.Close() }

// shortStatus is a status's name without its description
// ("StatusBadTimeout" of "The operation timed out. StatusBadTimeout (0x800A0000)").
func shortStatus(s string) string {
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "StatusBad") || strings.HasPrefix(f, "StatusUncertain") {
			return f
		}
	}
	return s
}
