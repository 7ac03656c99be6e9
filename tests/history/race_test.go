//go:build race

package history_test

// raceBuild: the test binary (and the node it starts, tests/procs) is
// built with the race detector, which makes the store and the reads
// several times slower.
const raceBuild = true
