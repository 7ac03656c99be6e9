// Package floatingtest holds what the executors' plan scenarios share:
// reading a plan's actions from a scenario file and printing an Apply's
// result. Used only by tests.
package floatingtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/otopcua/otopcua/floating"
)

// ParseActions reads one action per line of input — `<op> [target=<id>]
// [key=value ...]` — each carrying epoch and the param "address" = address.
func ParseActions(t testing.TB, input, address string, epoch uint64) []floating.Action {
	t.Helper()
	var out []floating.Action
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		a := floating.Action{Op: f[0], Epoch: epoch, Params: map[string]string{"address": address}}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("%q: want key=value", kv)
			}
			if k == "target" {
				a.Target = v
			} else {
				a.Params[k] = v
			}
		}
		out = append(out, a)
	}
	return out
}

// Result prints an Apply's outcome: ok, a stale epoch's refusal, a
// conflict, or the error.
func Result(err error) string {
	var se *floating.StaleEpochError
	switch {
	case err == nil:
		return "result: ok\n"
	case errors.As(err, &se):
		return fmt.Sprintf("result: refused, stale epoch %d (last %d)\n", se.Plan, se.Last)
	case errors.Is(err, floating.ErrConflict):
		return "result: conflict\n"
	}
	return "result: error: " + err.Error() + "\n"
}
