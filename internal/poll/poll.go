// Package poll is the module's one way for a test to wait with a deadline
// instead of a fixed sleep: CheckFor waits until a condition holds (Wait
// too, returning the error instead of failing the test), Holds
// asserts that one stays true for a while, and True turns a boolean
// condition into the error both take.
//
// It imports only the standard library, so the tests of every package (and
// the multi-process helpers under tests/) can use it without a cycle.
//
// A test that must show that something did NOT happen should not use Holds
// for it when an ordering event exists: wait for a later event that is
// ordered after the one that must not occur (a round trip through the same
// actor or connection, a counter that reaches N+1), then assert. Holds is
// for real processes and real time, where no such event exists.
package poll

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// CheckFor calls fn every `every` until it returns nil or total has passed;
// then the test fails with fn's last error. fn is called at least once and
// once more after the deadline, so a condition met at the last moment
// passes. Call it from the test's goroutine (it may call t.Fatalf).
func CheckFor(t testing.TB, total, every time.Duration, fn func() error) {
	t.Helper()
	if err := Wait(total, every, fn); err != nil {
		t.Fatalf("%v", err)
	}
}

// Wait is CheckFor that returns fn's last error ("after TOTAL: …") instead
// of failing a test, or nil once fn returned nil. It touches no
// testing.TB, so a harness's background goroutine, which must not call
// t.Fatal, waits with it and decides what a timeout means.
func Wait(total, every time.Duration, fn func() error) error {
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", total, err)
		}
		time.Sleep(every)
	}
}

// Holds calls fn every `every` for total and fails the test as soon as fn
// returns an error: it asserts that something stays true for a while (a
// node keeps waiting, nobody is downed). It is the negative counterpart of
// CheckFor, not a way to wait for something. Call it from the test's
// goroutine.
func Holds(t testing.TB, total, every time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		if err := fn(); err != nil {
			t.Fatalf("within %v: %v", total, err)
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(every)
	}
}

// True adapts a boolean condition to CheckFor and Holds: the error it
// returns while cond is false names what is awaited.
func True(what string, cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet: " + what)
	}
}
