package measure

import "testing"

func TestParseMachineCPU(t *testing.T) {
	cases := []struct {
		name        string
		in          string
		busy, total uint64
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"with guest time", "cpu  100 2 30 500 7 0 4 1 50 3\ncpu0 50 1 15 250 3 0 2 0 25 1\n", 137, 644},
		{"eight fields", "cpu 100 2 30 500 7 0 4\n", 136, 643},
		{"cpu line after others", "intr 5\ncpu 1 0 1 10 0 0 0 0 0 0\n", 2, 12},
		{"no cpu line", "cpu0 1 2 3 4 5 6 7 8\n", 0, 0},
		{"too short", "cpu 1 2 3\n", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			busy, total := ParseMachineCPU([]byte(c.in))
			if busy != c.busy || total != c.total {
				t.Fatalf("got busy %d total %d, want %d and %d", busy, total, c.busy, c.total)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	var f Faults
	if f.Count() != 0 || f.First() != "" {
		t.Fatalf("zero value: %d, %q", f.Count(), f.First())
	}
	f.Add("first")
	f.Add("second")
	if f.Count() != 2 || f.First() != "first" {
		t.Fatalf("got %d, %q; want 2, \"first\"", f.Count(), f.First())
	}
}
