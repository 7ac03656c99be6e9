package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/tests/chaos/check"
	"github.com/otopcua/otopcua/tests/procs"
)

// The wire checks: what each node shows of the other through its own HTTP
// API, which it can only know from the other over a cluster channel.

// gossip checks membership both ways: each node's view is converged and
// has both nodes Up and reachable, the other at the incarnation that
// other node says it is.
func (r *rig) gossip() error {
	views := map[string]*procs.ClusterView{}
	for _, name := range []string{"a", "b"} {
		v, err := r.nodes[name].Members()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		views[name] = v
	}
	for name, v := range views {
		peer := views[other(name)].Self
		m, ok := v.Member(peer.Address)
		switch {
		case !v.Converged || len(v.Members) != 2:
			return fmt.Errorf("%s's view is not a converged pair: %s", name, v)
		case !ok || m.UID != peer.UID || m.Status != procs.StatusUp || !m.Reachable:
			return fmt.Errorf("%s does not see %s#%s Up and reachable: %s", name, peer.Address, peer.UID, v)
		}
	}
	return nil
}

// panel is the part of GET /api/clusters/{id}/redundancy the test reads.
type panel struct {
	Primary string `json:"primary"`
	Members []struct {
		NodeID          string `json:"nodeId"`
		Status          string `json:"status"`
		Role            string `json:"role"`
		ServiceLevel    int    `json:"serviceLevel"`
		HasServiceLevel bool   `json:"hasServiceLevel"`
	} `json:"members"`
	Mirror *struct {
		Served  int `json:"served"`
		Members []struct {
			NodeID       string `json:"nodeId"`
			Holds        bool   `json:"holds"`
			Held         int    `json:"held"`
			HeldReady    bool   `json:"heldReady"`
			Standby      bool   `json:"standby"`
			StandbyReady bool   `json:"standbyReady"`
		} `json:"members"`
		Takeovers map[string]uint64 `json:"takeovers"`
	} `json:"mirror"`
}

func (r *rig) panelOf(name string) (panel, error) {
	var p panel
	body, err := r.nodes[name].Get("/api/clusters/" + clusterID + "/redundancy")
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return p, fmt.Errorf("%s: %w: %s", name, err, body)
	}
	return p, nil
}

// pubsub checks the redundancy topic both ways: each node's panel names
// primary as the Primary and shows both members with the ServiceLevel
// that member's current incarnation published over pub/sub (the panel
// shows none from another incarnation).
func (r *rig) pubsub(primary string) error {
	want := map[string]struct {
		role  string
		level int
	}{
		r.nodes[primary].ClusterAddr():        {"Primary", int(levelPrimary)},
		r.nodes[other(primary)].ClusterAddr(): {"Secondary", int(levelSecondary)},
	}
	for _, name := range []string{"a", "b"} {
		p, err := r.panelOf(name)
		if err != nil {
			return err
		}
		if p.Primary != r.nodes[primary].ClusterAddr() || len(p.Members) != 2 {
			return fmt.Errorf("%s's panel: Primary %q and %d members, want %s of 2", name, p.Primary, len(p.Members), primary)
		}
		for _, m := range p.Members {
			w := want[m.NodeID]
			if m.Status != "Up" || m.Role != w.role || !m.HasServiceLevel || m.ServiceLevel != w.level {
				return fmt.Errorf("%s's panel shows %s %s, %s, level %d (heard %v); want Up, %s, %d", name, m.NodeID, m.Status, m.Role, m.ServiceLevel, m.HasServiceLevel, w.role, w.level)
			}
		}
	}
	return nil
}

// mirrored checks session mirroring both ways: each node serves sessions
// (the client's and the sampler's), holds the other's sessions whole
// (their snapshot arrived: a hot standby for them) and has its own
// acknowledged by the other.
func (r *rig) mirrored() error {
	for _, name := range []string{"a", "b"} {
		p, err := r.panelOf(name)
		if err != nil {
			return err
		}
		if p.Mirror == nil || p.Mirror.Served == 0 {
			return fmt.Errorf("%s mirrors no session it serves: %+v", name, p.Mirror)
		}
		peer := r.nodes[other(name)].ClusterAddr()
		found := false
		for _, m := range p.Mirror.Members {
			if m.NodeID != peer {
				continue
			}
			found = true
			if !m.Holds || m.Held == 0 || !m.HeldReady || !m.Standby || !m.StandbyReady {
				return fmt.Errorf("%s's mirror of %s: %+v, want its sessions held whole and its own acknowledged", name, other(name), m)
			}
		}
		if !found {
			return fmt.Errorf("%s's mirror panel has no row for %s: %+v", name, other(name), p.Mirror.Members)
		}
	}
	return nil
}

// localdb is the part of GET /api/localdb the test reads.
type localdb struct {
	Peers []struct {
		Connected    bool
		LastSync     time.Time
		LastError    string
		Refused      int64
		RowsReceived map[string]int64
	}
	Served []struct {
		RowsSent map[string]int64
	}
	Refused map[string]int64
}

func (r *rig) localdbOf(name string) (localdb, error) {
	var s localdb
	body, err := r.nodes[name].Get("/api/localdb")
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return s, fmt.Errorf("%s: %w: %s", name, err, body)
	}
	if len(s.Peers) != 1 {
		return s, fmt.Errorf("%s replicates with %d peers, want 1", name, len(s.Peers))
	}
	return s, nil
}

