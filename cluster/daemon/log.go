package daemon

// Log messages operators grep for. Their texts are stable: alerting rules
// and runbooks match them. Each line carries the member's address
// ("member", host:port), "uid", "status", "roles" and "clusterId" where a
// member is concerned.
const (
	// LogJoined: this node became a member, by joining a cluster or by
	// forming one ("formed": true).
	LogJoined = "cluster joined"
	// LogSelfFormed: the self-form fallback formed a cluster on this node
	// (no seed answered within Cluster:SelfFormAfter and none accepted a
	// TCP connection).
	LogSelfFormed = "cluster self-formed"
	// LogMemberUp: the leader moved a member (maybe this one) to Up.
	LogMemberUp = "cluster member Up"
	// LogUnreachable: a member became unreachable (failure detector or
	// crash fast path).
	LogUnreachable = "cluster member unreachable"
	// LogReachableAgain: an unreachable member answers again.
	LogReachableAgain = "cluster member reachable again"
	// LogDowned: a member (maybe this one) was marked Down.
	LogDowned = "cluster member downed"
	// LogRemoved: a member left the membership.
	LogRemoved = "cluster member removed"
	// LogNewIncarnation: a restarted process at a known address joins; its
	// previous incarnation is downed.
	LogNewIncarnation = "cluster new incarnation"
	// LogLeaving: a member (maybe this one) is leaving gracefully.
	LogLeaving = "cluster member leaving"
	// LogStopped: this node's membership ended ("reason": left, downed,
	// removed).
	LogStopped = "cluster node stopped"
)
