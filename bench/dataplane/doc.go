// Command dataplane measures otopcua's data plane on a real `otopcua host`
// process (./cmd/otopcua built by tests/procs, loopback ports, a SQLite
// Config DB, OpcUa:WriteMode "confirmed", one node: its ClusterId has one
// driver member, which services writes) reading real Modbus TCP devices
// (internal/fielddevice, served by this process on loopback ports).
//
// Per case (the flags' case, then the -compare case), on a fresh host:
//
//  1. Before the deployment: the host's CPU and RSS over -idle.
//  2. The deployment, stored with `otopcua deploy`: -devices devices, each
//     with tags/devices int16 holding-register tags at addresses 0, 1, …
//     (contiguous: 1,000 tags are 8 read requests of at most 125
//     registers), polled every -poll. The first tag of the first device is
//     writable. Once every tag reads Good: CPU and RSS over -idle, polling
//     only.
//  3. Latency: one session, one subscription (publishing interval
//     -publishing) monitoring every tag (sampling interval -sampling, 0 =
//     every change; queue size 1), -inflight Publish requests outstanding.
//     Every -change-every the changer writes new values into a rotating
//     sample of registers (every device each tick), each value derived
//     from a sequence number and the time of each change remembered; the
//     client matches each notification's value against the open change of
//     its tag and records receipt − change for the first one. After
//     -warmup, -duration is measured, with the host's CPU and RSS.
//  4. Writes: -writes confirmed Writes of the writable tag, one at a time,
//     while the polling, the subscription and the changes go on; each is
//     timed from sending the request to the device's register holding the
//     value (a loop reading the register, yielding between reads) and to
//     the Write response.
//
// Output: the machine line, a Markdown table per part (latency, writes,
// CPU and RSS), one JSON line per part and case, and the goal checks
// (latency p99 ≤ 250 ms with no change lost; write p99 ≤ 20 ms with every
// write Good and landed). Exit status 1 when a goal is missed, 2 when a
// case could not be set up or the flags are wrong.
//
// Usage:
//
//	go run ./bench/dataplane
//	go run ./bench/dataplane -tags 10000 -devices 10 -poll 100ms -publishing 100ms -duration 30s -compare 1000:1
//
// TestTiny in this package runs a case of 100 tags for 2 s.
package main
