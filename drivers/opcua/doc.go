// Package opcua is the OPC UA client driver ("driver": "opcua"): it
// mirrors the variables of an upstream OPC UA server, or of an upstream
// redundant set followed by its ServiceLevel, into the pair's namespace.
// It is built on the project's own client (opcua/client) in its Mirrored
// mode.
//
// # Data path
//
// The driver is a drivers.Pusher: one subscription per device on the
// active upstream server, one monitored item per tag with the tag's
// sampling interval (default: the device's publishingInterval; 0 = every
// change) and absolute deadband, queue size 100 (opcua/client's
// HotQueueSize: what waits upstream during a break), DiscardOldest. Every
// notification is handed to the sink as it arrives (in batches of at most
// maxBatch), so no change is coalesced on our side.
//
// # Status of a tag
//
//	Good                   the upstream's value, with its SourceTimestamp.
//	<the upstream's code>  the upstream's Bad (or Uncertain) status passes
//	                       through; the last value stays.
//	BadNoCommunication     never read: before the first connect.
//	BadCommunicationError  no upstream server reachable (at start, or the
//	                       client lost every server); Good again when the
//	                       re-created or transferred subscription delivers.
//	BadNodeIdUnknown,      the tag does not match the upstream (checked at
//	BadTypeMismatch, …     each connect: nsu= namespace not served, node
//	                       unknown, DataType not the document's type); the
//	                       tag is left out of the subscription and an Error
//	                       log line names it.
//
// # Before deployment
//
// UpstreamTypes asks an upstream the same questions once, for otopcua
// deploy: it resolves every tag as the connect-time check does (the same
// resolve, translate and typeName) and returns each node's DataType and
// ValueRank, so that a tag without type takes the upstream's and a wrong
// one is refused before any node receives the document.
//
// # browsePath and mirror
//
// A tag may name its upstream node by browsePath (deployment.ParseBrowsePath):
// the paths are resolved at each connect with TranslateBrowsePathsToNodeIds
// from the Objects folder (maxPathsPerCall per request), then checked like
// a nodeId (DataType). An unresolved path is BadNoMatch (or the upstream's
// status for it) and named in an Error line.
//
// A device's mirror is browsed at each connect (discover: breadth first,
// at most MaxNodes nodes and MaxDepth folder levels, mirrorDeadline for
// the whole browse; the Variables' attributes and EURange/EngineeringUnits
// read in batches) and handed to drivers.Options.OnMirror when its
// fingerprint differs from the last one handed. Its Variables join the
// subscription with handles after the tags' and reach the sink as
// changes with Change.Mirror set to their key (drivers.MirrorKey), the
// upstream's value and status as they are. Every refresh period the
// subtree is browsed again; a different fingerprint ends the session
// (errMirrorChanged), and the next one mirrors and subscribes anew while
// the values stay.
//
// # Reconnects
//
// opcua/client reconnects by itself: after a network break the same
// session is activated on a new channel and the upstream republishes what
// it sent meanwhile (no change lost, no orphan session upstream); a
// server that refuses — it restarted, or it is another server of an
// upstream set — gets a new session, to which the subscription is
// transferred (TransferSubscriptions) or, when the server lost it,
// re-created; its initial values make the tags Good. A re-created
// subscription means a server that lost ours (restarted, or another of
// the set): the driver then connects anew and checks every tag again
// (namespace indexes, DataTypes) before subscribing. In an upstream
// redundant set the client moves to the best ServiceLevel (Part 4
// §6.6.2.4); a planned move leaves the old session to expire there
// (60 s). A device with no server reachable at start retries with
// drivers.Backoff.
//
// # Bounds
//
// Every request has the device's timeout (default 1 s). The client's
// notification channel (1,024) is the per-device queue: when the sink
// falls behind it holds back this upstream's Publish loop only (the
// upstream's own queues overflow and it reports that), never another
// device or our clients. A write is sent once and waits at most the
// device's timeout.
//
// # Upstream conditions
//
// A device with "alarms" (deployment.UpstreamAlarms) also mirrors the
// upstream's Part 9 conditions (alarms.go): one event item on the notifier
// (default the Server object) in the same subscription, its filter
// selecting the condition fields of ConditionType and its subtypes and the
// RefreshStart/RefreshEnd events; a ConditionRefresh after every subscribe
// and every failover that kept the subscription. A refresh is reported to
// Options.OnConditions once, whole, at its RefreshEnd; every other
// condition event (the trunk only: a branch is left out) at once. At most
// alarms.max conditions are kept (a new one beyond is left out and logged
// once per refresh). AckCondition calls Acknowledge or Confirm upstream
// with the condition's last EventId, once, within the device's timeout.
//
// # Duties of the caller
//
//  1. Run the driver's Run on a goroutine of its own (dataplane.Host
//     does) with a sink that never blocks.
//  2. Write only on the Primary (dataplane.Writes); map errors with
//     drivers.StatusOf: the upstream's own status is returned as a
//     *drivers.StatusError.
//  3. Close to end the upstream session; Close never blocks.
//  4. With "alarms": pass Options.OnConditions (it must not block) and
//     send condition methods only from the Primary (AckCondition).
//  4. For a device with a mirror, pass OnMirror and put the nodes it
//     receives in the address space before it returns; route a change
//     with Change.Mirror to that node, and a write to a mirrored
//     Variable to Write with its key as the tag.
package opcua
