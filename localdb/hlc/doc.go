// Package hlc is the hybrid logical clock that stamps every replicated
// LocalDb row: physical milliseconds, a counter for events within one
// millisecond (or while the wall clock stands still or steps back), and the
// id of the node that wrote the row.
//
// Invariants:
//
//  1. Stamps are totally ordered by (WallMs, Counter, Node); Compare is that
//     order, and the text form (String) sorts in the same order byte by byte,
//     so SQLite can index and compare it as TEXT.
//  2. Now never returns a stamp less than or equal to one it returned before
//     or one Update accepted, even when the wall clock steps back.
//  3. Update never adopts a remote stamp more than MaxSkew ahead of the local
//     wall clock: such a stamp is refused with ErrSkew and the clock is left
//     as it was, so one peer with a clock far in the future cannot drag the
//     pair's stamps with it.
//
// The package does no I/O and reads no clock of its own: the caller passes
// the wall clock as a function (duty 1). Duties of the caller:
//
//  1. Give New a wall clock in Unix milliseconds; tests pass a fake one.
//  2. Call Update with every remote stamp before storing a row carrying it,
//     and store nothing when Update refuses it.
package hlc
