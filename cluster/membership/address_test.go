package membership

import (
	"errors"
	"testing"
)

func TestParseAddress(t *testing.T) {
	cases := []struct {
		in   string
		want Address
		ok   bool
	}{
		{"node-a:4053", Address{"node-a", 4053}, true},
		{"akka.tcp://otopcua@node-a:4053", Address{"node-a", 4053}, true},
		{"akka.tcp://otopcua@node-a:4053/", Address{"node-a", 4053}, true},
		{"akka://sys@10.0.0.1:1", Address{"10.0.0.1", 1}, true},
		{" node-b:65535 ", Address{"node-b", 65535}, true},
		{"[::1]:4053", Address{"::1", 4053}, true},
		{"akka.tcp://otopcua@[fe80::1]:4053", Address{"fe80::1", 4053}, true},
		{"node-a", Address{}, false},
		{"node-a:0", Address{}, false},
		{"node-a:65536", Address{}, false},
		{"node-a:port", Address{}, false},
		{":4053", Address{}, false},
		{"http://node-a:4053", Address{}, false},
		{"akka.tcp://node-a:4053", Address{}, false},
		{"akka.tcp://@node-a:4053", Address{}, false},
		{"a b:1", Address{}, false},
	}
	for _, c := range cases {
		got, err := ParseAddress(c.in)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("ParseAddress(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, ErrBadAddress) {
			t.Errorf("ParseAddress(%q) error %v does not wrap ErrBadAddress", c.in, err)
		}
	}
}

func TestAddressOrdering(t *testing.T) {
	a1 := UniqueAddress{Host: "a", Port: 2, UID: 9}
	a2 := UniqueAddress{Host: "a", Port: 10, UID: 1}
	b := UniqueAddress{Host: "b", Port: 1, UID: 1}
	if a1.Compare(a2) >= 0 || a2.Compare(b) >= 0 || b.Compare(a1) <= 0 {
		t.Fatal("addresses order by host, then numeric port")
	}
	if x, y := (UniqueAddress{"a", 1, 1}), (UniqueAddress{"a", 1, 2}); x.Compare(y) >= 0 {
		t.Fatal("same address orders by uid")
	}
	if got := (UniqueAddress{"a", 1, 7}).String(); got != "a:1#7" {
		t.Fatalf("String = %q", got)
	}
}

// FuzzParseAddress: whatever parses renders back to an address that parses
// to the same value.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"node-a:4053", "akka.tcp://otopcua@node-a:4053", "[::1]:1", "x", "akka://@:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			return
		}
		if a.Host == "" || a.Port < 1 || a.Port > 65535 {
			t.Fatalf("ParseAddress(%q) accepted %v", s, a)
		}
		b, err := ParseAddress(a.String())
		if err != nil || b != a {
			t.Fatalf("round trip of %q: %v -> %q -> %v, %v", s, a, a.String(), b, err)
		}
	})
}
