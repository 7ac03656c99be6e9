package redundancy

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// ErrInvalidSnapshot is wrapped by SnapshotFromWire for a message that a
// node must not act on.
var ErrInvalidSnapshot = errors.New("redundancy: invalid snapshot")

// Entry is one member's entry of a redundancy snapshot.
type Entry struct {
	// NodeID is the canonical host:port of the member's cluster address.
	NodeID string
	// UID is the member's incarnation.
	UID       uint64
	Role      Role
	ClusterID string
	// IsDriverPrimary: Role is RolePrimary.
	IsDriverPrimary bool
	// ApplicationURI and OpcUaEndpoint are what the node advertised in its
	// NodeStatus; "" until the singleton heard it.
	ApplicationURI string
	OpcUaEndpoint  string
	// AsOf is when the snapshot was built (the singleton's clock).
	AsOf time.Time
	// Status is the member status (Joining … Exiting).
	Status membership.Status
}

// Snapshot is the admin singleton's view of every member's redundancy
// role: RedundancyStateChanged in Go terms.
type Snapshot struct {
	// Entries by canonical host:port NodeId.
	Entries map[string]Entry
	// Epochs by ClusterId, for the ClusterIds that have members.
	Epochs EpochBook
	AsOf   time.Time
	// Publisher is the NodeId hosting the singleton instance.
	Publisher string
	// Sequence counts the snapshots of one singleton instance, from 1.
	Sequence uint64
}

// NodeInfo is what a node advertised about itself (wire.NodeStatus).
type NodeInfo struct {
	NodeID         string
	UID            uint64
	ClusterID      string
	ApplicationURI string
	OpcUaEndpoint  string
	ServiceLevel   byte
	At             time.Time
	// ConfigDb is the node's Config DB health as its own probe saw it;
	// ConfigDbError says why it is unreachable ("" otherwise, and at most
	// MaxConfigDbErrorLen bytes).
	ConfigDb      ConfigDbState
	ConfigDbError string
	// DevicesReached and DevicesTotal are the node's connected field
	// devices and its deployment's (0 and 0 from an older node or one
	// without the driver host); DevicesReached ≤ DevicesTotal.
	DevicesReached, DevicesTotal int
}

// ConfigDbState is a node's Config DB health as it advertises it.
type ConfigDbState int

// The Config DB states.
const (
	// ConfigDbUnknown: no probe finished yet, or the node is older than
	// the field.
	ConfigDbUnknown ConfigDbState = iota
	// ConfigDbOk: the last probe answered in time.
	ConfigDbOk
	// ConfigDbUnreachable: the last probe failed or timed out.
	ConfigDbUnreachable
)

// String is "unknown", "ok" or "unreachable".
func (s ConfigDbState) String() string {
	switch s {
	case ConfigDbOk:
		return "ok"
	case ConfigDbUnreachable:
		return "unreachable"
	}
	return "unknown"
}

// MaxConfigDbErrorLen bounds the Config DB error text kept from a
// NodeStatus (bytes); a longer one is cut.
const MaxConfigDbErrorLen = 512

// ConfigDbStateOf is the advertised state of a DB probe verdict (known
// false: no probe finished yet) and its error text.
func ConfigDbStateOf(st DbStatus, known bool) (ConfigDbState, string) {
	switch {
	case !known:
		return ConfigDbUnknown, ""
	case st.Reachable:
		return ConfigDbOk, ""
	}
	return ConfigDbUnreachable, truncateUTF8(st.Err, MaxConfigDbErrorLen)
}

var dbStateToWire = map[ConfigDbState]wire.ConfigDbState{
	ConfigDbUnknown:     wire.ConfigDbState_CONFIG_DB_STATE_UNKNOWN,
	ConfigDbOk:          wire.ConfigDbState_CONFIG_DB_STATE_OK,
	ConfigDbUnreachable: wire.ConfigDbState_CONFIG_DB_STATE_UNREACHABLE,
}

// dbStateFromWire maps the wire enum; unspecified (an older node) and any
// value this binary does not know (a newer node) are unknown.
func dbStateFromWire(s wire.ConfigDbState) ConfigDbState {
	switch s {
	case wire.ConfigDbState_CONFIG_DB_STATE_OK:
		return ConfigDbOk
	case wire.ConfigDbState_CONFIG_DB_STATE_UNREACHABLE:
		return ConfigDbUnreachable
	}
	return ConfigDbUnknown
}

