package host

import (
	"errors"
	"strings"
	"testing"
)

// codeOf reads Run's result the way `otopcua host` does: nil is 0, an
// error with an ExitCode its code, any other error 1.
func codeOf(err error) int {
	if err == nil {
		return 0
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return 1
}

func TestExitCodePolicy(t *testing.T) {
	cause := errors.New("cause")
	for _, tc := range []struct {
		e    ending
		code int
	}{
		{endStopped, 0},
		{endManualFailover, 0},
		{endMembershipEnded, 3},
		{endMembershipFailed, 1},
		{endActorGaveUp, 1},
		{endStartFailed, 1},
		{endInvalidConfig, 2},
	} {
		t.Run(tc.e.String(), func(t *testing.T) {
			if got := exitCode(tc.e); got != tc.code {
				t.Fatalf("exitCode = %d, want %d", got, tc.code)
			}
			err := exitWith(tc.e, cause)
			if got := codeOf(err); got != tc.code {
				t.Fatalf("Run's result %v exits %d, want %d", err, got, tc.code)
			}
			if tc.code != 0 && !errors.Is(err, cause) {
				t.Fatalf("Run's result %v lost its cause", err)
			}
		})
	}
}

// TestExitCodeCoversEveryEnding: an ending added without a row in the
// policy's table would take exit code 1 silently; every ending has a name.
func TestExitCodeCoversEveryEnding(t *testing.T) {
	seen := map[int]bool{}
	for e := endStopped; e <= endInvalidConfig; e++ {
		if name := e.String(); name == "" || strings.HasPrefix(name, "ending(") {
			t.Fatalf("ending %d has no name", int(e))
		}
		seen[exitCode(e)] = true
	}
	if len(endingNames) != int(endInvalidConfig)+1 {
		t.Fatalf("%d ending names for %d endings", len(endingNames), int(endInvalidConfig)+1)
	}
	for _, code := range []int{0, 1, 2, ExitRestart} {
		if !seen[code] {
			t.Fatalf("no ending exits with %d", code)
		}
	}
}

// TestExitWithKeepsACodeTheCauseCarries: a daemon error that carries its
// own exit code keeps it (Run returns it as it is).
func TestExitWithKeepsACodeTheCauseCarries(t *testing.T) {
	own := &ExitError{Code: 7, Err: errors.New("own code")}
	if got := codeOf(exitWith(endMembershipFailed, own)); got != 7 {
		t.Fatalf("exit %d, want the cause's 7", got)
	}
}
