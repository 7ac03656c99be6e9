package ports

import (
	"fmt"
	"net"
	"slices"
	"testing"
)

func TestFreeIsDistinctBindableAndBelowTheEphemeralRange(t *testing.T) {
	ps, err := Free(50)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 50 {
		t.Fatalf("%d ports, want 50", len(ps))
	}
	sorted := slices.Clone(ps)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != 50 {
		t.Fatalf("ports repeat: %v", ps)
	}
	lo := ephemeralLow()
	for _, p := range ps {
		if lo-lowest >= 1000 && (p < lowest || p >= lo) {
			t.Errorf("port %d outside %d–%d", p, lowest, lo-1)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}

// A port that is in use is never returned.
func TestFreeSkipsPortsInUse(t *testing.T) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	busy := map[int]bool{}
	for p := lowest; p < lowest+200; p++ {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			held = append(held, l)
			busy[p] = true
		}
	}
	for range 20 {
		ps, err := Free(20)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if busy[p] {
				t.Fatalf("Free returned port %d, which is held", p)
			}
		}
	}
}
