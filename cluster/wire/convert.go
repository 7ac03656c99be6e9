package wire

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
)

// ErrInvalid is wrapped by every decoding error: the bytes parsed as
// protobuf but do not describe a valid cluster message.
var ErrInvalid = errors.New("wire: invalid cluster message")

// Limits on what a decoded message may carry. A real cluster is far below
// them; they keep a hostile or corrupt message from costing much.
const (
	MaxMembers    = 1000
	MaxRoles      = 64
	MaxStringLen  = 256
	MaxClockNodes = 4 * MaxMembers
	MaxRecords    = 4 * MaxMembers
)

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// ToWire converts a cluster protocol message of package node to its wire
// form. Local messages (ExitingCompleted, SeedProbeResult, ...) never
// travel and return an error.
func ToWire(msg node.Message) (proto.Message, error) {
	h := msg.Route()
	from, to := uaToWire(h.From), uaToWire(h.To)
	switch x := msg.(type) {
	case node.InitJoin:
		return &InitJoin{From: from, To: to}, nil
	case node.InitJoinAck:
		return &InitJoinAck{From: from, To: to}, nil
	case node.InitJoinNack:
		return &InitJoinNack{From: from, To: to}, nil
	case node.Join:
		return &Join{From: from, To: to, Roles: x.Roles, ClusterId: x.ClusterID}, nil
	case node.Welcome:
		return &Welcome{From: from, To: to, Gossip: GossipToWire(x.Gossip)}, nil
	case node.GossipEnvelope:
		return &GossipEnvelope{From: from, To: to, Gossip: GossipToWire(x.Gossip)}, nil
	case node.GossipStatus:
		return &GossipStatus{From: from, To: to, Version: clockToWire(x.Version)}, nil
	case node.Leave:
		return &Leave{From: from, To: to, Node: addrToWire(x.Node)}, nil
	case node.Down:
		return &Down{From: from, To: to, Node: addrToWire(x.Node)}, nil
	case node.Heartbeat:
		return &Heartbeat{From: from, To: to, Seq: x.Seq}, nil
	case node.HeartbeatRsp:
		return &HeartbeatRsp{From: from, To: to, Seq: x.Seq}, nil
	case node.ExitingConfirmed:
		return &ExitingConfirmed{From: from, To: to, Node: uaToWire(x.Node)}, nil
	}
	return nil, fmt.Errorf("wire: %T is not a cluster protocol message", msg)
}

// FromWire converts a received wire message back to package node's form
// and validates it: addresses well formed (from carries a uid; to may have
// uid 0 only in InitJoin), and gossip that satisfies every invariant the
// membership core relies on (members sorted, unique and of a live status,
// seen set and reachability observers among the members). Anything else
// returns an error wrapping ErrInvalid, and the message must be dropped.
func FromWire(msg proto.Message) (node.Message, error) {
	switch x := msg.(type) {
	case *InitJoin:
		h, err := header(x.GetFrom(), x.GetTo(), true)
		return node.InitJoin{Header: h}, err
	case *InitJoinAck:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		return node.InitJoinAck{Header: h}, err
	case *InitJoinNack:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		return node.InitJoinNack{Header: h}, err
	case *Join:
		return joinFromWire(x)
	case *Welcome:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		if err != nil {
			return nil, err
		}
		g, err := GossipFromWire(x.GetGossip())
		return node.Welcome{Header: h, Gossip: g}, err
	case *GossipEnvelope:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		if err != nil {
			return nil, err
		}
		g, err := GossipFromWire(x.GetGossip())
		return node.GossipEnvelope{Header: h, Gossip: g}, err
	case *GossipStatus:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		if err != nil {
			return nil, err
		}
		vc, err := clockFromWire(x.GetVersion())
		return node.GossipStatus{Header: h, Version: vc}, err
	case *Leave:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		if err != nil {
			return nil, err
		}
		a, err := addrFromWire(x.GetNode())
		return node.Leave{Header: h, Node: a}, err
	case *Down:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		if err != nil {
			return nil, err
		}
		a, err := addrFromWire(x.GetNode())
		return node.Down{Header: h, Node: a}, err
	case *Heartbeat:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		return node.Heartbeat{Header: h, Seq: x.GetSeq()}, err
	case *HeartbeatRsp:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		return node.HeartbeatRsp{Header: h, Seq: x.GetSeq()}, err
	case *ExitingConfirmed:
		h, err := header(x.GetFrom(), x.GetTo(), false)
		if err != nil {
			return nil, err
		}
		u, err := uaFromWire(x.GetNode(), false)
		return node.ExitingConfirmed{Header: h, Node: u}, err
	}
	return nil, invalid("%T is not a cluster message", msg)
}

func joinFromWire(x *Join) (node.Message, error) {
	h, err := header(x.GetFrom(), x.GetTo(), false)
	if err != nil {
		return nil, err
	}
	if err := checkStrings("role", x.GetRoles()); err != nil {
		return nil, err
	}
	if len(x.GetClusterId()) > MaxStringLen {
		return nil, invalid("cluster id longer than %d bytes", MaxStringLen)
	}
	return node.Join{Header: h, Roles: x.GetRoles(), ClusterID: x.GetClusterId()}, nil
}

