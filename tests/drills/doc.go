// Package drills runs otopcua's cluster drills: real `otopcua host`
// processes (tests/procs) on random loopback ports or on test hosts of
// their own (tests/netem network namespaces), crashed with SIGKILL,
// frozen with SIGSTOP, stopped with SIGTERM, restarted at the same address
// and partitioned with iptables, each drill asserting through every node's
// GET /api/cluster/members and the processes' exit codes (0 after a
// graceful leave, 3 after the node was downed).
//
// The drills (the test names carry the numbers):
//
//	 1 both seeds start together → one cluster, the first seed oldest
//	 2 first seed absent → the other waits, joins it when it starts
//	 3 second seed absent → the first forms alone, the second joins as youngest
//	 4 SIGTERM of the oldest → Leaving/Exiting → Removed, exit 0, new oldest
//	 5 SIGTERM of the younger → it leaves, exit 0; the oldest never changes
//	 6 SIGKILL of the oldest, auto-down → the survivor takes over
//	   (fast path ≈ 1 s; DownOnConnectionRefused=false ≈ detection + 15 s)
//	 7 the same under keep-oldest → the survivor downs itself, exit 3
//	 8 SIGKILL of the younger → the oldest removes it (auto-down, keep-oldest)
//	 9 quick restart at the same address → new uid joins as youngest
//	10 restart of the first seed among three → rejoins, never a second cluster
//	11 SIGSTOP past the detector, SIGCONT → the thawed node exits 3
//	12 partition of a pair under auto-down (DROP and REJECT) → both run alone;
//	   after the heal they do not merge by themselves; restart one side →
//	   one cluster
//	13 partition healed before StableAfter under keep-oldest → nobody downed
//	14 2|1 partition under keep-majority and static-quorum(2) → minority exits 3
//	15 lone non-first seed → self-forms after SelfFormAfter, not before
//	16 SelfFormAfter "0" → keeps waiting; positive control: joins its seed
//	17 not in its own seed list → never self-forms; positive control
//	18 other seed's address accepts TCP but never answers → no self-form;
//	   self-forms once the listener goes
//	19 restart right after a Leave → joins the existing cluster, never a second
//	   (also with the survivor frozen while it holds the old incarnation Exiting)
//	20 six processes, three ClusterIds → one cluster, every view equal
//
// Timings: drills 6 (both variants) and 13 run on the production defaults
// (failure detector 1 s / 3 s / 10, AutoDownUnreachableAfter and
// StableAfter 15 s); the others that wait for a downing decision use 5 s.
// Drills run in parallel (go test's -parallel, GOMAXPROCS by default); the
// whole package takes a few minutes on two cores. -drills.long adds the
// long variants (11 with the oldest frozen).
//
// The pair drills except 12 run the invariant sampler (OneOldestChecker):
// every 50 ms it asks every node for its view and records "at most one
// oldest driver per ClusterId across the views that answered".
//
// Drills 12–14 need root, iproute2 and iptables (CI runs as root and
// installs them); without them they fail and say what is missing.
package drills
