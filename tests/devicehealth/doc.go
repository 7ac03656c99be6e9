// Package devicehealth runs Redundancy:DeviceHealth failover on real
// processes: two `otopcua host` nodes (a, then b: a is Primary) on test
// hosts of their own (tests/netem network namespaces, plus a "scada" host
// for the test's OPC UA clients), one shared SQLite Config DB, and a real
// Modbus TCP field device (internal/fielddevice) on the machine's loopback
// that logs every value written to its Setpoint register.
//
// Each node reaches the device through a forwarder inside its namespace,
// listening on its own 127.0.0.1 at the device's port, so both nodes share
// one deployment. A node's path to the device is cut by an iptables rule
// inside its namespace (REJECT with a TCP reset on the device's port), and
// restored by deleting the rule: the other node's path is untouched.
//
// An independent sampler reads Server.ServiceLevel (i=2267) of both nodes
// every 100 ms over sessions of its own. The drills assert, with the
// documented settings (DeviceFailoverAfter 10 s, a drill hold of
// holdFor):
//
//   - TestDeviceLossHandsOver: the Primary's path cut → its level enters
//     the Degraded band (2..199) within one poll (with its read timeout)
//     plus one HealthTick; the Secondary becomes Primary no sooner than
//     DeviceFailoverAfter after the cut, the old Primary exits 0 (the
//     manual failover path) and the audit row names the device-health
//     reason; a write through the new Primary lands on the device; the
//     old Primary, restarted as a supervisor would, rejoins as Secondary;
//     with its path restored and the new Primary's cut, no hand-back
//     happens within the hold, and one does after it.
//   - TestBothPathsCutNothingMoves: both paths cut → no hand-over and no
//     level change over the window: 20 s by default (CI), 60 s with the
//     test flag -drill.long.
//
// Duties of the caller: run as root with iproute2 and iptables (netem.Require
// fails the test naming what is missing); run one drill at a time on a
// small machine.
package devicehealth
