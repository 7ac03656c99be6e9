package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/otopcua/otopcua/redundancy"
)

// membersPath is the HTTP endpoint with a node's view of the cluster.
const membersPath = "/api/cluster/members"

// clusterView is the part of GET /api/cluster/members the demo shows.
type clusterView struct {
	Self struct {
		Address string `json:"address"`
	} `json:"self"`
	SelfStatus string   `json:"selfStatus"`
	Members    []member `json:"members"`
}

type member struct {
	Address   string   `json:"address"`
	Status    string   `json:"status"`
	Roles     []string `json:"roles"`
	ClusterID string   `json:"clusterId"`
	UpNumber  int      `json:"upNumber"`
	Reachable bool     `json:"reachable"`
}

// self is the node's own member entry.
func (v *clusterView) self() (member, bool) {
	for _, m := range v.Members {
		if m.Address == v.Self.Address {
			return m, true
		}
	}
	return member{}, false
}

// oldestDriver is the address of the Primary of the node's own ClusterId
// by the election's rule (redundancy.Elect: oldest Up driver); "" when
// there is none.
func (v *clusterView) oldestDriver() string {
	self, _ := v.self()
	views := make([]redundancy.MemberView, 0, len(v.Members))
	for _, m := range v.Members {
		host, port, _ := net.SplitHostPort(m.Address)
		p, _ := strconv.Atoi(port)
		views = append(views, redundancy.MemberView{
			NodeID: m.Address, Host: host, Port: p, Up: m.Status == "Up",
			UpNumber: m.UpNumber, Roles: m.Roles, ClusterID: m.ClusterID,
		})
	}
	return redundancy.Elect(views)[self.ClusterID].Primary
}

// fetchView GETs base + membersPath with the API token within timeout.
func fetchView(ctx context.Context, client *http.Client, base, token string, timeout time.Duration) (*clusterView, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+membersPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", membersPath, resp.Status)
	}
	var v clusterView
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("GET %s: %w", membersPath, err)
	}
	return &v, nil
}
