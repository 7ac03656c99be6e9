package wire

import (
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	m "github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
)

var (
	ua = m.UniqueAddress{Host: "10.0.0.1", Port: 4053, UID: 11}
	ub = m.UniqueAddress{Host: "node-b.lan", Port: 4054, UID: 22}
	uc = m.UniqueAddress{Host: "::1", Port: 4055, UID: 33}
)

// sampleGossip has every part filled in: statuses, up-numbers, roles,
// cluster ids, a seen set, reachability rows of every status and a clock.
func sampleGossip() m.Gossip {
	a := m.NewMember(ua, []string{"driver", "admin"}, "site-a").WithUp(1)
	b := m.NewMember(ub, []string{"driver"}, "site-a").WithUp(2).WithStatus(m.Leaving)
	c := m.NewMember(uc, nil, "site-b")
	g := m.NewGossip(a, b, c).WithSeen(ua).WithSeen(ub)
	r := g.Reachability.Unreachable(ua, uc).Terminated(ub, uc).Unreachable(ub, ua).Reachable(ub, ua)
	g = g.WithReachability(r)
	return g.Increment(m.VClockNode(ua)).Increment(m.VClockNode(ua)).Increment(m.VClockNode(ub))
}

func allMessages() []node.Message {
	h := node.Header{From: ua, To: ub}
	g := sampleGossip()
	return []node.Message{
		node.InitJoin{Header: node.Header{From: ua, To: m.UniqueAddress{Host: ub.Host, Port: ub.Port}}},
		node.InitJoinAck{Header: h},
		node.InitJoinNack{Header: h},
		node.Join{Header: h, Roles: []string{"admin", "driver"}, ClusterID: "site-a"},
		node.Welcome{Header: h, Gossip: g},
		node.GossipEnvelope{Header: h, Gossip: g},
		node.GossipStatus{Header: h, Version: g.Version},
		node.Leave{Header: h, Node: ua.Address()},
		node.Down{Header: h, Node: uc.Address()},
		node.Heartbeat{Header: h, Seq: 7},
		node.HeartbeatRsp{Header: h, Seq: 7},
		node.ExitingConfirmed{Header: h, Node: ua},
	}
}

// roundTrip sends msg through ToWire, protobuf bytes and FromWire.
func roundTrip(t *testing.T, msg node.Message) node.Message {
	t.Helper()
	w, err := ToWire(msg)
	if err != nil {
		t.Fatalf("ToWire(%T): %v", msg, err)
	}
	b, err := proto.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	w2 := w.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(b, w2); err != nil {
		t.Fatal(err)
	}
	back, err := FromWire(w2)
	if err != nil {
		t.Fatalf("FromWire(%T): %v", w2, err)
	}
	return back
}

// canonical makes two equal messages DeepEqual: gossips and clocks are
// compared by their wire form, which is canonical (sorted).
func canonical(t *testing.T, msg node.Message) any {
	t.Helper()
	switch x := msg.(type) {
	case node.Welcome:
		return []any{x.Header, GossipToWire(x.Gossip).String()}
	case node.GossipEnvelope:
		return []any{x.Header, GossipToWire(x.Gossip).String()}
	case node.GossipStatus:
		return []any{x.Header, clockToWire(x.Version).String()}
	}
	return msg
}

func TestRoundTripEveryMessage(t *testing.T) {
	for _, msg := range allMessages() {
		back := roundTrip(t, msg)
		if reflect.TypeOf(back) != reflect.TypeOf(msg) {
			t.Fatalf("%T came back as %T", msg, back)
		}
		if !reflect.DeepEqual(canonical(t, back), canonical(t, msg)) {
			t.Fatalf("%T round trip:\n got %#v\nwant %#v", msg, back, msg)
		}
	}
}

func TestRoundTripGossipKeepsSemantics(t *testing.T) {
	g := sampleGossip()
	back := roundTrip(t, node.GossipEnvelope{Header: node.Header{From: ua, To: ub}, Gossip: g}).(node.GossipEnvelope).Gossip
	if back.Version.Compare(g.Version) != m.Same {
		t.Fatalf("version %v != %v", back.Version, g.Version)
	}
	if !reflect.DeepEqual(back.Members, g.Members) || !reflect.DeepEqual(back.Seen, g.Seen) {
		t.Fatalf("members/seen differ:\n%v\n%v", back.Members, g.Members)
	}
	if !reflect.DeepEqual(back.Reachability.Records(), g.Reachability.Records()) ||
		!reflect.DeepEqual(back.Reachability.Versions(), g.Reachability.Versions()) {
		t.Fatalf("reachability %v != %v", back.Reachability, g.Reachability)
	}
	if back.Reachability.Status(uc) != m.Terminated || back.Reachability.IsReachableFrom(ub, ua) != true {
		t.Fatalf("reachability verdicts lost: %v", back.Reachability)
	}
}

