// Package hostrig sets up `otopcua host` processes for the harnesses that
// measure the product as shipped (built by procs.PlainBinary, without the
// race detector): it stores deployment documents with `otopcua deploy`,
// and waits for a redundant pair to settle at its
// healthy ServiceLevels (PrimaryLevel and SecondaryLevel).
//
// The processes themselves are started and watched with tests/procs; every
// setup failure ends the caller's test (t.Fatal).
package hostrig
