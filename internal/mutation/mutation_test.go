package mutation

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Set
		err  string
	}{
		{in: "", want: Set{}},
		{in: "secondary-writes", want: Set{SecondaryWrites: true}},
		{in: " ack-without-write , secondary-claims-primary", want: Set{AckWithoutWrite: true, SecondaryClaimsPrimary: true}},
		{in: "secondary-writes,", want: Set{SecondaryWrites: true}},
		{in: "secondary-write", err: `unknown mutation "secondary-write"; accepted: secondary-writes, secondary-claims-primary, ack-without-write, historian-duplicates`},
	} {
		got, err := Parse(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Parse(%q) error %v, want one containing %q", c.in, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.in, err)
		case got != c.want:
			t.Errorf("Parse(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestStringRoundTrips(t *testing.T) {
	for _, name := range Names() {
		s, err := Parse(name)
		if err != nil || s.String() != name || !s.Any() {
			t.Errorf("Parse(%q) = %+v, %v; String %q", name, s, err, s.String())
		}
	}
	if (Set{}).Any() || (Set{}).String() != "" {
		t.Error("the zero Set is not none")
	}
}
