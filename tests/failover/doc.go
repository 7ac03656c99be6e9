// Package failover runs otopcua's redundancy drills: real `otopcua host`
// processes (tests/procs) on random loopback ports, or on test hosts of
// their own (tests/netem network namespaces), killed with SIGKILL, stopped
// with SIGTERM, restarted at the same address, with the Config DB
// (PostgreSQL, tests/pg) stopped and started, and an OPC UA port blocked
// with iptables. Every drill asserts what a SCADA client sees: each node's
// Server.ServiceLevel (i=2267) through a subscribed OPC UA client that
// reconnects across restarts (demo.Watcher), never the runtime's internals.
//
// The drills (the test names carry the numbers):
//
//	1  healthy pair → 250 on the oldest member, 240 on the other, within
//	   2 s of both being Up
//	2  SIGKILL of the Primary → the survivor at 250 (time logged)
//	3  the killed node restarts → joins as the youngest, 240; the survivor
//	   keeps 250 throughout
//	4  the networked Config DB stops → both nodes at 100 within one probe
//	   interval plus its timeout; it starts again → 250/240
//	4b redundancy snapshots stop (the only admin node is killed) while the
//	   Config DB answers → each driver at 200 once its snapshot is older
//	   than 30 s, not before; the admin node returns → 250/240
//	5  the Primary's OPC UA port is rejected for its peer only, the
//	   cluster link stays up → the peer's probe reports it, the Primary at
//	   200, clients prefer the other node; unblocked → 250 again
//	6  a node that subscribes after the last topology change converges
//	   within the 10 s heartbeat
//	7  six nodes, three ClusterIds, one mesh → exactly one 250 per
//	   ClusterId; killing one Primary changes only its own pair
//	8  SIGTERM of the Primary → the survivor at 250, and no interval with
//	   no node ≥ 240 longer than the debounce (250 ms) plus one HealthTick
//	   (5 s)
//
// The client drills (client_drills_test.go) run the `otopcua client` CLI,
// the real binary with --json, as a SCADA client of the pair and assert on
// the JSON lines it prints, read live (tests/clientproc):
//
//	C1 SIGKILL of the Primary → one failover to the survivor for the lost
//	   connection, failoverMs between 0 and 5000, notifications resume
//	   from the survivor and reach 250; the CLI keeps running
//	C2 the Primary's own path to the Config DB is reset (it publishes
//	   100, alive) → no move while 250 outranks 240 for longer than
//	   --prefer-hold, then one failover at once for the level leaving the
//	   healthy band; healed → back to the Primary after the hold
//	C3 the client starts on the Secondary (the Primary unreachable for
//	   the client only, through a proxy) → one failover after
//	   --prefer-hold once the Primary is reachable, then no flapping
//
// The invariant sampler (Sampler, OnePrimaryChecker) runs in every drill:
// every 50 ms it reads every node's ServiceLevel concurrently (300 ms
// timeout: a stopped node has no value that round) and fails the drill if
// two nodes of one ClusterId read 250 in the same round. Only the
// documented auto-down partition trade may allow it, per ClusterId, with
// a reason (Sampler.Allow); no drill here needs that.
// TestSamplerCatchesTwoPrimaries is its positive control.
//
// Timings are the redundancy contract's (DESIGN.md): debounce 250 ms,
// HealthTick 5 s, heartbeat 10 s, freshness 30 s, DB probe every 5 s with
// a 2 s timeout, plus 1 s for delivery on two loaded cores. The drills run
// in parallel (go test -parallel, GOMAXPROCS by default).
//
// Requirements: drills 4 and C2 run PostgreSQL (Debian package postgresql, which
// scripts/test.sh installs); drill 5 needs root, iproute2 and iptables.
// Without them those drills fail and say what is missing.
package failover
