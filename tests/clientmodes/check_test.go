package clientmodes

import (
	"strings"
	"testing"
)

// TestContiguous: the value log check finds a missed value, a repeated
// one and one out of order, and accepts the wrap from 65535 to 0.
func TestContiguous(t *testing.T) {
	vals := func(vs ...uint16) []Value {
		out := make([]Value, len(vs))
		for i, v := range vs {
			out[i] = Value{V: v, Server: "urn:a:otopcua", Seq: i}
		}
		return out
	}
	for _, c := range []struct {
		name string
		in   []Value
		want string // "" for none
	}{
		{"empty", nil, ""},
		{"one", vals(7), ""},
		{"run", vals(7, 8, 9, 10), ""},
		{"wrap", vals(65534, 65535, 0, 1), ""},
		{"missed", vals(7, 8, 10), "missed"},
		{"twice", vals(7, 8, 8, 9), "twice"},
		{"out of order", vals(7, 9, 8), "missed"},
		{"back", vals(7, 8, 6), "twice or out of order"},
	} {
		err := Contiguous(c.in)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}
