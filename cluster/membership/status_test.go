package membership

import "testing"

func TestCanTransitionTable(t *testing.T) {
	J, W, U, L, E, D, R := Joining, WeaklyUp, Up, Leaving, Exiting, Down, Removed
	all := []Status{J, W, U, L, E, D, R}
	// rows: from; columns: to (J W U L E D R) — Akka's Member.AllowedTransitions
	want := map[Status][7]bool{
		J: {false, true, true, true, false, true, true},
		W: {false, false, true, true, false, true, true},
		U: {false, false, false, true, false, true, true},
		L: {false, false, false, false, true, true, true},
		E: {false, false, false, false, false, true, true},
		D: {false, false, false, false, false, false, true},
		R: {false, false, false, false, false, false, false},
	}
	for _, from := range all {
		for i, to := range all {
			if got := CanTransition(from, to); got != want[from][i] {
				t.Errorf("CanTransition(%v, %v) = %v, want %v", from, to, got, want[from][i])
			}
		}
	}
	if CanTransition(0, Up) || CanTransition(Up, 0) {
		t.Error("the invalid zero status must not transition")
	}
}

func TestWithStatusPanicsOnForbiddenTransition(t *testing.T) {
	m := NewMember(UniqueAddress{Host: "a", Port: 1, UID: 1}, nil, "")
	if got := m.WithStatus(Joining); got.Status != Joining {
		t.Fatal("same status must be a no-op")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Down -> Up must panic")
		}
	}()
	m.WithStatus(Down).WithStatus(Up)
}

func TestStatusNames(t *testing.T) {
	for s := Joining; s <= Removed; s++ {
		if p, ok := ParseStatus(s.String()); !ok || p != s {
			t.Errorf("ParseStatus(%q) = %v, %v", s.String(), p, ok)
		}
	}
	if _, ok := ParseStatus("Invalid"); ok {
		t.Error("Invalid must not parse")
	}
}
