package dataplane_test

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// Values written to press1/Setpoint tell the writer apart at the device:
// a's are from aBase on, b's from bBase on.
const (
	aBase = 1000
	bBase = 2000
)

// setpointLog records the values written to the device's Setpoint
// register (holding 0), in the order the device applied them.
type setpointLog struct {
	mu     sync.Mutex
	values []int16
}

func (l *setpointLog) record(w fielddevice.Write) {
	if w.Table != fielddevice.Holding || w.Address != 0 || len(w.Words) == 0 {
		return
	}
	l.mu.Lock()
	l.values = append(l.values, int16(w.Words[0]))
	l.mu.Unlock()
}

// by returns the values from writer base (aBase or bBase) that reached the
// device.
func (l *setpointLog) by(base int16) []int16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int16
	for _, v := range l.values {
		if v >= base && v < base+1000 {
			out = append(out, v)
		}
	}
	return out
}

// TestRestartedNodeWritesNothingBeforeItHasJoined: b of a running pair is
// killed and restarted while the Config DB (a real PostgreSQL) is down, so
// it boots from its LocalDb cache, and its way into the cluster (a proxy
// in front of a's cluster transport) holds every connection. In that
// window a client writes to b again and again: no write of b's reaches the
// device, each is denied as "not a cluster member yet" and counted. Once
// the seed lets b through and the Config DB is back, b joins, the snapshot
// names it Secondary and the Secondary rules apply (reason secondary),
// while writes through a still reach the device.
func TestRestartedNodeWritesNothingBeforeItHasJoined(t *testing.T) {
	for _, mode := range []string{"optimistic", "confirmed"} {
		t.Run(mode, func(t *testing.T) { restartIntoRunningPair(t, mode) })
	}
}

