package downing

import (
	"slices"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// DefaultAutoDownUnreachableAfter is the reference product's
// auto-down-unreachable-after, in ms.
const DefaultAutoDownUnreachableAfter = 15_000

// UnreachableSince is a member this node has seen become unreachable, and
// when (ms).
type UnreachableSince struct {
	Member m.Member
	Since  int64
}

// AutoDownInput is the snapshot auto-down decides on.
type AutoDownInput struct {
	// IsLeader: this node is the leader among the reachable members.
	IsLeader bool
	// Now in ms.
	Now int64
	// After is auto-down-unreachable-after in ms.
	After int64
	// Unreachable lists the unreachable members with the instant this node
	// first saw each one unreachable.
	Unreachable []UnreachableSince
}

// AutoDown returns the members to down (sorted): only the leader downs, and
// only members unreachable for at least After that are not already Down or
// Exiting (Akka's AutoDown). A non-leader returns nothing; when it becomes
// leader later, the members whose time is up are returned at once, as
// Akka's pending set.
func AutoDown(in AutoDownInput) []m.UniqueAddress {
	if !in.IsLeader {
		return nil
	}
	var out []m.UniqueAddress
	for _, u := range in.Unreachable {
		if u.Member.Status == m.Down || u.Member.Status == m.Exiting {
			continue
		}
		if in.Now-u.Since >= in.After {
			out = append(out, u.Member.Address)
		}
	}
	slices.SortFunc(out, m.UniqueAddress.Compare)
	return out
}