func header(from, to *UniqueAddress, anyTo bool) (node.Header, error) {
	f, err := uaFromWire(from, false)
	if err != nil {
		return node.Header{}, fmt.Errorf("from: %w", err)
	}
	t, err := uaFromWire(to, anyTo)
	if err != nil {
		return node.Header{}, fmt.Errorf("to: %w", err)
	}
	return node.Header{From: f, To: t}, nil
}

func uaToWire(u membership.UniqueAddress) *UniqueAddress {
	return &UniqueAddress{Host: u.Host, Port: uint32(u.Port), Uid: u.UID}
}

func addrToWire(a membership.Address) *Address {
	return &Address{Host: a.Host, Port: uint32(a.Port)}
}

func checkHostPort(host string, port uint32) (membership.Address, error) {
	if host == "" || len(host) > MaxStringLen {
		return membership.Address{}, invalid("host %q: need 1..%d bytes", host, MaxStringLen)
	}
	if port < 1 || port > 65535 {
		return membership.Address{}, invalid("port %d: need 1..65535", port)
	}
	a := membership.Address{Host: host, Port: int(port)}
	if _, err := membership.ParseAddress(a.String()); err != nil {
		return membership.Address{}, invalid("address: %v", err)
	}
	return a, nil
}

func uaFromWire(u *UniqueAddress, zeroUIDOK bool) (membership.UniqueAddress, error) {
	if u == nil {
		return membership.UniqueAddress{}, invalid("missing address")
	}
	a, err := checkHostPort(u.GetHost(), u.GetPort())
	if err != nil {
		return membership.UniqueAddress{}, err
	}
	if u.GetUid() == 0 && !zeroUIDOK {
		return membership.UniqueAddress{}, invalid("address %v without uid", a)
	}
	return membership.UniqueAddress{Host: a.Host, Port: a.Port, UID: u.GetUid()}, nil
}

func addrFromWire(a *Address) (membership.Address, error) {
	if a == nil {
		return membership.Address{}, invalid("missing node address")
	}
	return checkHostPort(a.GetHost(), a.GetPort())
}

func checkStrings(what string, ss []string) error {
	if len(ss) > MaxRoles {
		return invalid("%d %ss: at most %d", len(ss), what, MaxRoles)
	}
	for _, s := range ss {
		if len(s) > MaxStringLen {
			return invalid("%s longer than %d bytes", what, MaxStringLen)
		}
	}
	return nil
}

// GossipToWire converts a gossip to its wire form.
func GossipToWire(g membership.Gossip) *Gossip {
	out := &Gossip{Version: clockToWire(g.Version), Reachability: &Reachability{}}
	for _, mb := range g.Members {
		out.Members = append(out.Members, &Member{
			Address:   uaToWire(mb.Address),
			Status:    MemberStatus(mb.Status),
			Roles:     mb.Roles,
			ClusterId: mb.ClusterID,
			UpNumber:  int32(mb.UpNumber),
		})
	}
	for _, u := range g.Seen {
		out.Seen = append(out.Seen, uaToWire(u))
	}
	for _, r := range g.Reachability.Records() {
		out.Reachability.Records = append(out.Reachability.Records, &ReachabilityRecord{
			Observer: uaToWire(r.Observer), Subject: uaToWire(r.Subject),
			Status: ReachStatus(r.Status) + 1, Version: r.Version,
		})
	}
	versions := g.Reachability.Versions()
	for _, obs := range sortedKeys(versions) {
		out.Reachability.Versions = append(out.Reachability.Versions, &ObserverVersion{Observer: uaToWire(obs), Version: versions[obs]})
	}
	return out
}

// GossipFromWire converts and validates a wire gossip (see FromWire).
func GossipFromWire(w *Gossip) (membership.Gossip, error) {
	if w == nil {
		return membership.Gossip{}, invalid("missing gossip")
	}
	if len(w.GetMembers()) > MaxMembers {
		return membership.Gossip{}, invalid("%d members: at most %d", len(w.GetMembers()), MaxMembers)
	}
	members := make([]membership.Member, 0, len(w.GetMembers()))
	for _, wm := range w.GetMembers() {
		mb, err := memberFromWire(wm)
		if err != nil {
			return membership.Gossip{}, err
		}
		members = append(members, mb)
	}
	g := membership.NewGossip(members...)
	for _, ws := range w.GetSeen() {
		u, err := uaFromWire(ws, false)
		if err != nil {
			return membership.Gossip{}, fmt.Errorf("seen: %w", err)
		}
		g = g.WithSeen(u)
	}
	r, err := reachabilityFromWire(w.GetReachability())
	if err != nil {
		return membership.Gossip{}, err
	}
	g = g.WithReachability(r)
	if g.Version, err = clockFromWire(w.GetVersion()); err != nil {
		return membership.Gossip{}, err
	}
	if err := g.CheckInvariants(); err != nil {
		return membership.Gossip{}, invalid("gossip: %v", err)
	}
	return g, nil
}

