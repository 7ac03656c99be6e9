package procs

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
)

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80",
		"00000000000000000000000001000000:01BB": "[::1]:443",
	} {
		got, ok := parseProcAddr(in)
		if !ok || got != netip.MustParseAddrPort(want) {
			t.Errorf("parseProcAddr(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "XYZ:0050", "0100:0050"} {
		if got, ok := parseProcAddr(bad); ok {
			t.Errorf("parseProcAddr(%q) = %v, want not ok", bad, got)
		}
	}
}

// TestConnOwnerFindsThisProcess: a connection this process opened is found
// among its own file descriptors, and not in another process's.
func TestConnOwnerFindsThisProcess(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	me := os.Getpid()
	if pid, err := ConnOwner(c.LocalAddr().String(), ln.Addr().String(), os.Getppid(), me); err != nil || pid != me {
		t.Fatalf("ConnOwner = %d, %v; want this process (%d)", pid, err, me)
	}
	if _, err := ConnOwner(c.LocalAddr().String(), ln.Addr().String(), os.Getppid()); !errors.Is(err, ErrNoOwner) {
		t.Fatalf("ConnOwner among the parent only: %v, want ErrNoOwner", err)
	}
}
