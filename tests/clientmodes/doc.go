// Package clientmodes drills the redundancy modes of `otopcua client` on
// real processes: two `otopcua host` nodes of one ClusterId sharing a
// SQLite Config DB, a real Modbus TCP field device (internal/fielddevice)
// whose FastCounter input register goes up by exactly one every 100 ms,
// polled by both nodes every 20 ms, and the real CLI,
// `otopcua client subscribe --mode … --json --sampling-interval 0` on both
// node URLs, subscribed to the counter's tag at a 100 ms publishing
// interval. Each trial SIGKILLs the node the client is on (the Primary),
// waits for the client's failover line, restarts the node at the same
// address and waits until the pair is whole again. A hot-a variant
// freezes the Primary with SIGSTOP instead: the client finds it silent
// after --lost-after and the survivor's Sampling queue covers the gap.
//
// What is asserted: the counter values the client printed form one
// contiguous run modulo 65,536, each value exactly once (no value missed
// across the failovers, none delivered twice), and every failover event
// names the mode; the Part 4 failover time of each trial is recorded.
//
// It owns a reusable harness (rig.go): StartRig and Rig.Trials run N
// trials for a given --mode and return the per-trial failover times and
// the value log, so a drill for another mode (the server side's mirrored
// drill) is a few lines. Contiguous is the pure check of the value log.
//
// Duties of the caller: one Rig per test, from the test's goroutine;
// -clientmodes.trials sets N (CI default 3; 20 for the figures).
package clientmodes