// truncateUTF8 cuts s to at most n bytes without splitting a character,
// and replaces invalid UTF-8.
func truncateUTF8(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// NodeInfoFromWire converts and checks a NodeStatus.
func NodeInfoFromWire(m *wire.NodeStatus) (NodeInfo, error) {
	if m == nil {
		return NodeInfo{}, fmt.Errorf("%w: nil NodeStatus", ErrInvalidSnapshot)
	}
	if err := checkNodeID(m.GetNodeId()); err != nil {
		return NodeInfo{}, err
	}
	if m.GetServiceLevel() > 255 {
		return NodeInfo{}, fmt.Errorf("%w: service level %d", ErrInvalidSnapshot, m.GetServiceLevel())
	}
	i := NodeInfo{
		NodeID: m.GetNodeId(), UID: m.GetUid(), ClusterID: m.GetClusterId(),
		ApplicationURI: m.GetApplicationUri(), OpcUaEndpoint: m.GetOpcuaEndpoint(),
		ServiceLevel: byte(m.GetServiceLevel()), At: wire.FromUnixMs(m.GetAtUnixMs()),
		ConfigDb:     dbStateFromWire(m.GetConfigdbState()),
		DevicesTotal: int(m.GetDevicesTotal()),
	}
	i.DevicesReached = int(min(m.GetDevicesReached(), m.GetDevicesTotal()))
	if i.ConfigDb == ConfigDbUnreachable {
		i.ConfigDbError = truncateUTF8(m.GetConfigdbError(), MaxConfigDbErrorLen)
	}
	return i, nil
}

// ToWire converts i to its message.
func (i NodeInfo) ToWire() *wire.NodeStatus {
	return &wire.NodeStatus{
		NodeId: i.NodeID, Uid: i.UID, ClusterId: i.ClusterID, ApplicationUri: i.ApplicationURI,
		OpcuaEndpoint: i.OpcUaEndpoint, ServiceLevel: uint32(i.ServiceLevel), AtUnixMs: wire.UnixMs(i.At),
		ConfigdbState: dbStateToWire[i.ConfigDb], ConfigdbError: i.ConfigDbError,
		DevicesReached: uint32(max(i.DevicesReached, 0)), DevicesTotal: uint32(max(i.DevicesTotal, 0)),
	}
}

// MemberViewOf is what the election needs of m.
func MemberViewOf(m membership.Member) MemberView {
	return MemberView{
		NodeID: m.Address.NodeID(), Host: m.Address.Host, Port: m.Address.Port,
		Up: m.Status == membership.Up, UpNumber: m.UpNumber, Roles: m.Roles, ClusterID: m.ClusterID,
	}
}

// BuildSnapshot is the singleton's pure snapshot builder. Members that are
// Down or Removed get no entry; the others are elected with Elect (only Up
// members can be Primary) and keyed by their canonical host:port NodeId —
// never by host alone, so two nodes on one host are two entries. infos
// supplies ApplicationURI and OpcUaEndpoint when their incarnation matches
// the member's. The epochs of book advance where a Primary changed; the
// snapshot carries the epochs of the ClusterIds that have members, and the
// whole advanced book is returned for the next call.
func BuildSnapshot(members []membership.Member, infos map[string]NodeInfo, book EpochBook, now time.Time) (Snapshot, EpochBook) {
	var views []MemberView
	live := make(map[string]membership.Member)
	uids := make(map[string]uint64)
	for _, m := range members {
		if m.Status == membership.Down || m.Status == membership.Removed {
			continue
		}
		id := m.Address.NodeID()
		live[id] = m
		uids[id] = m.Address.UID
		views = append(views, MemberViewOf(m))
	}
	elections := Elect(views)
	next := AdvanceEpochs(book, elections, uids, now)
	s := Snapshot{Entries: make(map[string]Entry, len(live)), Epochs: make(EpochBook, len(elections)), AsOf: now}
	for cid, e := range elections {
		s.Epochs[cid] = next[cid]
		for id, role := range e.Roles {
			m := live[id]
			en := Entry{
				NodeID: id, UID: m.Address.UID, Role: role, ClusterID: cid,
				IsDriverPrimary: role == RolePrimary, AsOf: now, Status: m.Status,
			}
			if info, ok := infos[id]; ok && info.UID == m.Address.UID {
				en.ApplicationURI, en.OpcUaEndpoint = info.ApplicationURI, info.OpcUaEndpoint
			}
			s.Entries[id] = en
		}
	}
	return s, next
}

// PrimaryChanged reports whether the Primary that members elect differs,
// for some ClusterId, from the one book records: a snapshot that must go
// out at once instead of after the debounce, so that a failover reaches
// clients in about the detection time. An empty book (nothing published
// yet) reports false.
func PrimaryChanged(members []membership.Member, book EpochBook) bool {
	if len(book) == 0 {
		return false
	}
	var views []MemberView
	for _, m := range members {
		if m.Status != membership.Down && m.Status != membership.Removed {
			views = append(views, MemberViewOf(m))
		}
	}
	for cid, e := range Elect(views) {
		if old, ok := book[cid]; e.Primary != "" && (!ok || old.Primary != e.Primary) {
			return true
		}
	}
	return false
}

var roleToWire = map[Role]wire.Role{
	RolePrimary: wire.Role_ROLE_PRIMARY, RoleSecondary: wire.Role_ROLE_SECONDARY, RoleDetached: wire.Role_ROLE_DETACHED,
}

// ToWire converts s to its message.
func (s Snapshot) ToWire() *wire.RedundancyStateChanged {
	m := &wire.RedundancyStateChanged{
		Entries:    make(map[string]*wire.NodeRedundancyState, len(s.Entries)),
		Epochs:     make(map[string]*wire.ClusterEpoch, len(s.Epochs)),
		AsOfUnixMs: wire.UnixMs(s.AsOf), Publisher: s.Publisher, Sequence: s.Sequence,
	}
	for id, e := range s.Entries {
		m.Entries[id] = &wire.NodeRedundancyState{
			NodeId: e.NodeID, Uid: e.UID, Role: roleToWire[e.Role], ClusterId: e.ClusterID,
			IsDriverPrimary: e.IsDriverPrimary, ApplicationUri: e.ApplicationURI, OpcuaEndpoint: e.OpcUaEndpoint,
			AsOfUnixMs: wire.UnixMs(e.AsOf), Status: e.Status.String(),
		}
	}
	for cid, ep := range s.Epochs {
		m.Epochs[cid] = &wire.ClusterEpoch{ClusterId: cid, Epoch: ep.Epoch, Primary: ep.Primary, PrimaryUid: ep.PrimaryUID}
	}
	return m
}

// SnapshotFromWire converts and validates a received snapshot: every key is
// a canonical host:port NodeId equal to its entry's node_id, every role is
// known and agrees with is_driver_primary, every status is a live member
// status, and an epoch's Primary is an entry of its ClusterId with role
// Primary. It never panics, whatever the input.
func SnapshotFromWire(m *wire.RedundancyStateChanged) (Snapshot, error) {
	if m == nil {
		return Snapshot{}, fmt.Errorf("%w: nil message", ErrInvalidSnapshot)
	}
	s := Snapshot{
		Entries: make(map[string]Entry, len(m.GetEntries())), Epochs: make(EpochBook, len(m.GetEpochs())),
		AsOf: wire.FromUnixMs(m.GetAsOfUnixMs()), Publisher: m.GetPublisher(), Sequence: m.GetSequence(),
	}
	for key, e := range m.GetEntries() {
		en, err := entryFromWire(key, e)
		if err != nil {
			return Snapshot{}, err
		}
		s.Entries[key] = en
	}
	for cid, ep := range m.GetEpochs() {
		if ep == nil || ep.GetClusterId() != cid {
			return Snapshot{}, fmt.Errorf("%w: epoch keyed %q names ClusterId %q", ErrInvalidSnapshot, cid, ep.GetClusterId())
		}
		if p := ep.GetPrimary(); p != "" {
			if en, ok := s.Entries[p]; !ok || en.Role != RolePrimary || en.ClusterID != cid {
				return Snapshot{}, fmt.Errorf("%w: epoch of %q names Primary %q without a Primary entry", ErrInvalidSnapshot, cid, p)
			}
		}
		s.Epochs[cid] = EpochState{Epoch: ep.GetEpoch(), Primary: ep.GetPrimary(), PrimaryUID: ep.GetPrimaryUid()}
	}
	return s, nil
}

func entryFromWire(key string, e *wire.NodeRedundancyState) (Entry, error) {
	if e == nil {
		return Entry{}, fmt.Errorf("%w: entry %q is empty", ErrInvalidSnapshot, key)
	}
	if err := checkNodeID(key); err != nil {
		return Entry{}, err
	}
	if e.GetNodeId() != key {
		return Entry{}, fmt.Errorf("%w: entry keyed %q names node %q", ErrInvalidSnapshot, key, e.GetNodeId())
	}
	var role Role
	for r, w := range roleToWire {
		if w == e.GetRole() {
			role = r
		}
	}
	if role == RoleUnknown {
		return Entry{}, fmt.Errorf("%w: entry %q has role %v", ErrInvalidSnapshot, key, e.GetRole())
	}
	if e.GetIsDriverPrimary() != (role == RolePrimary) {
		return Entry{}, fmt.Errorf("%w: entry %q: is_driver_primary %v with role %v", ErrInvalidSnapshot, key, e.GetIsDriverPrimary(), role)
	}
	st, ok := membership.ParseStatus(e.GetStatus())
	if !ok || st == membership.Down || st == membership.Removed {
		return Entry{}, fmt.Errorf("%w: entry %q has status %q", ErrInvalidSnapshot, key, e.GetStatus())
	}
	return Entry{
		NodeID: key, UID: e.GetUid(), Role: role, ClusterID: e.GetClusterId(), IsDriverPrimary: e.GetIsDriverPrimary(),
		ApplicationURI: e.GetApplicationUri(), OpcUaEndpoint: e.GetOpcuaEndpoint(),
		AsOf: wire.FromUnixMs(e.GetAsOfUnixMs()), Status: st,
	}, nil
}

// checkNodeID accepts only the canonical host:port form of a NodeId (what
// membership.UniqueAddress.NodeID returns): not a bare host, not the Akka
// URI form.
func checkNodeID(id string) error {
	a, err := membership.ParseAddress(id)
	if err != nil || a.String() != id {
		return fmt.Errorf("%w: %q is not a canonical host:port NodeId", ErrInvalidSnapshot, id)
	}
	return nil
}
