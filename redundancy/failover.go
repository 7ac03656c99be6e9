package redundancy

import (
	"errors"
	"fmt"
)

// ErrNoMember is wrapped by the *FailoverRefusedError of a ClusterId that
// no member of the mesh carries (a mistyped id, or a site that is down).
var ErrNoMember = errors.New("redundancy: no member has this ClusterId")

// FailoverRefusedError is a manual failover the peer guard refused; Reason
// says why in words an operator can act on. Nothing was done.
type FailoverRefusedError struct {
	ClusterID string
	Reason    string
	// noMember marks the refusal for a ClusterId without members
	// (errors.Is(err, ErrNoMember)).
	noMember bool
}

func (e *FailoverRefusedError) Error() string {
	return fmt.Sprintf("manual failover of ClusterId %q refused: %s", e.ClusterID, e.Reason)
}

// Unwrap returns ErrNoMember when the ClusterId has no member.
func (e *FailoverRefusedError) Unwrap() error {
	if e.noMember {
		return ErrNoMember
	}
	return nil
}

// PlanFailover names the node a manual failover of clusterID acts on: the
// ClusterId's Primary exactly as Elect names it (the oldest Up driver
// member), which then leaves gracefully so that the next oldest takes over.
//
// It refuses (*FailoverRefusedError) when no member carries clusterID
// (errors.Is ErrNoMember), or when fewer than two Up driver members exist
// there: with one, a failover would only shut the ClusterId's sole server
// down. Two incarnations at one NodeId count once. members is the live
// membership view; the function is pure.
func PlanFailover(members []MemberView, clusterID string) (MemberView, error) {
	var upDrivers []string
	seen := map[string]bool{}
	known := false
	for _, m := range members {
		if m.ClusterID != clusterID {
			continue
		}
		known = true
		if m.Up && m.HasRole(RoleDriver) && !seen[m.NodeID] {
			seen[m.NodeID] = true
			upDrivers = append(upDrivers, m.NodeID)
		}
	}
	refuse := func(reason string) (MemberView, error) {
		return MemberView{}, &FailoverRefusedError{ClusterID: clusterID, Reason: reason, noMember: !known}
	}
	switch {
	case !known:
		return refuse("no member of the mesh has this ClusterId")
	case len(upDrivers) == 0:
		return refuse("no Up driver member: the ClusterId has no Primary to fail over")
	case len(upDrivers) == 1:
		return refuse(fmt.Sprintf("only one Up driver member (%s): a failover would be a shutdown", upDrivers[0]))
	}
	primary, _ := oldestDriver(members, clusterID) // Elect's Primary
	return primary, nil
}
