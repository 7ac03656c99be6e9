package upgrade

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/client"
	"github.com/otopcua/otopcua/tests/chaos/check"
	"github.com/otopcua/otopcua/tests/clientmodes"
	"github.com/otopcua/otopcua/tests/procs"
)

// writeEvery is the SCADA client's write period.
const writeEvery = 200 * time.Millisecond

// scada is the plant's SCADA client: otopcua's own failover client
// (opcua/client, the current tree's) in Mirrored mode on both nodes'
// URLs, subscribed to the counter (sampling 0: every value) and writing
// the setpoint every writeEvery with values it never wrote before
// (1000, 1001, …), each acknowledged one logged for the checker.
type scada struct {
	t     *testing.T
	rec   *record
	c     *client.Client
	names map[string]string // ApplicationUri → node

	mu       sync.Mutex
	values   []clientmodes.Value // every Good counter value, in order; mu must be held.
	others   []string            // the other notifications; mu must be held.
	events   []client.Event      // mu must be held.
	active   string              // the active node by the last event; mu must be held.
	outcomes map[string]int      // write outcomes; mu must be held.

	stop chan struct{}
	wg   sync.WaitGroup
}

// startScada dials both nodes, subscribes and starts writing.
func (r *rig) startScada() {
	r.t.Helper()
	s := &scada{t: r.t, rec: r.rec, names: map[string]string{uri("a"): "a", uri("b"): "b"}, outcomes: map[string]int{}, stop: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URLs: []string{r.nodes["a"].Endpoint(), r.nodes["b"].Endpoint()},
		Mode: client.ModeMirrored, NoDiscovery: true, Timeout: 5 * time.Second, OnEvent: s.onEvent, ApplicationName: "upgrade scada"})
	if err != nil {
		r.t.Fatal(err)
	}
	s.c = c
	r.t.Cleanup(s.close)
	sub, err := c.SubscribeSampled(ctx, []*ua.NodeID{r.tags.counter}, 100*time.Millisecond, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	s.wg.Go(func() { s.readValues(sub) })
	s.wg.Go(func() { s.write(r.tags.setpoint) })
	r.scada = s
}

// onEvent runs on the client's goroutine, one event at a time.
func (s *scada) onEvent(ev client.Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.active = s.names[ev.To.URI]
	s.mu.Unlock()
	if ev.Kind == client.EventFailover {
		s.rec.failover(check.ClientFailover{At: ev.At, Source: "client event", From: s.names[ev.From.URI], To: s.names[ev.To.URI], Reason: ev.Reason})
	}
}

func (s *scada) readValues(sub *client.Subscription) {
	for n := range sub.Notifications() {
		v, ok := counterValue(n)
		s.mu.Lock()
		if ok {
			s.values = append(s.values, clientmodes.Value{V: v, Server: n.Server.URI, Seq: len(s.values) + len(s.others)})
		} else {
			s.others = append(s.others, fmt.Sprintf("%v from %s", n.Value, n.Server.URI))
		}
		s.mu.Unlock()
	}
}

// counterValue is a Good notification's value.
func counterValue(n client.Notification) (uint16, bool) {
	if n.Value == nil || n.Value.Status != ua.StatusOK || n.Value.Value == nil {
		return 0, false
	}
	v, ok := n.Value.Value.Value().(uint16)
	return v, ok
}

// write writes setpoint every writeEvery until stop; an acknowledged
// (Good) write is logged with the node the client was on.
func (s *scada) write(setpoint *ua.NodeID) {
	tick := time.NewTicker(writeEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		v := int16(1000 + i)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		res, err := s.c.Write(ctx, &ua.WriteValue{NodeID: setpoint, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}})
		cancel()
		outcome := "error"
		if err == nil {
			outcome = res[0].Error()
		}
		s.mu.Lock()
		s.outcomes[outcome]++
		server := s.active
		s.mu.Unlock()
		if err == nil && res[0] == ua.StatusOK {
			s.rec.ack(check.AckedWrite{At: time.Now(), Source: fmt.Sprintf("client write #%d", i), NodeID: setpoint.String(),
				Value: strconv.Itoa(int(v)), Server: server})
		}
	}
}

func (s *scada) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.c.Close()
	s.wg.Wait()
}

// valueCount is how many Good counter values the client has received.
func (s *scada) valueCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

// eventCount is how many events the client has reported.
func (s *scada) eventCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// eventsSince are the events after the first n.
func (s *scada) eventsSince(n int) []client.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events[n:])
}

// counterValues are the Good counter values so far and the other
// notifications.
func (s *scada) counterValues() ([]clientmodes.Value, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.values), slices.Clone(s.others)
}

// valuesFrom counts the Good counter values from node name since the
// first n values.
func (s *scada) valuesFrom(name string, n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := 0
	for _, v := range s.values[min(n, len(s.values)):] {
		if v.Server == uri(name) {
			k++
		}
	}
	return k
}

// writeOutcomes counts the client's writes by outcome.
func (s *scada) writeOutcomes() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.outcomes)
}

// waitValuesFrom waits until the client got ten more counter values from
// node name.
func (s *scada) waitValuesFrom(name string, since int) {
	s.t.Helper()
	procs.CheckFor(s.t, 30*time.Second, 50*time.Millisecond, func() error {
		if k := s.valuesFrom(name, since); k < 10 {
			return fmt.Errorf("%d counter values from %s since value %d, want 10", k, name, since)
		}
		return nil
	})
}

// toggler moves the alarm's register between low and high every period,
// the device's own pace, and keeps every value it set.
type toggler struct {
	mu     sync.Mutex
	values []int // mu must be held.
	stop   chan struct{}
	done   chan struct{}
}

func (r *rig) startToggler(period time.Duration) {
	tg := &toggler{stop: make(chan struct{}), done: make(chan struct{})}
	r.toggles = tg
	go func() {
		defer close(tg.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		v := levelLow
		for {
			select {
			case <-tg.stop:
				return
			case <-tick.C:
			}
			v = levelHigh + levelLow - v
			r.dev.SetHolding(levelAddr, uint16(v))
			tg.mu.Lock()
			tg.values = append(tg.values, v)
			tg.mu.Unlock()
		}
	}()
	r.t.Cleanup(func() { tg.halt() })
}

// halt stops the toggler and returns every value it set.
func (tg *toggler) halt() []int {
	select {
	case <-tg.stop:
	default:
		close(tg.stop)
	}
	<-tg.done
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.values)
}