func memberFromWire(wm *Member) (membership.Member, error) {
	u, err := uaFromWire(wm.GetAddress(), false)
	if err != nil {
		return membership.Member{}, fmt.Errorf("member: %w", err)
	}
	st := membership.Status(wm.GetStatus())
	if wm.GetStatus() < MemberStatus_MEMBER_STATUS_JOINING || st >= membership.Removed {
		return membership.Member{}, invalid("member %v: status %v is not a live status", u, wm.GetStatus())
	}
	if wm.GetUpNumber() < 1 {
		return membership.Member{}, invalid("member %v: up-number %d", u, wm.GetUpNumber())
	}
	if err := checkStrings("role", wm.GetRoles()); err != nil {
		return membership.Member{}, err
	}
	if len(wm.GetClusterId()) > MaxStringLen {
		return membership.Member{}, invalid("member %v: cluster id longer than %d bytes", u, MaxStringLen)
	}
	mb := membership.NewMember(u, wm.GetRoles(), wm.GetClusterId())
	mb.Status = st
	mb.UpNumber = int(wm.GetUpNumber())
	if mb.UpNumber != membership.NotUp && (st == membership.Joining || st == membership.WeaklyUp) {
		return membership.Member{}, invalid("member %v: %v with up-number %d", u, st, mb.UpNumber)
	}
	return mb, nil
}

func reachabilityFromWire(w *Reachability) (membership.Reachability, error) {
	if len(w.GetRecords()) > MaxRecords || len(w.GetVersions()) > MaxRecords {
		return membership.Reachability{}, invalid("reachability larger than %d entries", MaxRecords)
	}
	type pair struct{ o, s membership.UniqueAddress }
	seen := map[pair]bool{}
	var recs []membership.Record
	for _, wr := range w.GetRecords() {
		o, err := uaFromWire(wr.GetObserver(), false)
		if err != nil {
			return membership.Reachability{}, fmt.Errorf("reachability observer: %w", err)
		}
		s, err := uaFromWire(wr.GetSubject(), false)
		if err != nil {
			return membership.Reachability{}, fmt.Errorf("reachability subject: %w", err)
		}
		if wr.GetStatus() < ReachStatus_REACH_STATUS_REACHABLE || wr.GetStatus() > ReachStatus_REACH_STATUS_TERMINATED {
			return membership.Reachability{}, invalid("reachability record %v->%v: status %v", o, s, wr.GetStatus())
		}
		if wr.GetVersion() < 0 {
			return membership.Reachability{}, invalid("reachability record %v->%v: version %d", o, s, wr.GetVersion())
		}
		if seen[pair{o, s}] {
			return membership.Reachability{}, invalid("reachability record %v->%v twice", o, s)
		}
		seen[pair{o, s}] = true
		recs = append(recs, membership.Record{Observer: o, Subject: s, Status: membership.ReachStatus(wr.GetStatus() - 1), Version: wr.GetVersion()})
	}
	versions := map[membership.UniqueAddress]int64{}
	for _, wv := range w.GetVersions() {
		o, err := uaFromWire(wv.GetObserver(), false)
		if err != nil {
			return membership.Reachability{}, fmt.Errorf("reachability version: %w", err)
		}
		if _, dup := versions[o]; dup || wv.GetVersion() < 0 {
			return membership.Reachability{}, invalid("reachability version of %v: duplicate or negative", o)
		}
		versions[o] = wv.GetVersion()
	}
	if len(recs) == 0 && len(versions) == 0 {
		return membership.Reachability{}, nil
	}
	return membership.NewReachability(recs, versions), nil
}

func clockToWire(vc membership.VectorClock) *VectorClock {
	out := &VectorClock{}
	for _, n := range vc.Nodes() {
		out.Entries = append(out.Entries, &VectorClockEntry{Node: n, Counter: vc.Get(n)})
	}
	return out
}

func clockFromWire(w *VectorClock) (membership.VectorClock, error) {
	if len(w.GetEntries()) > MaxClockNodes {
		return membership.VectorClock{}, invalid("vector clock of %d entries: at most %d", len(w.GetEntries()), MaxClockNodes)
	}
	entries := make(map[string]uint64, len(w.GetEntries()))
	for _, e := range w.GetEntries() {
		if e.GetNode() == "" || len(e.GetNode()) > 2*MaxStringLen {
			return membership.VectorClock{}, invalid("vector clock node %q", e.GetNode())
		}
		if _, dup := entries[e.GetNode()]; dup {
			return membership.VectorClock{}, invalid("vector clock node %q twice", e.GetNode())
		}
		if e.GetCounter() == math.MaxUint64 {
			return membership.VectorClock{}, invalid("vector clock node %q: counter overflows", e.GetNode())
		}
		entries[e.GetNode()] = e.GetCounter()
	}
	if len(entries) == 0 {
		return membership.VectorClock{}, nil
	}
	return membership.NewVectorClock(entries), nil
}

func sortedKeys(m map[membership.UniqueAddress]int64) []membership.UniqueAddress {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, membership.UniqueAddress.Compare)
	return out
}
