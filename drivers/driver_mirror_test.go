package drivers

import "testing"

func TestMirrorKey(t *testing.T) {
	for _, c := range []struct {
		path []string
		want string
	}{
		{[]string{"Line1"}, "Line1"},
		{[]string{"Line1", "Motor", "Temp"}, "Line1/Motor/Temp"},
		{[]string{"A/B", "C"}, "A&/B/C"},
		{[]string{"A", "B/C"}, "A/B&/C"},
		{[]string{"A&", "/B"}, "A&&/&/B"},
		{[]string{"Speed (rpm)", "°C"}, "Speed (rpm)/°C"},
	} {
		if got := MirrorKey(c.path); got != c.want {
			t.Errorf("MirrorKey(%q) = %q, want %q", c.path, got, c.want)
		}
	}
	// Distinct paths never share a key.
	seen := map[string][]string{}
	for _, p := range [][]string{{"A/B", "C"}, {"A", "B/C"}, {"A", "B", "C"}, {"A&/B", "C"}, {"A&", "B", "C"}} {
		k := MirrorKey(p)
		if q, dup := seen[k]; dup {
			t.Errorf("%q and %q share the key %q", p, q, k)
		}
		seen[k] = p
	}
}
