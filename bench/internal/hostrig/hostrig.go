package hostrig

import (
	"fmt"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// ServiceLevels of a healthy redundant pair.
const (
	PrimaryLevel   byte = 250
	SecondaryLevel byte = 240
)

// WaitPair waits up to 90 s until one of the nodes "a" and "b" reads
// PrimaryLevel and the other SecondaryLevel, three reads in a row (every
// 100 ms, each over a fresh session), and returns the names of the Primary
// and the Secondary. A node that exits fails t at once, with its log.
func WaitPair(t testing.TB, nodes map[string]*procs.Node) (primary, secondary string) {
	t.Helper()
	held := 0
	procs.CheckFor(t, 90*time.Second, 100*time.Millisecond, func() error {
		for _, n := range nodes {
			if code, done := n.Exited(); done {
				t.Fatalf("%s exited with code %d\n%s", n.Name, code, n.Log())
			}
		}
		la, errA := procs.ReadServiceLevel(nodes["a"].Endpoint())
		lb, errB := procs.ReadServiceLevel(nodes["b"].Endpoint())
		switch {
		case errA != nil || errB != nil:
			held = 0
			return fmt.Errorf("read: a %v, b %v", errA, errB)
		case la == PrimaryLevel && lb == SecondaryLevel:
			primary, secondary = "a", "b"
		case lb == PrimaryLevel && la == SecondaryLevel:
			primary, secondary = "b", "a"
		default:
			held = 0
			return fmt.Errorf("levels a=%d b=%d, want 250/240", la, lb)
		}
		if held++; held < 3 {
			return fmt.Errorf("250/240 read %d times in a row", held)
		}
		return nil
	})
	return primary, secondary
}
