// Package clusterproc holds smoke tests of the cluster runtime with real
// `otopcua host` processes on loopback (see clusterproc_test.go): a pair
// formed from two seeds, SIGKILL of the oldest with the crash fast path,
// SIGTERM's graceful leave, a paused node downed and exiting for its
// supervisor, and a used cluster port. The full drill suite is tests/drills.
package clusterproc