func TestLocalMessagesDoNotTravel(t *testing.T) {
	for _, msg := range []node.Message{
		node.ExitingCompleted{Header: node.Local(ua)},
		node.SeedProbeResult{Header: node.Local(ua)},
		node.ConnectionLost{Header: node.Local(ua), Peer: ub},
		node.PeerProbeResult{Header: node.Local(ua), Peer: ub},
		node.LeaseResult{Header: node.Local(ua)},
	} {
		if _, err := ToWire(msg); err == nil {
			t.Fatalf("ToWire(%T) must fail: a local message never travels", msg)
		}
	}
}

// genGossip draws a valid gossip: 1..6 members at distinct addresses, live
// statuses, reachability changes made by members, a clock of increments.
func genGossip(t *rapid.T) m.Gossip {
	n := rapid.IntRange(1, 6).Draw(t, "members")
	var ms []m.Member
	var addrs []m.UniqueAddress
	up := 0
	for i := range n {
		u := m.UniqueAddress{Host: rapid.SampledFrom([]string{"a", "b.lan", "10.1.1.1"}).Draw(t, "host"), Port: 4000 + i, UID: rapid.Uint64Range(1, 1<<63).Draw(t, "uid")}
		mb := m.NewMember(u, rapid.SliceOfN(rapid.SampledFrom([]string{"admin", "driver", "x"}), 0, 3).Draw(t, "roles"), rapid.SampledFrom([]string{"", "site-a"}).Draw(t, "cid"))
		switch rapid.IntRange(0, 5).Draw(t, "status") {
		case 1:
			mb = mb.WithStatus(m.WeaklyUp)
		case 2:
			up++
			mb = mb.WithUp(up)
		case 3:
			up++
			mb = mb.WithUp(up).WithStatus(m.Leaving)
		case 4:
			up++
			mb = mb.WithUp(up).WithStatus(m.Leaving).WithStatus(m.Exiting)
		case 5:
			mb = mb.WithStatus(m.Down)
		}
		ms = append(ms, mb)
		addrs = append(addrs, u)
	}
	g := m.NewGossip(ms...)
	for _, u := range addrs {
		if rapid.Bool().Draw(t, "seen") {
			g = g.WithSeen(u)
		}
	}
	r := g.Reachability
	for range rapid.IntRange(0, 6).Draw(t, "changes") {
		o := rapid.SampledFrom(addrs).Draw(t, "observer")
		s := rapid.SampledFrom(addrs).Draw(t, "subject")
		switch rapid.IntRange(0, 2).Draw(t, "verdict") {
		case 0:
			r = r.Unreachable(o, s)
		case 1:
			r = r.Reachable(o, s)
		default:
			r = r.Terminated(o, s)
		}
	}
	g = g.WithReachability(r)
	for range rapid.IntRange(0, 5).Draw(t, "increments") {
		g = g.Increment(m.VClockNode(rapid.SampledFrom(addrs).Draw(t, "clock")))
	}
	return g
}

func TestRoundTripRandomGossip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := genGossip(rt)
		w := GossipToWire(g)
		b, err := proto.Marshal(w)
		if err != nil {
			rt.Fatal(err)
		}
		var w2 Gossip
		if err := proto.Unmarshal(b, &w2); err != nil {
			rt.Fatal(err)
		}
		back, err := GossipFromWire(&w2)
		if err != nil {
			rt.Fatalf("valid gossip rejected: %v\n%v", err, g)
		}
		if !proto.Equal(GossipToWire(back), w) || back.Version.Compare(g.Version) != m.Same {
			rt.Fatalf("round trip changed the gossip:\n%v\n%v", GossipToWire(back), w)
		}
		if !reflect.DeepEqual(back.Reachability.Records(), g.Reachability.Records()) {
			rt.Fatalf("reachability changed")
		}
	})
}

