// Package chaos is otopcua's seeded chaos run (issue 28): six real
// `otopcua host` processes in three redundant pairs under faults drawn
// from a seed for a bounded time, judged afterwards by the independent
// checker tests/chaos/check from what the world outside the nodes saw.
//
// What runs (rig_test.go):
//
//   - Three ClusterIds, each a pair of its own (nodes PREFIX-a, the first
//     seed, and PREFIX-b): auto-down (auto-a, auto-b), lease-majority on
//     the Config DB lease (pg-a, pg-b) and lease-majority on an etcd lease
//     (etcd-a, etcd-b; one etcd member, the cheapest rig the etcd lease
//     accepts). Every node is on a test host of its own (a network
//     namespace of tests/netem) with the same ports; OpcUa:WriteMode is
//     forward; the nodes as shipped (procs.PlainBinary), logging at info.
//   - One PostgreSQL Config DB (tests/pg) for all of them, each ClusterId
//     its own deployment: a Modbus TCP device (internal/fielddevice) with a
//     counter the run bumps every 100 ms, a writable setpoint and a level
//     the run toggles across an alarm's threshold every 3 s.
//   - Every node reaches PostgreSQL, its device and the etcd member on the
//     machine's loopback through paths of its own: a listener on the
//     host's own 127.0.0.1 at the server's port, forwarded to a netem.Proxy
//     per node (the Config DB's, which the run slows; the device's, which
//     the run cuts and which dials the device from an address of the
//     node's own, 127.0.0.11 and up, so the device's write log names the
//     writer by the connection's source address, never by what a node
//     says).
//   - A SCADA test host through which the harness reaches every node's
//     OPC UA port: a ServiceLevel sampler per node (every 50 ms, "no
//     answer" after 300 ms), and per pair otopcua's own failover client
//     (opcua/client, warm, on both nodes' endpoints) subscribed to the
//     counter and writing 1, 2, 3, … to the setpoint every 200 ms, plus a
//     plain session writing 40000, 40001, … once a second through the node
//     the samplers read at 240 (forwarded to the Primary). Every write
//     acknowledged Good is recorded with the node that took it; every
//     failover of the client with its reason.
//   - The run plays each node's supervisor (systemd Restart=always,
//     RestartSec=1): a process that exits by itself is started again at
//     the same address one second later. Every start, exit (with its
//     code), SIGKILL, SIGSTOP and SIGCONT is recorded.
//
// What is injected (plan.go draws it, faults_test.go does it). The plan
// is a pure function of the seed and the options: the same seed draws
// the same faults, in the same order, with the same lengths, each aimed at
// a role (the pair's Primary or Secondary when it is injected, as the
// samplers read them), so a run is reproduced from its seed. The kinds:
// SIGKILL and a start after a drawn delay; SIGKILL and a start at once at
// the same address; SIGSTOP/SIGCONT short (below the failure detector's
// acceptable pause) and long (seconds); graceful leave (SIGTERM) and a
// start after a drawn delay; the operator's manual failover through the
// Primary's admin API; a partition between the pair's two hosts
// (iptables DROP or REJECT with a TCP reset, both ways or only the
// target's packets); the Config DB slow for one node (a delay each way on
// its path); one node's device path cut (silently, or refused and reset);
// the Config DB stopped (the whole rig). At most one fault per ClusterId
// runs at a time, each followed by a drawn settle gap (42–55 s: beyond the
// checker's 30 s settle margin and 10 s stuck limit, so that the restart
// budget and stuck-level rules have healthy time to judge); a Config DB
// stop runs beside no other fault. After an auto-down partition the run
// plays the operator of the documented recovery ("heal the link, then
// restart one side") when the pair is not whole and steady within 20 s of
// the heal; that restart is recorded as a graceful leave.
//
// What is judged. Check (tests/chaos/check/doc.go) reads the records:
// two writers of one device, two Primaries of one ClusterId, an alarm
// transition stored twice, an acknowledged write that did not land exactly
// once, a restart that did not come back within the budget, a level stuck
// while the pair was healthy. TestChaos fails on every violation, printing
// the seed and its timeline. runChaos also fails the test itself when, for
// the product as shipped (no mutation), a pair has no Primary and
// Secondary 30 s after the schedule's end. It logs per ClusterId the
// faults injected by kind, the client's failovers and worst blind window
// (its longest gap between counter values), the outcomes of the writes,
// the device writes, the alarm toggles against the alarm_history rows,
// and the process starts and exits.
//
// Flags (and the environment variables that set their defaults):
//
//	-chaos.seed N         the seed (default: drawn from the clock; printed first, "chaos seed N")
//	-chaos.duration D     the schedule's length ($OTOPCUA_CHAOS_DURATION, else 10m); setup and end add about 10 s
//	-chaos.faults K,…     the kinds drawn ($OTOPCUA_CHAOS_FAULTS, else all): kill, restart, stop-short,
//	                      stop-long, leave, failover, partition, db-slow, device-cut, db-stop
//	-chaos.clusters C,…   the pairs run (default all): auto-down, lease-pg, lease-etcd
//	-chaos.mutation NAME  a test-only product mutation ($OTOPCUA_CHAOS_MUTATION): every node runs
//	                      with OTOPCUA_TEST_MUTATION=NAME and OTOPCUA_TEST_HOOKS=1, and the run hands
//	                      each node's ServiceLevel to its runtime after every start
//
// To rerun a seed, give the seed, the duration and any -chaos.faults and
// -chaos.clusters of the failed run (TestChaos prints the command):
//
//	go test -count=1 -v -timeout 20m -run 'TestChaos$' ./tests/chaos/ -chaos.seed 123 -chaos.duration 10m
//
// (go test's default -timeout of 10 minutes is shorter than a 10-minute
// run.) Records: every run writes its logs to a temporary directory —
// each node's log per process start under nodes/, and the run's records
// beside them (the device write logs, the samplers' levels, the process
// table, each client's log, alarm_history, the faults as injected); the
// checker's timelines cite them by file and line. The directory is
// removed when the test passes and kept, its path printed, when it fails.
//
// For other tests: runChaos(t, options{…}) runs one run with chosen
// ClusterIds, fault kinds, gaps and length (a 60–90 s run with a short gap
// and tail, say) and returns the violations without judging them.
//
// Duties of the caller: run as root with iproute2, iptables, the
// PostgreSQL server and etcd-server installed (scripts/test.sh installs
// them; the rig fails naming what is missing); run it alone on a small
// machine (the nodes as shipped, not the race build, keep two cores
// enough).
package chaos
