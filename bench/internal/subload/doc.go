// Package subload is the client side of the subscription benchmark: it
// subscribes to every variable of a benchsrv server, keeps a fixed number of
// Publish requests in flight, and measures over a window what the client
// receives (notifications per second, value age) and what the server
// process spends (CPU from /proc/<pid>/stat, RSS from /proc/<pid>/status).
//
// Invariants:
//  1. Run never blocks past its deadline: every service call has a
//     timeout, the publish loop is watched for stalls, and a failure is
//     reported in Result (OK false, Error set) instead of a hang.
//  2. A notification counts when its response's last chunk was read inside
//     the measured window; its age is that read time minus the value's
//     SourceTimestamp (client and server share the machine's clock).
//  3. Every sequence number of a notification message is acknowledged in
//     the next Publish request the client sends.
package subload
