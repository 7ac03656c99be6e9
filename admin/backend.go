package admin

import (
	"context"
	"errors"
	"time"

	"github.com/otopcua/otopcua/configdb"
)

// ClusterSummary is one application ClusterId of the mesh on the overview
// page (/) and in GET /api/clusters.
type ClusterSummary struct {
	ClusterID string `json:"clusterId"`
	// Primary is the NodeId (host:port) of the ClusterId's Primary, "" when
	// it has none.
	Primary string `json:"primary"`
	// UpDrivers counts the Up members with role driver.
	UpDrivers int    `json:"upDrivers"`
	Members   int    `json:"members"`
	Epoch     uint64 `json:"epoch"`
}

// PanelMember is one member of a ClusterId in the Live redundancy panel.
type PanelMember struct {
	NodeID string `json:"nodeId"`
	// Status is the member status (Joining, WeaklyUp, Up, Leaving, Exiting).
	Status   string   `json:"status"`
	UpNumber int      `json:"upNumber"`
	Roles    []string `json:"roles"`
	// Role is Primary, Secondary or Detached (redundancy role).
	Role string `json:"role"`
	// ServiceLevel is what the node last advertised; HasServiceLevel is
	// false until one was heard.
	ServiceLevel    int  `json:"serviceLevel"`
	HasServiceLevel bool `json:"hasServiceLevel"`
	// Reachable: no member of the cluster observes this one unreachable.
	Reachable bool `json:"reachable"`
	// ConfigDb is the node's Config DB health as it advertised it: "ok",
	// "unreachable: …" or "unknown".
	ConfigDb       string `json:"configDb"`
	ApplicationURI string `json:"applicationUri"`
	OpcUaEndpoint  string `json:"opcuaEndpoint"`
	// Self marks the node serving the page.
	Self bool `json:"self"`
}

// FailoverRecord is one change of a ClusterId's Primary this node saw.
type FailoverRecord struct {
	At    time.Time `json:"at"`
	Epoch uint64    `json:"epoch"`
	// From and To are NodeIds; From is "" for the first Primary seen.
	From string `json:"from"`
	To   string `json:"to"`
}

// RedundancyPanel is the Live redundancy panel of one ClusterId
// (/clusters/{id}/redundancy and GET /api/clusters/{id}/redundancy).
type RedundancyPanel struct {
	ClusterID string `json:"clusterId"`
	// Primary is the NodeId of the current Primary ("" when none).
	Primary string        `json:"primary"`
	Members []PanelMember `json:"members"`
	// Downing is the downing strategy in force (e.g. "keep-oldest,
	// auto-down after 10s").
	Downing   string           `json:"downing"`
	Epoch     uint64           `json:"epoch"`
	Failovers []FailoverRecord `json:"failovers"`
	// FailoverAllowed is the peer guard's verdict against live state;
	// FailoverBlocked says why not when false.
	FailoverAllowed bool   `json:"failoverAllowed"`
	FailoverBlocked string `json:"failoverBlocked,omitempty"`
	// FailoverTarget is the node a failover would act on (the Primary as
	// redundancy.Elect names it).
	FailoverTarget string    `json:"failoverTarget,omitempty"`
	AsOf           time.Time `json:"asOf"`
	// Floating is the ClusterId's floating address as the node serving the
	// page sees it (nil when that node has none for this ClusterId).
	Floating *FloatingPanel `json:"floating,omitempty"`
	// Mirror is session mirroring (OpcUa:RedundancySupport
	// HotAndMirrored) as the node serving the page sees it; nil when that
	// node does not mirror, or the panel is of another ClusterId.
	Mirror *MirrorPanel `json:"mirror,omitempty"`
}

// MirrorPanel is the mirrored sessions table of the redundancy panel: what
// the node serving the page serves and mirrors, and per other member what
// it holds of that member's sessions and whether that member stands by
// for its own.
type MirrorPanel struct {
	// Node is the NodeId of the node serving the page; Served the sessions
	// it serves and mirrors.
	Node   string `json:"node"`
	Served int    `json:"served"`
	// Members are the other members, by NodeId, sorted.
	Members []MirrorMember `json:"members"`
	// Dropped counts sessions put back to Warm, by reason; Takeovers the
	// ActivateSessions of mirrored sessions here, by result.
	Dropped   map[string]uint64 `json:"dropped"`
	Takeovers map[string]uint64 `json:"takeovers"`
}

// MirrorMember is one other member in the mirrored sessions table.
type MirrorMember struct {
	NodeID string `json:"nodeId"`
	// Holds: the page's node holds sessions of this member (Held of them);
	// HeldReady: their snapshot arrived whole, so the page's node is a hot
	// standby for them (otopcua_mirror_ready 1). Until then a failover of
	// this member falls back to Warm.
	Holds     bool `json:"holds"`
	Held      int  `json:"held"`
	HeldReady bool `json:"heldReady"`
	// Standby: this member receives the page's node's sessions;
	// StandbyReady: it acknowledged their snapshot; LagBytes are sent and
	// not yet acknowledged.
	Standby      bool `json:"standby"`
	StandbyReady bool `json:"standbyReady"`
	LagBytes     int  `json:"lagBytes"`
}

// FloatingPanel is the floating address line of the redundancy panel.
type FloatingPanel struct {
	Address string `json:"address"`
	// Holder is who holds it as this node last saw ("none", a NodeId, or
	// a foreign MAC or resource id); Owner is who should ("" none).
	Holder string `json:"holder"`
	Owner  string `json:"owner"`
	// State is "ok", "moving" (holder ≠ owner), "drift: KIND" or
	// "conflict: a foreign holder".
	State string `json:"state"`
}

// FailoverResult is what a triggered failover acted on.
type FailoverResult struct {
	ClusterID string    `json:"clusterId"`
	Target    string    `json:"target"`
	TargetUID uint64    `json:"targetUid"`
	Epoch     uint64    `json:"epoch"`
	At        time.Time `json:"at"`
}

// ErrUnknownCluster is returned for a ClusterId with no member in the mesh.
var ErrUnknownCluster = errors.New("admin: no member of the mesh has this ClusterId")

// RefusedError is a failover the rules refused (fewer than two Up driver
// members, …): nothing changed and nothing was written. HTTP 409.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "failover refused: " + e.Reason }

// Backend is what the pages need of the running node. The host implements
// it; tests of the pages use a fake.
type Backend interface {
	// Clusters lists every ClusterId of the mesh, sorted by id.
	Clusters() []ClusterSummary
	// Redundancy is the live panel of id; ErrUnknownCluster when no member
	// has it.
	Redundancy(id string) (RedundancyPanel, error)
	// Failover makes the Primary of id leave gracefully after writing the
	// audit row (cluster.manual-failover, actor, target) to the Config DB.
	// A *RefusedError or ErrUnknownCluster changes nothing and writes
	// nothing; an audit write that fails is returned and nothing is sent.
	Failover(ctx context.Context, id, actor string) (FailoverResult, error)
	// Audit returns up to limit audit_log rows, newest first.
	Audit(ctx context.Context, limit int) ([]configdb.AuditEntry, error)
	// NodeID is the NodeId of the node serving the pages.
	NodeID() string
}
