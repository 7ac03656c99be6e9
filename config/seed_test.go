package config

import "testing"

func TestParseSeedAddress(t *testing.T) {
	tests := []struct {
		in   string
		want SeedAddress
		ok   bool
	}{
		{"akka.tcp://otopcua@node-a.lan:4053", SeedAddress{"node-a.lan", 4053}, true},
		{"AKKA.TCP://OtOpcUa@node-a:4053", SeedAddress{"node-a", 4053}, true},
		{"node-b:4054", SeedAddress{"node-b", 4054}, true},
		{"127.0.0.1:1", SeedAddress{"127.0.0.1", 1}, true},
		{"[::1]:65535", SeedAddress{"::1", 65535}, true},
		{"akka.tcp://otopcua@[fe80::1]:4053", SeedAddress{"fe80::1", 4053}, true},
		{"host_with_underscore:4053", SeedAddress{"host_with_underscore", 4053}, true},

		{"", SeedAddress{}, false},
		{"node-a", SeedAddress{}, false},
		{"node-a:", SeedAddress{}, false},
		{":4053", SeedAddress{}, false},
		{"node-a:0", SeedAddress{}, false},
		{"node-a:65536", SeedAddress{}, false},
		{"node-a:+80", SeedAddress{}, false},
		{"node-a:4053x", SeedAddress{}, false},
		{"akka.tcp://other@node-a:4053", SeedAddress{}, false},
		{"akka.tcp://node-a:4053", SeedAddress{}, false},
		{"http://node-a:4053", SeedAddress{}, false},
		{"akka.tcp://otopcua@node-a:4053/", SeedAddress{}, false},
		{"node a:4053", SeedAddress{}, false},
		{"::1:4053", SeedAddress{}, false},
		{"[fe80::1%eth0]:4053", SeedAddress{}, false},
	}
	for _, tc := range tests {
		got, err := ParseSeedAddress(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("ParseSeedAddress(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if !tc.ok && err == nil {
			t.Errorf("ParseSeedAddress(%q) = %+v, want an error", tc.in, got)
		}
	}
}

func TestSeedAddressStringRoundTrips(t *testing.T) {
	for _, a := range []SeedAddress{{"node-a", 4053}, {"::1", 4054}, {"10.0.0.1", 1}} {
		b, err := ParseSeedAddress(a.String())
		if err != nil || b != a {
			t.Errorf("ParseSeedAddress(%q) = %+v, %v; want %+v", a.String(), b, err, a)
		}
	}
	if got := (SeedAddress{"::1", 4054}).String(); got != "[::1]:4054" {
		t.Errorf("String = %q, want [::1]:4054", got)
	}
}

func FuzzParseSeedAddress(f *testing.F) {
	for _, s := range []string{"akka.tcp://otopcua@node-a:4053", "node-b:4054", "[::1]:1", "x:0", "akka.tcp://@:", "::::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseSeedAddress(s)
		if err != nil {
			return
		}
		if a.Port < 1 || a.Port > 65535 || a.Host == "" {
			t.Fatalf("ParseSeedAddress(%q) accepted %+v", s, a)
		}
		b, err := ParseSeedAddress(a.String())
		if err != nil || b != a {
			t.Fatalf("round trip of %q: %+v -> %q -> %+v, %v", s, a, a.String(), b, err)
		}
	})
}
