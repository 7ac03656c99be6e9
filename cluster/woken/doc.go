// Package woken detects a process that did not run for longer than the
// failure detector's acceptable heartbeat pause (SIGSTOP, a VM pause, a
// long stall) and decides the woken-process fence: a node that woke from
// such a gap acts on nothing until it has heard every peer of its
// ClusterId again, whatever the downing strategy.
//
// It performs no I/O, starts no goroutine, takes no lock and reads no
// clock: every call carries the instant it happened.
//
// # The rules
//
//   - Gap: a loop tick more than Pause after the previous one means the
//     process did not run in between. Before that first tick after the
//     gap, the gap itself (now − last tick > Pause) says so.
//   - Unsure (Detector.Unsure, the lease keeper's rule): for one Pause
//     after waking, what the node hears may have waited in its sockets
//     through the freeze, so it cannot tell whether its set is whole.
//   - Woken (Fence): from the wake until every peer of the ClusterId was
//     heard (a heartbeat or gossip admitted by the membership daemon) after
//     the wake instant plus one Pause — the messages that waited in the
//     sockets are read within that settle window and do not count — and
//     at least Expected−1 distinct peers were: a peer the woken node no
//     longer lists is not heard. A node alone by configuration is never
//     woken.
//
// # The driver
//
// The host's woken-fence actor must:
//
//  1. create the Fence with NewFence (its Config from the cluster settings
//     and the set's size);
//  2. call Tick at least every Pause/4 with the instant and an Observation
//     read from the membership daemon at that instant, log the Change it
//     returns, and wake the ServiceLevel publisher when Woken changed;
//  3. answer the gate and the ServiceLevel from Woken(now), a query that
//     changes nothing.
//
// A Detector or a Fence is not safe for concurrent use: the driver calls it
// from one goroutine or under one lock.
package woken
