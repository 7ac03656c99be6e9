package procs

import "testing"

func TestUniquePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p := UniquePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
