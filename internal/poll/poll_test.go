package poll

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// recorder is the testing.TB CheckFor and Holds see: it records Fatalf
// instead of ending the goroutine.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

func TestCheckFor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		okAt      int // the call that first returns nil; 0: never
		total     time.Duration
		wantFatal string
		minCalls  int
	}{
		{name: "met at once", okAt: 1, total: time.Second, minCalls: 1},
		{name: "met on the third call", okAt: 3, total: 5 * time.Second, minCalls: 3},
		{name: "never met: fails with the last error", okAt: 0, total: 20 * time.Millisecond,
			wantFatal: "after 20ms: call ", minCalls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			calls := 0
			CheckFor(r, tc.total, time.Millisecond, func() error {
				calls++
				if tc.okAt != 0 && calls >= tc.okAt {
					return nil
				}
				return fmt.Errorf("call %d", calls)
			})
			if tc.wantFatal == "" && r.fatal != "" {
				t.Fatalf("failed: %s", r.fatal)
			}
			if tc.wantFatal != "" && !strings.HasPrefix(r.fatal, tc.wantFatal) {
				t.Fatalf("fatal = %q, want prefix %q", r.fatal, tc.wantFatal)
			}
			if tc.wantFatal != "" && r.fatal != fmt.Sprintf("after 20ms: call %d", calls) {
				t.Fatalf("fatal = %q, want the last call's error (call %d)", r.fatal, calls)
			}
			if calls < tc.minCalls || (tc.okAt != 0 && calls != tc.okAt) {
				t.Fatalf("calls = %d, want %d (at least %d)", calls, tc.okAt, tc.minCalls)
			}
		})
	}
}

func TestWait(t *testing.T) {
	calls := 0
	if err := Wait(time.Second, time.Millisecond, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || calls != 3 {
		t.Fatalf("Wait = %v after %d calls, want nil after 3", err, calls)
	}
	cause := errors.New("still down")
	err := Wait(20*time.Millisecond, time.Millisecond, func() error { return cause })
	if !errors.Is(err, cause) || err.Error() != "after 20ms: still down" {
		t.Fatalf("Wait = %v, want %q wrapping the last error", err, "after 20ms: still down")
	}
}

func TestHolds(t *testing.T) {
	t.Run("stays true for the whole time", func(t *testing.T) {
		r := &recorder{}
		calls := 0
		start := time.Now()
		Holds(r, 20*time.Millisecond, time.Millisecond, func() error { calls++; return nil })
		if r.fatal != "" {
			t.Fatalf("failed: %s", r.fatal)
		}
		if el := time.Since(start); el < 20*time.Millisecond || calls < 2 {
			t.Fatalf("returned after %v and %d calls, want at least 20ms and 2 calls", el, calls)
		}
	})
	t.Run("fails at the first error", func(t *testing.T) {
		r := &recorder{}
		calls := 0
		Holds(r, time.Minute, time.Millisecond, func() error {
			calls++
			if calls == 3 {
				return errors.New("downed")
			}
			return nil
		})
		if r.fatal != "within 1m0s: downed" || calls != 3 {
			t.Fatalf("fatal = %q after %d calls, want %q after 3", r.fatal, calls, "within 1m0s: downed")
		}
	})
}

func TestTrue(t *testing.T) {
	v := false
	f := True("the actor restarted", func() bool { return v })
	if err := f(); err == nil || err.Error() != "not yet: the actor restarted" {
		t.Fatalf("false: err = %v", err)
	}
	v = true
	if err := f(); err != nil {
		t.Fatalf("true: err = %v", err)
	}
}

// TestIsALeaf: every package's tests import poll, so it may import only
// the standard library.
func TestIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, ".") && p != "github.com/otopcua/otopcua/internal/poll" {
			t.Errorf("poll depends on %s", p)
		}
	}
}
