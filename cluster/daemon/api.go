package daemon

import (
	"encoding/json"
	"net/http"
	"strconv"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// MembersView is the JSON document of GET /api/cluster/members.
type MembersView struct {
	Self AddressView `json:"self"`
	// SelfStatus is this node's member status, "None" before it joined
	// and "Removed" after it left.
	SelfStatus string `json:"selfStatus"`
	// Leader is the leader's host:port, "" when there is none.
	Leader    string `json:"leader"`
	Converged bool   `json:"converged"`
	// Members sorted by address (host, then port number).
	Members []MemberView `json:"members"`
	// Oldest maps each role to the oldest member carrying it.
	Oldest map[string]string `json:"oldest"`
	// RoleLeader maps each role to its role leader.
	RoleLeader map[string]string `json:"roleLeader"`
}

// AddressView is a node's host:port and incarnation uid (decimal).
type AddressView struct {
	Address string `json:"address"`
	UID     string `json:"uid"`
}

// MemberView is one member in MembersView.
type MemberView struct {
	Address   string   `json:"address"`
	UID       string   `json:"uid"`
	Status    string   `json:"status"`
	Roles     []string `json:"roles"`
	ClusterID string   `json:"clusterId"`
	// UpNumber is the member's age rank (lower is older), 0 before Up.
	UpNumber int `json:"upNumber"`
	// Reachable: no member that is not Down holds it unreachable in this
	// node's view.
	Reachable bool `json:"reachable"`
	// IsOldest lists the roles of which this member is the oldest.
	IsOldest []string `json:"isOldest"`
}

// Members renders a membership view for the HTTP API. finished reports
// that this node's membership ended.
func Members(st m.State, finished bool) MembersView {
	g := st.Gossip
	v := MembersView{
		Self:       AddressView{Address: st.Self.NodeID(), UID: strconv.FormatUint(st.Self.UID, 10)},
		SelfStatus: "None",
		Members:    []MemberView{},
		Oldest:     map[string]string{},
		RoleLeader: map[string]string{},
	}
	if self, ok := st.SelfMember(); ok {
		v.SelfStatus = self.Status.String()
	} else if finished {
		v.SelfStatus = m.Removed.String()
	}
	if l, ok := st.Leader(); ok {
		v.Leader = l.NodeID()
	}
	v.Converged = !g.IsEmpty() && st.Convergence(nil)
	oldestOf := map[m.UniqueAddress][]string{}
	for _, role := range g.AllRoles() {
		if o, ok := st.Oldest(role); ok {
			v.Oldest[role] = o.Address.NodeID()
			oldestOf[o.Address] = append(oldestOf[o.Address], role)
		}
		if l, ok := st.RoleLeader(role); ok {
			v.RoleLeader[role] = l.NodeID()
		}
	}
	for _, mb := range g.Members {
		up := mb.UpNumber
		if up == m.NotUp {
			up = 0
		}
		roles := append([]string{}, mb.Roles...)
		oldest := append([]string{}, oldestOf[mb.Address]...)
		v.Members = append(v.Members, MemberView{
			Address: mb.Address.NodeID(), UID: strconv.FormatUint(mb.Address.UID, 10),
			Status: mb.Status.String(), Roles: roles, ClusterID: mb.ClusterID, UpNumber: up,
			Reachable: mb.Address == st.Self || st.IsReachableExcludingDownedObservers(mb.Address),
			IsOldest:  oldest,
		})
	}
	return v
}

// MembersHandler serves GET /api/cluster/members (MembersView as JSON).
func (d *Daemon) MembersHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		st, info := d.hub.snapshot()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(Members(st, info.Finished))
	})
}
