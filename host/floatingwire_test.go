package host

import (
	"testing"
	"time"

	"github.com/otopcua/otopcua/floating"
)

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

// A release carries the newest epoch this node knows: its own view's, or
// any member's on the stream. A downed node's view epoch is 0, below what
// its fence admitted when it seized; the new owner's heartbeat carries the
// epoch under which the release is admitted.
func TestFloatingReleaseEpoch(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		view   uint64
		stream map[string]uint64
		want   uint64
	}{
		{"no stream", 7, nil, 7},
		{"downed: the new owner's epoch", 0, map[string]uint64{"a:4053": 5, "b:4053": 9}, 9},
		{"own view newer than the stream", 12, map[string]uint64{"a:4053": 5, "b:4053": 9}, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &floatingRuntime{stream: floating.NewStream("site")}
			for n, e := range c.stream {
				r.stream.Observe(floating.Heartbeat{ClusterID: "site", Node: n, Seq: 1, ObservedAt: at, Epoch: e})
			}
			if got := r.releaseEpoch(c.view); got != c.want {
				t.Errorf("releaseEpoch(%d) = %d, want %d", c.view, got, c.want)
			}
		})
	}
}
