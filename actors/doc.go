// Package actors is otopcua's protoactor-go bootstrap: one actor system per
// process with the remote transport listening on the cluster port, logging
// through the host's slog logger, and the defaults that protoactor-go gets
// wrong for a cluster of a few long-lived nodes. It also holds the small
// helpers every actor of otopcua uses (ask with a timeout, supervision
// strategies, the injectable clock) and a test kit (Probe).
//
// What Start changes from protoactor-go's defaults, and why (measured on
// module v0.0.0-20240822202345-3c0e61ca19c9):
//
//   - the port is checked before the remote starts, and a taken port is an
//     error naming Cluster:Port (protoactor panics instead);
//   - each peer's send queue starts small (SendQueueSize, default 64
//     slots) instead of reserving 1,000,000 slots (≈ 16 MB) per peer;
//   - a failed connection attempt is retried once (ConnectAttempts)
//     instead of five times with 2 s blocking sleeps: the cluster daemon
//     gates sends to a dead peer behind its own TCP probe and reconnects
//     as soon as the peer listens again;
//   - the process registry's 1,024 buckets have one lock shard each
//     instead of concurrent-map's 32 (registryShards: 2.8 MB less heap
//     for the life of the node);
//   - gRPC's flow-control window is fixed at 1 MB (streamWindow), which
//     turns off its bandwidth-delay estimator: a PING and its ACK for
//     each message on a quiet stream, wake-ups of both nodes of an idle
//     pair;
//   - protoactor's own Info lines are logged at Debug, as JSON through the
//     host's handler (it logs coloured text to stderr by default);
//   - an actor that peers reach by name is spawned with RemoteMailbox:
//     protoactor lists a spawning actor's PID before its mailbox can
//     schedule, and a remote message arriving in between kills the process.
//
// Caller's duties: call Shutdown once, with graceful=false when a peer is
// known dead (a graceful stop waits while protoactor retries that peer);
// send only generated protobuf messages to remote PIDs (the JSON
// serializer cannot send).
package actors
