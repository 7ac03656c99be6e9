// Package check is the independent checker of the chaos run (issue 28):
// it reads what the world outside the nodes saw during a run and says
// which promises of the redundant pair were broken, when, and what
// happened around it.
//
// What it reads (Run), each observation with its own time and the log it
// came from — the package never reads a clock:
//
//   - the devices' write logs: every register write with the node whose
//     connection wrote it;
//   - the ServiceLevel samplers: every node's Server.ServiceLevel, read
//     every 50 ms, or "no answer";
//   - the process table: starts, exits with their code, the run's SIGKILL,
//     SIGSTOP and SIGCONT;
//   - the client's log: acknowledged writes and failovers;
//   - the Config DB's alarm_history rows;
//   - the faults the run injected, with their windows, and each
//     ClusterId's nodes, devices, downing strategy and restart budget.
//
// What it checks (the rules in full are in the doc comment of each
// check):
//
//  1. two-writers — never two nodes writing one device: a node writing
//     again after another node wrote, with no restart and no 240 or 0
//     from it in between (writers.go).
//  2. two-primaries — never two nodes of one ClusterId at 250 at once:
//     stretches of adjacent reads of 250 of two nodes that meet
//     (primaries.go).
//  3. alarm-once — every alarm transition stored in alarm_history once.
//  4. ack-landed-once — every write the client saw acknowledged is in
//     the device's write log exactly once (history.go).
//  5. restart-budget — every restarted node answers 240 or 250 within
//     its ClusterId's restart budget (restart.go).
//  6. stuck-level — no node at 255 or below 200 longer than a limit while
//     no fault touches its pair (stuck.go).
//
// Rules 1 and 2 hold under lease-majority always; under auto-down outside
// the injected partitions and a settle margin after them, the documented
// trade of that strategy.
//
// Why never the nodes' own opinion: the checker exists to catch the
// nodes being wrong. A node that believes it is the only Primary is
// exactly the node that writes beside another; a historian that believes
// it stored a transition once is the one that stored it twice. So the
// checker looks where a plant would: at the device, at what a SCADA
// client reads and is told, at the database, at the processes. The faults
// come from the run's own record of what it injected; they decide which
// rule applies (during a partition, after a restart), never whether a
// node behaved. The one thing a node says that the checker reads is its
// ServiceLevel, because clients act on it: rules 2, 5 and 6 judge it, and
// rule 1 takes a published 240 or 0 only as the node's own admission that
// it is not the Primary.
//
// A Violation names its invariant, ClusterId and time in a one-line
// statement and carries a Timeline: the faults and observations of that
// ClusterId around it, one a line, times relative to the run's start, so
// an engineer can read what happened without opening the logs.
//
// Duties of the caller (the chaos rig):
//
//  1. Map every observation onto the names of the configuration: writers
//     and servers to node names, OPC UA NodeIds to devices (Cluster.Tags);
//     Check panics on a name it cannot place rather than skip it.
//  2. Record every fault it injects, with its end, and every process event
//     of every node, the first start included.
//  3. Write distinct values per tag, so that an acknowledged write is
//     recognised in a device's log.
//  4. Print the seed and every violation with its timeline, and fail the
//     run when Check returns any.
package check
