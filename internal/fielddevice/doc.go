// Package fielddevice is a real Modbus TCP field device for otopcua's demo,
// its tests and `otopcua simulate modbus`: simonvetter/modbus's TCP server
// over a register bank of 65,536 holding registers, input registers, coils
// and discrete inputs, safe for concurrent use, counting the writes it
// receives (Options.OnWrite reports each one, in order, for tests that must
// tell which client wrote what). It answers every unit id.
//
// A Profile is a named register map whose values move with time (press,
// tank). Its Step is a pure function of the time since start; Animate runs
// it on a ticker. A profile's Counters are input registers that count up
// by exactly one per period (the press's FastCounter, input 2, every
// 100 ms): Animate runs them with RunCounter, and a client that subscribes
// to one can tell from the values alone whether it missed or repeated one
// (the client redundancy drills, tests/clientmodes).
//
// Invariants:
//   - A profile never stores into a writable point after its initial
//     value: what a client writes stays until a client writes again.
//   - One Apply is atomic for readers: a multi-register value (a float32)
//     is never read half old, half new.
//
// The caller's duties:
//  1. Close the Device when done (it closes the clients' connections).
//  2. Cancel Animate's context before or after Close; Animate only stores
//     into the bank.
package fielddevice
