// Package upgrade is the rolling-upgrade test: a redundant pair of the
// previous release, under traffic, is upgraded to the current tree one node
// at a time, the way docs/operations.md tells an operator to, and every
// channel between the two versions is checked both ways.
//
// The previous release is recorded in packaging/previous-release (tag,
// full commit, version; ReadRelease). Resolve takes the tag's commit when
// the clone has the tag (it must agree with the file), else the recorded
// commit; a clone with neither (a shallow one) fails the test with a
// message that says so. Build checks that commit out into a detached git
// worktree in a temporary folder and builds ./cmd/otopcua there as it was
// released (no race detector, its version and commit stamped, -trimpath so
// that later runs come from the build cache); the worktree is removed when
// the test ends. The current tree's binary is procs.Binary's.
//
// The rig (rig_test.go): PostgreSQL as the Config DB (tests/pg); nodes a
// and b on loopback, ClusterId "upgrade", lease-majority on the Config DB
// lease, OpcUa:RedundancySupport HotAndMirrored, OpcUa:WriteMode forward,
// LocalDb replicated between them; a Modbus TCP device
// (internal/fielddevice) with a counter the test bumps every 100 ms, a
// writable setpoint whose every write the device reports with the node
// whose connection made it (procs.ConnOwner), and a level that the test
// toggles every second under an alarm; the deployment and an
// Administrator are stored with the previous release's own commands. The
// plant's view of it: a ServiceLevel sampler on both nodes every 50 ms
// (tests/failover.Sampler); a SCADA client, the current tree's
// opcua/client in Mirrored mode on both URLs, subscribed to the counter
// (every value) and writing a value it never wrote before every 200 ms.
//
// The steps (TestRollingUpgradeFromThePreviousRelease):
//
//  1. a and b from the previous release; a Primary (250), b Secondary (240).
//  2. b upgraded: SIGTERM (it leaves, exit 0), then the current tree's
//     binary at the same address with the same appsettings and LocalDb.
//  3. A manual failover sent to b's admin API: b passes it to the old
//     Primary over pub/sub; a shows 0, the client moves to b with its
//     session activated there (mirrored, no fall back to Warm), a leaves
//     and exits 0; its supervisor would restart it from the binary still
//     installed, so the test does: a is back as the old Secondary.
//  4. a upgraded as b was.
//
// After each step (checkWire), with the Primary at 250 and the Secondary
// at 240: each node's membership view has the other Up, reachable, at its
// current incarnation (gossip); each node's redundancy panel shows both
// members with the ServiceLevel their current incarnation published
// (pub/sub); each node serves sessions, holds the other's whole and has
// its own acknowledged (session mirroring); each node completed a LocalDb
// pull from the other, refusing nothing, and the alarm history queued by
// the Primary reached the Secondary (LocalDb replication); a write sent to
// the Secondary is forwarded to the Primary, answered Good, and lands on
// the device once, written by the Primary (pub/sub request and answer);
// each node runs the version the test gave it (otopcua_build_info).
//
// At the end, the independent checker (tests/chaos/check) reads the
// device's write log with each write's node, the sampled ServiceLevels,
// the process starts and exits, the client's acknowledged writes and
// failovers, the test's leaves and failover, and alarm_history, and the
// test fails with each violation's timeline: never two writers, never two
// 250s in the same or neighbouring sampling rounds, every acknowledged
// write landed once, every restarted node back at 240/250 within its
// budget, no node stuck below 200 while the pair is healthy, every alarm
// transition once. Besides: alarm_history holds one row per transition the
// device made, in order; the client received every counter value once —
// except, for a previous release with the known leave blip
// (knownLeaveBlip: v0.1.0), values missed across step 2 while the sampler
// saw that release's Primary at 100; no device write came from a
// connection of no node.
//
// Compatibility the other way: cluster/daemon's
// TestIncompatibleProtocolIsRefused plays a node of an incompatible
// protocol generation (cluster/wire.Generations).
//
// Run it: go test -race -count=1 ./tests/upgrade/ (with git,
// PostgreSQL's server binaries and the module cache; about 35 s with the
// builds cached, 2–3 minutes from a cold build cache on two cores).
// Cutting a release: docs/releases.md, "Tagging a release".
package upgrade
