// Package clientproc runs the `otopcua client` CLI, the real binary built
// by tests/procs, as a child process of a test and reads what it prints.
//
// It owns three things:
//
//   - Line, ParseLine and ReadLines: the JSON contract of `otopcua client
//     subscribe --json`, one object a line, a notification (node, value,
//     server) or an event (connected, failover, lost) with an RFC 3339
//     "time". A line that breaks it is an error, never a zero Line.
//   - Proc (Start): a long-running `otopcua client` in its own process
//     group whose stdout is read live into parsed Lines, numbered from 0
//     (Line.Seq) in the order printed; a test polls them with deadlines
//     (WaitFor, LineAt) instead of sleeping, signals the process and
//     waits for its exit.
//   - Run: one `otopcua client` run to completion with its exit code,
//     and JSONValues to decode the JSON it printed.
//
// Invariants: a Proc's lines only grow, in the order the client printed
// them, and every one of them satisfies the contract; once Done is closed
// no line is added. Every process a test starts ends with the test (the
// process group is killed with SIGKILL).
//
// Duties of the caller:
//
//  1. Start and Run from the test's goroutine; call the methods that fail
//     the test (MustLive, WaitFor, LineAt, LineOrEnd, WaitExit) from it
//     too. The others may be called from any goroutine.
//  2. Pass every argument after `client`, the command first (subscribe,
//     read, …); a Proc parses stdout as subscribe lines, so it is for
//     `subscribe --json`.
//  3. Expect the test to fail at its end when the client printed a line
//     that breaks the contract; the command line, stderr and every line
//     are logged when the test failed or runs with -v.
package clientproc