func restartIntoRunningPair(t *testing.T, mode string) {
	db := pg.Start(t)
	writes := &setpointLog{}
	// a binds 127.0.0.2 and advertises 127.0.0.1, where proxies forward:
	// seed in front of its cluster transport — everything b sends to a,
	// its join included, passes it; what a sends to b does not — and one
	// that always passes in front of its OPC UA endpoint.
	var seed *netem.Proxy
	p := startPairWith(t, rigOptions{
		device: fielddevice.Options{OnWrite: writes.record},
		edit: func(name string, cfg map[string]any) {
			cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": db.DSN()}
			cfg["OpcUa"].(map[string]any)["WriteMode"] = mode
			if name == "a" {
				cl := cfg["Cluster"].(map[string]any)
				port := cl["Port"].(int)
				cl["Hostname"] = "127.0.0.2"
				seed = netem.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.2:%d", port))
				opc := cfg["OpcUa"].(map[string]any)["Port"].(int)
				netem.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", opc), fmt.Sprintf("127.0.0.2:%d", opc))
			}
		},
	})
	p.deploy(deviceDoc(p.devURL))
	waitVersion(t, p.a, 1, "central")
	waitVersion(t, p.b, 1, "central")
	ca, cb := connect(t, p.a), connect(t, p.b)
	waitLevels(t, ca, cb)
	setpoint := ua.NewStringNodeID(ca.namespace(), "press1/Setpoint")
	writeThroughA(t, p, ca, setpoint, aBase+1, writes)

	// b dies; the way to a holds every connection from now on; the
	// Config DB stops. Wait until a has removed b, so that only b's join could tell
	// it about the pair.
	p.b.Signal(syscall.SIGKILL)
	if err := seed.SetMode(netem.Blackhole); err != nil {
		t.Fatal(err)
	}
	db.Stop()
	bAddr := p.b.ClusterAddr()
	procs.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		v, err := p.a.Members()
		if err != nil {
			return err
		}
		if m, ok := v.Member(bAddr); ok {
			return fmt.Errorf("a still lists b: %s (%s)", m.Status, v)
		}
		return nil
	})
	p.b.Restart()
	p.b.WaitReady(60 * time.Second)
	waitVersion(t, p.b, 1, "cache")

	// The window: b serves the cached deployment and is no member.
	cb = connect(t, p.b)
	const tries = 20
	for i := range tries {
		st := cb.write(setpoint, int16(bBase+i))
		if got := writes.by(bBase); len(got) != 0 {
			t.Fatalf("b wrote %v to the device before it had joined the pair (write %d answered %v)", got, i, st)
		}
		if want := notPrimaryAnswer(mode); st != want {
			t.Fatalf("write %d to b before it joined: %v, want %v", i, st, want)
		}
	}
	if v, err := p.b.Members(); err != nil || v.SelfStatus == procs.StatusUp || len(v.UpAddresses()) > 0 {
		t.Fatalf("the window is not one: b sees %v (err %v)", v, err)
	}
	if seed.Stats().Accepted == 0 {
		t.Fatal("b never tried to reach a during the window")
	}
	// Every write was decided and denied: none is still on its way.
	waitDenials(t, p.b, "not-member", tries)
	if got := writes.by(bBase); len(got) != 0 {
		t.Fatalf("b wrote %v to the device before it had joined the pair", got)
	}
	if !contains(p.b.Log(), "not primary (not a cluster member yet)") {
		t.Fatal(`no "not primary (not a cluster member yet)" in b's log`)
	}

	// The way in opens and the Config DB is back: b joins as Secondary.
	db.Start()
	if err := seed.SetMode(netem.Pass); err != nil {
		t.Fatal(err)
	}
	waitLevels(t, ca, cb)
	if st := cb.write(setpoint, int16(bBase+tries)); st != notPrimaryAnswer(mode) {
		t.Fatalf("write to b as Secondary: %v", st)
	}
	waitDenials(t, p.b, "secondary", 1)
	if !contains(p.b.Log(), `"reason":"not primary"`) {
		t.Fatal(`no "not primary" denial in b's log once it was Secondary`)
	}
	writeThroughA(t, p, ca, setpoint, aBase+2, writes)
	if got := writes.by(bBase); len(got) != 0 {
		t.Fatalf("b wrote %v to the device", got)
	}
}

// notPrimaryAnswer is what a client's write to a node the gate denies is
// answered in mode: Good at once then reverted (optimistic), or
// BadInvalidState (confirmed).
func notPrimaryAnswer(mode string) ua.StatusCode {
	if mode == "confirmed" {
		return ua.StatusBadInvalidState
	}
	return ua.StatusOK
}

// writeThroughA writes v through a and waits until the device holds it.
func writeThroughA(t *testing.T, p *pair, ca *client, setpoint *ua.NodeID, v int16, writes *setpointLog) {
	t.Helper()
	if st := ca.write(setpoint, v); st != ua.StatusOK {
		t.Fatalf("write through a: %v", st)
	}
	procs.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if got := writes.by(aBase); len(got) == 0 || got[len(got)-1] != v {
			return fmt.Errorf("a's writes at the device %v, want %d last (register %d)", got, v, int16(p.dev.Holding(0)))
		}
		return nil
	})
}

// waitDenials waits until n counts want write denials for reason.
func waitDenials(t *testing.T, n *procs.Node, reason string, want float64) {
	t.Helper()
	series := `otopcua_redundancy_primary_gate_denied_total{reason="` + reason + `",site="write"}`
	procs.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		body, err := n.Get("/metrics")
		if err != nil {
			return err
		}
		if err := wantSeries(body, series, want); err != nil {
			var lines []string
			for _, l := range strings.Split(body, "\n") {
				if strings.HasPrefix(l, "otopcua_redundancy_primary_gate_denied_total") && !strings.HasSuffix(l, " 0") {
					lines = append(lines, l)
				}
			}
			return fmt.Errorf("%v (counted: %v)", err, lines)
		}
		return nil
	})
}
