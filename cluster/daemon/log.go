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
	// LogRefusedJoin: a node's join handshake message did not prove this
	// node's Cluster:Secret, or came from a node whose cluster protocol
	// generation this one does not work with; the line continues with the
	// address and the cause ("wrong Cluster:Secret", "no Cluster:Secret
	// proof", "it speaks cluster protocol generation 2 (works with 2 and
	// newer) and this node generation 1 (works with 1 and newer); …, see
	// docs/releases.md (Compatibility)"). At most once per address and
	// cause per minute.
	LogRefusedJoin = "cluster: refused join from"
	// LogJoinRefusedBy: a peer refused this node's join handshake (its
	// JoinRefused answer); the line continues with the peer's address and
	// the cause (for an incompatible protocol, both generations; the
	// "hint" attribute points to docs/releases.md). At most once per
	// address per minute.
	LogJoinRefusedBy = "cluster: join refused by"
	// LogNotFormingAlone: this node would form a cluster of its own (the
	// first seed after seed-node-timeout, or the self-form fallback) but a
	// member of the mesh refused it (LogJoinRefusedBy); it keeps asking to
	// join instead. The line continues with the refusing peer and the
	// cause. At most once per minute.
	LogNotFormingAlone = "cluster: not forming a cluster of my own"
	// LogSeedsSilent: this node has been looking for its cluster for
	// SilentSeedsAfter and no seed answered; the line names the likely
	// causes (Cluster:Tls or Cluster:Secret differ, seeds down). At most
	// once per minute.
	LogSeedsSilent = "cluster: no seed node answers this node's join"
)