// alarmEvents is what node name has received (from its peer) and sent (to
// it) of the alarm history queue (table alarm_sf_events).
func (r *rig) alarmEvents(name string) (received, sent int64, err error) {
	s, err := r.localdbOf(name)
	if err != nil {
		return 0, 0, err
	}
	for _, x := range s.Served {
		sent += x.RowsSent["alarm_sf_events"]
	}
	return s.Peers[0].RowsReceived["alarm_sf_events"], sent, nil
}

// replicated checks LocalDb replication both ways since `since`: each
// node completed a pull from the other after it, refusing nothing, and the
// alarm history events the Primary queued went to the Secondary — more
// than the Secondary had received (base) when the check began.
func (r *rig) replicated(primary string, since time.Time, base int64) error {
	for _, name := range []string{"a", "b"} {
		s, err := r.localdbOf(name)
		if err != nil {
			return err
		}
		p := s.Peers[0]
		refused := p.Refused
		for _, n := range s.Refused {
			refused += n
		}
		switch {
		case refused > 0:
			return fmt.Errorf("%s refused %d replication rounds: %+v", name, refused, s)
		case !p.Connected || p.LastError != "" || !p.LastSync.After(since):
			return fmt.Errorf("%s has not pulled everything from %s since %s: connected %v, last sync %s, error %q",
				name, other(name), since.Format("15:04:05.000"), p.Connected, p.LastSync.Format("15:04:05.000"), p.LastError)
		}
	}
	got, _, err := r.alarmEvents(other(primary))
	if err != nil {
		return err
	}
	if _, sent, err := r.alarmEvents(primary); err != nil || got <= base || sent == 0 {
		return fmt.Errorf("the Secondary %s received %d alarm history events (%d before), the Primary %s sent %d (%v): none replicated yet",
			other(primary), got, base, primary, sent, err)
	}
	return nil
}

// checkWire checks every cluster channel between the two nodes, both
// ways, with primary at 250: membership gossip, pub/sub, session
// mirroring, LocalDb replication and a write forwarded from the
// Secondary to the Primary (pub/sub request and answer), which must land
// on the device once, written by the Primary. It also checks that each
// node runs the binary the test gave it.
func (r *rig) checkWire(label, primary string) {
	r.t.Helper()
	start := time.Now()
	r.waitWhole(primary, 60*time.Second)
	for _, name := range []string{"a", "b"} {
		want := map[bool]string{true: "0.1.0", false: "the current tree's"}[r.bins[name] == r.oldBin]
		v, err := r.version(name)
		if err != nil || (r.bins[name] == r.oldBin) != (v == "0.1.0") {
			r.t.Fatalf("%s: %s runs version %q (%v), want %s", label, name, v, err, want)
		}
	}
	base, _, err := r.alarmEvents(other(primary))
	if err != nil {
		r.t.Fatal(err)
	}
	since := time.Now()
	procs.CheckFor(r.t, 60*time.Second, 200*time.Millisecond, func() error {
		return errors.Join(r.gossip(), r.pubsub(primary), r.mirrored(), r.replicated(primary, since, base))
	})
	r.forwardedWrite(label, primary)
	r.t.Logf("%s: gossip, pub/sub, mirrored sessions, LocalDb replication and forwarded writes work both ways (%v)", label, time.Since(start).Round(time.Millisecond))
}

// forwardedWrite writes the setpoint through the Secondary, over a
// session of its own: the Secondary forwards it to the Primary, which
// writes the device and answers through the Secondary. It must be Good,
// and land once, written by the Primary.
func (r *rig) forwardedWrite(label, primary string) {
	r.t.Helper()
	secondary := other(primary)
	r.forwarded++
	v := int16(20000 + r.forwarded)
	s := procs.NewSession(r.nodes[secondary].Endpoint())
	defer s.Close()
	var status error
	procs.CheckFor(r.t, 10*time.Second, 200*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		code, err := s.WriteInt16(ctx, r.tags.setpoint, v)
		if errors.Is(err, procs.ErrNoSession) {
			return err // dialling
		}
		switch {
		case err != nil:
			status = err
		case code != ua.StatusOK:
			status = code
		default:
			status = nil
		}
		return nil
	})
	if status != nil {
		r.t.Fatalf("%s: a write through the Secondary %s: %v, want Good (forwarded to the Primary %s)", label, secondary, status, primary)
	}
	r.rec.ack(check.AckedWrite{At: time.Now(), Source: label + ": forwarded write", NodeID: r.tags.setpoint.String(), Value: strconv.Itoa(int(v)), Server: secondary})
	procs.CheckFor(r.t, 5*time.Second, 20*time.Millisecond, func() error {
		ls := r.rec.landings(strconv.Itoa(int(v)))
		switch {
		case len(ls) == 0:
			return fmt.Errorf("the forwarded write %d has not reached the device", v)
		case len(ls) > 1 || ls[0].Writer != primary:
			r.t.Fatalf("%s: the forwarded write %d landed %d times, first by %s; want once, by the Primary %s", label, v, len(ls), ls[0].Writer, primary)
		}
		return nil
	})
}
