package host

import (
	"testing"

	"github.com/otopcua/otopcua/config"
)

// TestAloneByConfiguration: only a node with no peers and no seed but
// itself is a single-node set, which the gate services before it formed
// its cluster.
func TestAloneByConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seeds []string
		peers []string
		want  bool
	}{
		{"no seeds, no peers", nil, nil, true},
		{"own address only", []string{"10.0.0.1:4053"}, nil, true},
		{"own address, akka form", []string{"akka.tcp://otopcua@10.0.0.1:4053"}, nil, true},
		{"a pair's seeds", []string{"10.0.0.1:4053", "10.0.0.2:4053"}, []string{"urn:b:otopcua"}, false},
		{"peers listed", []string{"10.0.0.1:4053"}, []string{"urn:b:otopcua"}, false},
		{"another seed, no peers", []string{"10.0.0.9:4053"}, nil, false},
		{"a seed that does not parse", []string{"10.0.0.1:4053", "nonsense"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{}
			cfg.Cluster.PublicHostname, cfg.Cluster.Port = "10.0.0.1", 4053
			cfg.Cluster.SeedNodes, cfg.OpcUa.PeerApplicationUris = tc.seeds, tc.peers
			if got := aloneByConfiguration(cfg); got != tc.want {
				t.Fatalf("alone = %v, want %v", got, tc.want)
			}
		})
	}
}
