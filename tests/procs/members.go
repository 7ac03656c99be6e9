package procs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MembersPath is the HTTP endpoint with a node's view of the cluster.
const MembersPath = "/api/cluster/members"

// ClusterView is the JSON of GET /api/cluster/members: one node's view of
// the cluster.
type ClusterView struct {
	Self       UniqueAddress     `json:"self"`
	SelfStatus string            `json:"selfStatus"` // "None" before joining
	Leader     string            `json:"leader"`
	Converged  bool              `json:"converged"`
	Members    []Member          `json:"members"`
	Oldest     map[string]string `json:"oldest"`     // role → address
	RoleLeader map[string]string `json:"roleLeader"` // role → address
}

// UniqueAddress is an address and the uid of one process start there.
type UniqueAddress struct {
	Address string `json:"address"`
	UID     UID    `json:"uid"`
}

// UID is a process incarnation's uid. It decodes from a JSON string or
// number.
type UID string

// UnmarshalJSON accepts "123" and 123.
func (u *UID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*u = UID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("uid %s: %w", b, err)
	}
	*u = UID(n.String())
	return nil
}

// Member is one member in a node's view.
type Member struct {
	Address   string   `json:"address"`
	UID       UID      `json:"uid"`
	Status    string   `json:"status"`
	Roles     []string `json:"roles"`
	ClusterID string   `json:"clusterId"`
	UpNumber  int      `json:"upNumber"`
	Reachable bool     `json:"reachable"`
	IsOldest  []string `json:"isOldest"`
}

// Member statuses as the endpoint spells them.
const (
	StatusNone    = "None"
	StatusJoining = "Joining"
	StatusWeakly  = "WeaklyUp"
	StatusUp      = "Up"
	StatusLeaving = "Leaving"
	StatusExiting = "Exiting"
	StatusDown    = "Down"
	StatusRemoved = "Removed"
)

// Member returns the member at address, if the view has one.
func (v *ClusterView) Member(address string) (Member, bool) {
	for _, m := range v.Members {
		if m.Address == address {
			return m, true
		}
	}
	return Member{}, false
}

// UpAddresses are the addresses of the Up members, sorted.
func (v *ClusterView) UpAddresses() []string {
	var out []string
	for _, m := range v.Members {
		if m.Status == StatusUp {
			out = append(out, m.Address)
		}
	}
	sort.Strings(out)
	return out
}

// HasRole reports whether the member has role.
func (m Member) HasRole(role string) bool { return slices.Contains(m.Roles, role) }

// OldestUp returns the oldest Up member carrying role within clusterID (""
// means any ClusterId): lowest up-number, ties by address — the election's
// rule, computed from the view's member list.
func (v *ClusterView) OldestUp(role, clusterID string) (Member, bool) {
	var best Member
	found := false
	for _, m := range v.Members {
		if m.Status != StatusUp || !m.HasRole(role) || (clusterID != "" && m.ClusterID != clusterID) {
			continue
		}
		if !found || m.UpNumber < best.UpNumber || (m.UpNumber == best.UpNumber && AddressLess(m.Address, best.Address)) {
			best, found = m, true
		}
	}
	return best, found
}

// AddressLess orders "host:port" addresses the way the cluster does: by
// host, then by port as a number.
func AddressLess(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	if ha != hb {
		return ha < hb
	}
	na, _ := strconv.Atoi(pa)
	nb, _ := strconv.Atoi(pb)
	return na < nb
}

// SelfMember is this node's own entry in its view.
func (v *ClusterView) SelfMember() (Member, bool) {
	for _, m := range v.Members {
		if m.Address == v.Self.Address && m.UID == v.Self.UID {
			return m, true
		}
	}
	return Member{}, false
}

// String is a compact one-line rendering for test logs.
func (v *ClusterView) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s#%s %s leader=%s converged=%v [", v.Self.Address, v.Self.UID, v.SelfStatus, v.Leader, v.Converged)
	for i, m := range v.Members {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s#%s %s(%d)", m.Address, m.UID, m.Status, m.UpNumber)
		if !m.Reachable {
			b.WriteString(" unreachable")
		}
		if m.ClusterID != "" {
			b.WriteString(" " + m.ClusterID)
		}
	}
	fmt.Fprintf(&b, "] oldest=%v", v.Oldest)
	return b.String()
}

// FetchView GETs url (a node's base HTTP URL) + MembersPath with client
// (nil: http.DefaultClient) within timeout, without credentials (a node
// with Http:AnonymousRead).
func FetchView(client *http.Client, url string, timeout time.Duration) (*ClusterView, error) {
	return fetchView(client, url, "", timeout)
}

// fetchView is FetchView sending token as a bearer token ("": none).
func fetchView(client *http.Client, url, token string, timeout time.Duration) (*ClusterView, error) {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+MembersPath, nil)
	if err != nil {
		return nil, err
	}
	setToken(req, token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", MembersPath, resp.Status, strings.TrimSpace(buf.String()))
	}
	var v ClusterView
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		return nil, fmt.Errorf("GET %s: %w: %s", MembersPath, err, buf.String())
	}
	return &v, nil
}

// Members fetches the node's view of the cluster (GET /api/cluster/members)
// within 1 s, so a stopped or partitioned node cannot hang the caller.
func (n *Node) Members() (*ClusterView, error) {
	return fetchView(n.httpClient(), n.HTTP(), n.Token, time.Second)
}

// ClusterAddr is the node's cluster address as peers see it,
// "PublicHostname:Port" from its configuration.
func (n *Node) ClusterAddr() string {
	c, _ := n.Config["Cluster"].(map[string]any)
	host, _ := c["PublicHostname"].(string)
	return fmt.Sprintf("%s:%d", host, intAt(n.Config, "Cluster", "Port"))
}
