package host

import "testing"

func TestOPCUAListenHost(t *testing.T) {
	for _, c := range []struct{ hostname, floating, want string }{
		{"10.0.0.11", "", "10.0.0.11"},
		{"10.0.0.11", "10.0.0.100/24", "0.0.0.0"},
		{"fd00::11", "fd00::100/64", "::"},
		{"0.0.0.0", "10.0.0.100/24", "0.0.0.0"},
		{"::", "10.0.0.100/24", "::"},
		{"plc-a.plant", "10.0.0.100/24", "0.0.0.0"},
		{"plc-a.plant", "", "plc-a.plant"},
		{"127.0.0.1", "", "127.0.0.1"},
	} {
		if got := opcuaListenHost(c.hostname, c.floating); got != c.want {
			t.Errorf("opcuaListenHost(%q, %q) = %q, want %q", c.hostname, c.floating, got, c.want)
		}
	}
}
