package demo

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/otopcua/otopcua/internal/ports"
)

// ClusterID is the application ClusterId of the demo pair.
const ClusterID = "demo"

// NodePorts are the loopback ports of one demo node.
type NodePorts struct{ Cluster, OpcUa, HTTP int }

// Node is one node of the demo pair as the demo starts it.
type Node struct {
	Name  string
	Ports NodePorts
	// ConfigPath is its appsettings.json, LogPath the file its output goes to.
	ConfigPath, LogPath string
}

// Endpoint is the node's OPC UA endpoint URL.
func (n Node) Endpoint() string { return fmt.Sprintf("opc.tcp://127.0.0.1:%d", n.Ports.OpcUa) }

// HTTP is the base URL of the node's HTTP port.
func (n Node) HTTP() string { return fmt.Sprintf("http://127.0.0.1:%d", n.Ports.HTTP) }

// ClusterAddr is the node's cluster address (its NodeId).
func (n Node) ClusterAddr() string { return fmt.Sprintf("127.0.0.1:%d", n.Ports.Cluster) }

// ApplicationURI is the node's OPC UA ApplicationUri.
func (n Node) ApplicationURI() string { return "urn:otopcua-demo:" + n.Name }

// NodeConfig is the appsettings.json of node i of nodes, all in dir: both
// seeds on both nodes (the first node is the first seed), roles admin and
// driver, ClusterId "demo", the embedded SQLite Config DB shared through
// one file in dir, the other nodes as OPC UA peers, everything on
// 127.0.0.1.
func NodeConfig(dir string, nodes []Node, i int) map[string]any {
	self := nodes[i]
	var seeds, peerURIs, peerURLs []string
	for j, n := range nodes {
		seeds = append(seeds, n.ClusterAddr())
		if j != i {
			peerURIs = append(peerURIs, n.ApplicationURI())
			peerURLs = append(peerURLs, n.Endpoint())
		}
	}
	return map[string]any{
		"Cluster": map[string]any{
			"Hostname": "127.0.0.1", "PublicHostname": "127.0.0.1", "Port": self.Ports.Cluster,
			"SeedNodes": seeds,
			"Roles":     []string{"admin", "driver"},
		},
		"Node": map[string]any{"ClusterId": ClusterID},
		"OpcUa": map[string]any{
			"Port":                self.Ports.OpcUa,
			"ApplicationUri":      self.ApplicationURI(),
			"ApplicationName":     "otopcua demo " + self.Name,
			"PeerApplicationUris": peerURIs,
			"PeerDiscoveryUrls":   peerURLs,
			// The demo's own client writes the Setpoint anonymously on
			// loopback; a node's default lets anonymous sessions read only.
			"Authorization": map[string]any{"Anonymous": []string{"read", "write", "acknowledge", "call"}},
		},
		"ConfigDb": map[string]any{"Provider": "sqlite", "ConnectionString": ConfigDBConnectionString(dir)},
		"LocalDb":  map[string]any{"Path": filepath.Join(dir, self.Name+"-local.db")},
		"Http":     map[string]any{"Hostname": "127.0.0.1", "Port": self.Ports.HTTP},
		"Telemetry": map[string]any{
			"LogLevel": "info", "LogFormat": "json", "MetricsEnabled": true,
		},
	}
}

// ConfigDBConnectionString is the SQLite Config DB both nodes share.
func ConfigDBConnectionString(dir string) string {
	return "file:" + filepath.Join(dir, "config.db")
}

// marshalConfig renders a configuration as indented JSON.
func marshalConfig(cfg map[string]any) ([]byte, error) {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago, below the ephemeral range so that a node restarted at its
// address finds it free (internal/ports).
func freePorts(n int) ([]int, error) {
	ps, err := ports.Free(n)
	if err != nil {
		return nil, fmt.Errorf("choose free ports: %w", err)
	}
	return ps, nil
}

// childEnv is environ without the variables that would override the
// generated configuration (OTOPCUA_<SECTION>__<KEY> and OTOPCUA_ROLES): the
// demo's files say everything about its nodes.
func childEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		up := strings.ToUpper(k)
		if up == "OTOPCUA_ROLES" || (strings.HasPrefix(up, "OTOPCUA_") && strings.Contains(up, "__")) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
