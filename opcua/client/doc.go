// Package client is otopcua's redundancy-aware OPC UA client: it connects
// to the best server of a non-transparent redundant set and follows the
// set as it changes. The `otopcua client` CLI, the failover drills and the
// failover benchmark use it; it works against any OPC UA server
// (otopcua's own, node-opcua's, ...) with security None or, with
// Options.Security, a signed or signed-and-encrypted policy: every server
// of the set is then reached on its own endpoint of that policy and mode,
// with the certificate its GetEndpoints answer presents once
// Security.TrustServer accepts it.
//
// What it does (OPC UA Part 4 §6.6.2.4, client behaviour for
// non-transparent redundancy):
//
//   - Discovery: the set is the URLs it was given plus what the servers
//     say: Server.ServerArray (i=2254), ServerRedundancy.ServerUriArray
//     (i=11314) and FindServers (their discovery URLs). Servers are told
//     apart by ApplicationUri; two URLs of one server are one server.
//   - Watching: every server of the set it can reach gets a session with a
//     small subscription on Server.ServiceLevel (i=2267). Its Publish
//     responses are both the live level and the liveness signal: a closed
//     connection, or no response for Options.LostAfter, is a loss.
//   - Selection (Selector, a pure rule): connect to the highest level;
//     leave the active server when its connection is lost, at once when its
//     level leaves the Healthy band (below 200, or 0 = Maintenance) and
//     another server is higher, or when another server has held a strictly
//     higher level for Options.PreferHold (default 5 s) — so a client that
//     landed on the Secondary (240) follows the Primary (250) without
//     flapping on a blip.
//   - Failover: the user's subscriptions are re-created on the new server
//     (TransferSubscriptions when the new session is on the server that
//     holds them, otherwise CreateSubscription + CreateMonitoredItems), and
//     the failover is reported as an Event whose FailoverTime is Part 4's:
//     connection interruption → first Publish response from the backup.
//     Reconnects back off (Options.MinBackoff doubling to MaxBackoff).
//
// Modes (Options.Mode, mode.go; Part 4 §6.6.2.4.5): warm is the failover
// above; hot-a also places every user subscription on the other reachable
// servers with its items in Sampling and switches the new active server's
// items to Reporting at a failover; hot-b places them Reporting everywhere;
// both pass each value through Dedup (dedup.go, a pure rule), and the
// promoted placement publishes what it holds at once (userSub.flush: a
// ModifySubscription to the fastest interval, put back one interval
// later). mirrored keeps one session and, after a loss or on a planned
// move, activates that session on a new channel to the next server and
// republishes what was not received (mirror.go,
// uaclient.Session.Reactivate); a refusal takes the warm path.
// auto chooses from the first server's RedundancySupport (ModeFor).
//
// Invariants:
//  1. At most one server is active; user subscriptions exist only there,
//     except in the Hot modes, where they exist on every reachable server
//     that accepted them and only the active one's is moved or promoted.
//  2. Every request has a deadline (Options.Timeout); nothing blocks
//     forever on a silent server.
//  3. Every response passes uawire.CheckService before it is decoded.
//  4. Nothing the client remembers per value grows without bound: Dedup
//     keeps two windows per node (at most MaxRemembered values), the
//     sequence numbers delivered are kept within seqKeep of the newest,
//     Republish stops after maxRepublish messages.
//
// Locks: userSub.opMu (placement operations, held across network calls)
// comes first; under it Client.mu or userSub.mu may be taken, never both
// at once. userSub.mu is never held across a network call (only across
// the hand-over to Notifications); conn.mu is a leaf.
//
// Duties of the caller: Close the Client; drain Subscription.Notifications
// (a full channel holds back that server's Publish loop, never the others).
package client
