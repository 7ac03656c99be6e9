// Package hostrig waits, for the harnesses that measure the product as
// shipped (procs.PlainBinary, deployments stored with procs.DeployWith),
// until a redundant pair of `otopcua host` processes settles at its
// healthy ServiceLevels (PrimaryLevel and SecondaryLevel).
//
// The processes themselves are started and watched with tests/procs; every
// setup failure ends the caller's test (t.Fatal).
package hostrig
