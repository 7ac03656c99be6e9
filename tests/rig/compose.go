// Package rig is otopcua's docker-compose rig without a Docker engine: it
// loads docker-compose.yml with the compose specification's own loader,
// checks its wiring, and runs the same topology — six `otopcua host`
// nodes in three ClusterIds, PostgreSQL, the Modbus simulators, the
// one-shot deploy and a real Prometheus with the committed configuration
// and rules — as plain processes on loopback addresses.
package rig

import (
	"context"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// ComposeFile is the rig's compose file, relative to the repository root.
const ComposeFile = "docker-compose.yml"

// LoadCompose loads root/docker-compose.yml as `docker compose` would on a
// machine with an empty environment and no .env file (the rig must run
// as is), with relative paths resolved against root.
func LoadCompose(ctx context.Context, root string) (*types.Project, error) {
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, ComposeFile)},
		cli.WithWorkingDirectory(root),
		cli.WithEnv(nil),
		cli.WithDiscardEnvFile,
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
	)
	if err != nil {
		return nil, err
	}
	return opts.LoadProject(ctx)
}

// Node is one `otopcua host` service of the compose file.
type Node struct {
	Service string
	Env     map[string]string // the service's environment, resolved
	// From the environment:
	ClusterID, PublicHostname, ApplicationURI string
	ClusterPort, OpcUaPort, HTTPPort          int
	Seeds, PeerURIs, PeerURLs                 []string
}

// Simulator is one `otopcua simulate modbus` service.
type Simulator struct {
	Service string
	Listen  string // --listen
	Profile string // --profile
	Command []string
}

// Topology is what the rig's services are, by kind.
type Topology struct {
	Nodes      []Node
	Simulators []Simulator
	Deploy     *types.ServiceConfig // the one-shot `otopcua deploy`
	ConfigDb   *types.ServiceConfig // the PostgreSQL service
	Prometheus *types.ServiceConfig
	Grafana    *types.ServiceConfig
}

// TopologyOf sorts p's services by what they run: an otopcua image's command
// (host, simulate, deploy) or a well-known image (postgres, prometheus,
// grafana). Any other service is an error, so that a new service must be
// taught to the rig.
func TopologyOf(p *types.Project) (*Topology, error) {
	t := &Topology{}
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		cmd := []string(s.Command)
		image := s.Image
		switch {
		case strings.HasPrefix(image, "otopcua") && len(cmd) > 0 && cmd[0] == "host":
			n, err := nodeOf(&s)
			if err != nil {
				return nil, fmt.Errorf("service %s: %w", name, err)
			}
			t.Nodes = append(t.Nodes, n)
		case strings.HasPrefix(image, "otopcua") && len(cmd) > 1 && cmd[0] == "simulate" && cmd[1] == "modbus":
			sim := Simulator{Service: name, Listen: flagValue(cmd, "--listen"), Profile: flagValue(cmd, "--profile"), Command: cmd}
			t.Simulators = append(t.Simulators, sim)
		case strings.HasPrefix(image, "otopcua") && len(cmd) > 0 && cmd[0] == "deploy":
			t.Deploy = &s
		case strings.HasPrefix(image, "postgres"):
			t.ConfigDb = &s
		case strings.HasPrefix(image, "prom/prometheus"):
			t.Prometheus = &s
		case strings.HasPrefix(image, "grafana/grafana"):
			t.Grafana = &s
		default:
			return nil, fmt.Errorf("service %s (image %q, command %q): the rig does not know what it is", name, image, cmd)
		}
	}
	return t, nil
}

// NodesOf returns the nodes of clusterID.
func (t *Topology) NodesOf(clusterID string) []Node {
	var out []Node
	for _, n := range t.Nodes {
		if n.ClusterID == clusterID {
			out = append(out, n)
		}
	}
	return out
}

// ClusterIDs lists the nodes' ClusterIds, sorted, once each.
func (t *Topology) ClusterIDs() []string {
	var ids []string
	for _, n := range t.Nodes {
		if !slices.Contains(ids, n.ClusterID) {
			ids = append(ids, n.ClusterID)
		}
	}
	slices.Sort(ids)
	return ids
}

func nodeOf(s *types.ServiceConfig) (Node, error) {
	n := Node{Service: s.Name, Env: map[string]string{}}
	for k, v := range s.Environment {
		if v != nil {
			n.Env[k] = *v
		}
	}
	var err error
	port := func(key string) int {
		v, ok := n.Env[key]
		p, perr := strconv.Atoi(v)
		if !ok || perr != nil || p < 1 || p > 65535 {
			err = fmt.Errorf("%s = %q: want a port", key, v)
		}
		return p
	}
	n.ClusterPort = port("OTOPCUA_CLUSTER__PORT")
	n.OpcUaPort = port("OTOPCUA_OPCUA__PORT")
	n.HTTPPort = port("OTOPCUA_HTTP__PORT")
	n.ClusterID = n.Env["OTOPCUA_NODE__CLUSTERID"]
	n.PublicHostname = n.Env["OTOPCUA_CLUSTER__PUBLICHOSTNAME"]
	n.ApplicationURI = n.Env["OTOPCUA_OPCUA__APPLICATIONURI"]
	n.Seeds = list(n.Env["OTOPCUA_CLUSTER__SEEDNODES"])
	n.PeerURIs = list(n.Env["OTOPCUA_OPCUA__PEERAPPLICATIONURIS"])
	n.PeerURLs = list(n.Env["OTOPCUA_OPCUA__PEERDISCOVERYURLS"])
	return n, err
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// flagValue returns the argument after name in cmd ("" when absent).
func flagValue(cmd []string, name string) string {
	for i, a := range cmd {
		if a == name && i+1 < len(cmd) {
			return cmd[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// SplitHostPort splits "host:port" with a numeric port.
func SplitHostPort(hp string) (string, int, error) {
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("%s: port %q is not a number", hp, p)
	}
	return h, n, nil
}

// BindSource returns the host path bound at target in s (a bind mount), or
// "" when none is.
func BindSource(s *types.ServiceConfig, target string) string {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source
		}
	}
	return ""
}

// HostPath maps a path inside s's container to the host path of the bind
// mount holding it ("" when no bind mount does).
func HostPath(s *types.ServiceConfig, inContainer string) string {
	for _, v := range s.Volumes {
		if v.Type != types.VolumeTypeBind {
			continue
		}
		if rest, ok := strings.CutPrefix(inContainer, v.Target); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			return filepath.Join(v.Source, rest)
		}
	}
	return ""
}