func TestInvalidMessagesRejected(t *testing.T) {
	good := func() *Gossip { return GossipToWire(sampleGossip()) }
	from, to := uaToWire(ua), uaToWire(ub)
	cases := map[string]proto.Message{
		"no from":             &Heartbeat{To: to},
		"from without uid":    &Heartbeat{From: &UniqueAddress{Host: "a", Port: 1}, To: to},
		"to without uid":      &Heartbeat{From: from, To: &UniqueAddress{Host: "b", Port: 1}},
		"port 0":              &Heartbeat{From: &UniqueAddress{Host: "a", Port: 0, Uid: 1}, To: to},
		"port 70000":          &InitJoin{From: &UniqueAddress{Host: "a", Port: 70000, Uid: 1}, To: to},
		"empty host":          &InitJoin{From: &UniqueAddress{Port: 1, Uid: 1}, To: to},
		"host with slash":     &InitJoin{From: &UniqueAddress{Host: "a/b", Port: 1, Uid: 1}, To: to},
		"no gossip":           &GossipEnvelope{From: from, To: to},
		"leave without node":  &Leave{From: from, To: to},
		"down bad node":       &Down{From: from, To: to, Node: &Address{Host: "x"}},
		"exiting without uid": &ExitingConfirmed{From: from, To: to, Node: &UniqueAddress{Host: "a", Port: 1}},
		"too many roles":      &Join{From: from, To: to, Roles: make([]string, MaxRoles+1)},
		"removed member": func() proto.Message {
			g := good()
			g.Members[0].Status = MemberStatus_MEMBER_STATUS_REMOVED
			return &GossipEnvelope{From: from, To: to, Gossip: g}
		}(),
		"unspecified status": func() proto.Message {
			g := good()
			g.Members[1].Status = MemberStatus_MEMBER_STATUS_UNSPECIFIED
			return &Welcome{From: from, To: to, Gossip: g}
		}(),
		"duplicate member": func() proto.Message {
			g := good()
			g.Members = append(g.Members, g.Members[0])
			return &GossipEnvelope{From: from, To: to, Gossip: g}
		}(),
		"seen by stranger": func() proto.Message {
			g := good()
			g.Seen = append(g.Seen, &UniqueAddress{Host: "z", Port: 9, Uid: 9})
			return &GossipEnvelope{From: from, To: to, Gossip: g}
		}(),
		"observer not a member": func() proto.Message {
			g := good()
			g.Reachability.Records = append(g.Reachability.Records, &ReachabilityRecord{
				Observer: &UniqueAddress{Host: "z", Port: 9, Uid: 9}, Subject: from, Status: ReachStatus_REACH_STATUS_UNREACHABLE, Version: 1})
			return &GossipEnvelope{From: from, To: to, Gossip: g}
		}(),
		"duplicate record": func() proto.Message {
			g := good()
			g.Reachability.Records = append(g.Reachability.Records, g.Reachability.Records[0])
			return &GossipEnvelope{From: from, To: to, Gossip: g}
		}(),
		"bad reach status": func() proto.Message {
			g := good()
			g.Reachability.Records[0].Status = 9
			return &GossipEnvelope{From: from, To: to, Gossip: g}
		}(),
		"up-number 0": func() proto.Message {
			g := good()
			g.Members[0].UpNumber = 0
			return &GossipEnvelope{From: from, To: to, Gossip: g}
		}(),
		"joining with up-number": func() proto.Message {
			g := good()
			for _, mb := range g.Members {
				if mb.Status == MemberStatus_MEMBER_STATUS_JOINING {
					mb.UpNumber = 3
				}
			}
			return &GossipEnvelope{From: from, To: to, Gossip: g}
		}(),
		"duplicate clock node":  &GossipStatus{From: from, To: to, Version: &VectorClock{Entries: []*VectorClockEntry{{Node: "a", Counter: 1}, {Node: "a", Counter: 2}}}},
		"empty clock node":      &GossipStatus{From: from, To: to, Version: &VectorClock{Entries: []*VectorClockEntry{{Counter: 1}}}},
		"not a cluster message": &Member{},
	}
	for name, msg := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := FromWire(msg)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("FromWire = %v, %v; want ErrInvalid", got, err)
			}
		})
	}
}
