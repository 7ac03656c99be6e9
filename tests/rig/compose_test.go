package rig

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/tests/procs"
)

func loadTopology(t *testing.T) (*types.Project, *Topology) {
	t.Helper()
	p, err := LoadCompose(context.Background(), procs.RepoRoot())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	top, err := TopologyOf(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, top
}

// TestComposeFileWiring checks docker-compose.yml the way `docker compose
// up` would need it to be, without a Docker engine: it loads with the
// compose specification's loader, and its parts fit together.
func TestComposeFileWiring(t *testing.T) {
	p, top := loadTopology(t)
	for _, problem := range wiringProblems(p, top) {
		t.Error(problem)
	}
}

// wiringProblems lists everything wrong with the compose file's wiring.
func wiringProblems(p *types.Project, top *Topology) []string {
	c := &checker{}
	c.check(p, top)
	return c.problems
}

type checker struct{ problems []string }

func (c *checker) errorf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *checker) check(p *types.Project, top *Topology) {

	// Three application clusters of two nodes each, in one mesh.
	if got := top.ClusterIDs(); !slices.Equal(got, []string{"MAIN", "SITE-A", "SITE-B"}) {
		c.errorf("ClusterIds %v, want MAIN, SITE-A, SITE-B", got)
		return
	}
	for _, cid := range top.ClusterIDs() {
		if n := len(top.NodesOf(cid)); n != 2 {
			c.errorf("ClusterId %s has %d nodes, want a pair", cid, n)
		}
	}
	byName := map[string]Node{}
	for _, n := range top.Nodes {
		byName[n.Service] = n
	}
	uris := map[string]string{}
	hostPorts := map[string]string{}
	seeds := top.Nodes[0].Seeds
	for _, n := range top.Nodes {
		s := p.Services[n.Service]
		func() {
			errorf := func(format string, args ...any) { c.errorf(n.Service+": "+format, args...) }
			// The node's configuration is valid as otopcua reads it.
			var env []string
			for k, v := range n.Env {
				env = append(env, k+"="+v)
			}
			cfg, err := config.Load("", env)
			if err != nil {
				errorf("the environment is not a valid otopcua configuration: %v", err)
				return
			}
			if cfg.Node.ClusterId != n.ClusterID || cfg.Cluster.Port != n.ClusterPort || cfg.Http.Port != n.HTTPPort {
				errorf("configuration %+v does not match the environment", cfg.Cluster)
			}
			if s.Restart != types.RestartPolicyUnlessStopped {
				errorf("restart %q, want unless-stopped (a node that exits, downed by the cluster, must come back)", s.Restart)
			}
			if n.PublicHostname != n.Service || (s.Hostname != "" && s.Hostname != n.Service) {
				errorf("PublicHostname %q / hostname %q: peers reach the node by its service name %q", n.PublicHostname, s.Hostname, n.Service)
			}
			if s.HealthCheck == nil || s.HealthCheck.Disable || !slices.Contains(s.HealthCheck.Test, "health") ||
				!strings.HasSuffix(s.HealthCheck.Test[1], "otopcua") {
				errorf("healthcheck %+v, want otopcua health", s.HealthCheck)
			}
			if len(s.Volumes) == 0 || s.Volumes[0].Target != "/var/lib/otopcua" || s.Volumes[0].Type != types.VolumeTypeVolume {
				errorf("volumes %+v: the LocalDb directory /var/lib/otopcua must be a named volume", s.Volumes)
			}
			if filepath.Dir(cfg.LocalDb.Path) != "/var/lib/otopcua" {
				errorf("LocalDb:Path %q is not on the node's volume", cfg.LocalDb.Path)
			}
			// One mesh: the same seeds everywhere, each a node's cluster port.
			if !slices.Equal(n.Seeds, seeds) {
				errorf("seeds %v, want the mesh's %v", n.Seeds, seeds)
			}
			// The pair: its peer is the other node of its ClusterId.
			var partner Node
			for _, o := range top.NodesOf(n.ClusterID) {
				if o.Service != n.Service {
					partner = o
				}
			}
			if !slices.Equal(n.PeerURIs, []string{partner.ApplicationURI}) {
				errorf("PeerApplicationUris %v, want its partner's [%s]", n.PeerURIs, partner.ApplicationURI)
			}
			if want := fmt.Sprintf("opc.tcp://%s:%d", partner.Service, partner.OpcUaPort); !slices.Equal(n.PeerURLs, []string{want}) {
				errorf("PeerDiscoveryUrls %v, want [%s]", n.PeerURLs, want)
			}
			if other, dup := uris[n.ApplicationURI]; dup {
				errorf("ApplicationUri %s also on %s", n.ApplicationURI, other)
			}
			uris[n.ApplicationURI] = n.Service
			// Published ports reach the node's own ports, each host port once.
			targets := map[uint32]bool{}
			for _, pc := range s.Ports {
				targets[pc.Target] = true
				if other, dup := hostPorts[pc.Published]; dup {
					errorf("host port %s also published by %s", pc.Published, other)
				}
				hostPorts[pc.Published] = n.Service
			}
			if !targets[uint32(n.OpcUaPort)] || !targets[uint32(n.HTTPPort)] {
				errorf("ports %+v do not publish OpcUa:Port %d and Http:Port %d", s.Ports, n.OpcUaPort, n.HTTPPort)
			}
			// The Config DB it names is the compose file's, started healthy first.
			u, err := url.Parse(cfg.ConfigDb.ConnectionString)
			if cfg.ConfigDb.Provider != "postgres" || err != nil {
				errorf("ConfigDb %s %q", cfg.ConfigDb.Provider, cfg.ConfigDb.ConnectionString)
				return
			}
			if u.Hostname() != top.ConfigDb.Name {
				errorf("the Config DB host %q is not the postgres service %q", u.Hostname(), top.ConfigDb.Name)
			}
			pass, _ := u.User.Password()
			dbEnv := top.ConfigDb.Environment
			if u.User.Username() != *dbEnv["POSTGRES_USER"] || pass != *dbEnv["POSTGRES_PASSWORD"] || strings.TrimPrefix(u.Path, "/") != *dbEnv["POSTGRES_DB"] {
				errorf("connection string credentials/database %q do not match the postgres service's", cfg.ConfigDb.ConnectionString)
			}
			if d, ok := s.DependsOn[top.ConfigDb.Name]; !ok || d.Condition != types.ServiceConditionHealthy {
				errorf("depends_on %+v: want %s with condition service_healthy", s.DependsOn, top.ConfigDb.Name)
			}
		}()
	}
	for _, seed := range seeds {
		host, port, err := SplitHostPort(seed)
		if n, ok := byName[host]; err != nil || !ok || n.ClusterPort != port {
			c.errorf("seed %q is not a node's cluster address", seed)
		}
	}
	if len(seeds) < 2 {
		c.errorf("seeds %v: name at least two nodes so the mesh can be joined while one is down", seeds)
	}

	// The Config DB has a healthcheck, as the nodes wait for it.
	if hc := top.ConfigDb.HealthCheck; hc == nil || hc.Disable || len(hc.Test) == 0 {
		c.errorf("the Config DB service %s has no healthcheck", top.ConfigDb.Name)
	}

	// The deploy one-shot stores one valid document per ClusterId, each
	// naming devices the compose file runs, on the nodes' Config DB.
	d := top.Deploy
	if d == nil {
		c.errorf("no deploy service")
		return
	}
	if d.Restart != "no" && d.Restart != "" {
		c.errorf("deploy restart %q: a one-shot must not restart", d.Restart)
	}
	if dep, ok := d.DependsOn[top.ConfigDb.Name]; !ok || dep.Condition != types.ServiceConditionHealthy {
		c.errorf("deploy depends_on %+v, want the Config DB healthy", d.DependsOn)
	}
	if got, want := *d.Environment["OTOPCUA_CONFIGDB__CONNECTIONSTRING"], top.Nodes[0].Env["OTOPCUA_CONFIGDB__CONNECTIONSTRING"]; got != want {
		c.errorf("deploy stores into %q, the nodes read %q", got, want)
	}
	sims := map[string]Simulator{}
	for _, s := range top.Simulators {
		sims[s.Service] = s
	}
	var deployed []string
	for _, arg := range d.Command[1:] {
		if strings.HasPrefix(arg, "-") {
			continue
		}
		host := HostPath(d, arg)
		if host == "" {
			c.errorf("deploy file %s is not in a bind mount", arg)
			continue
		}
		data, err := os.ReadFile(host)
		if err != nil {
			c.errorf("%v", err)
			continue
		}
		doc, err := deployment.Decode(data)
		if err != nil {
			c.errorf("%s: %v", host, err)
			continue
		}
		deployed = append(deployed, doc.ClusterId)
		for _, dev := range doc.Devices {
			if dev.Driver != "modbus-tcp" {
				continue
			}
			h, port, err := SplitHostPort(dev.Address)
			sim, ok := sims[h]
			if err != nil || !ok {
				c.errorf("%s: device %s at %q is not a simulator service", doc.ClusterId, dev.Name, dev.Address)
				continue
			}
			if _, lport, _ := SplitHostPort(sim.Listen); lport != port {
				c.errorf("%s: device %s port %d, simulator %s listens on %s", doc.ClusterId, dev.Name, port, h, sim.Listen)
			}
			for _, n := range top.NodesOf(doc.ClusterId) {
				if _, ok := p.Services[n.Service].DependsOn[h]; !ok {
					c.errorf("%s does not depend on its site's device %s", n.Service, h)
				}
			}
		}
	}
	slices.Sort(deployed)
	if !slices.Equal(deployed, top.ClusterIDs()) {
		c.errorf("deploy stores documents of %v, want one per ClusterId %v", deployed, top.ClusterIDs())
	}
	if !slices.Contains(d.Command, "--any-cluster") {
		c.errorf("deploy %q stores several clusters' documents: it needs --any-cluster", d.Command)
	}
	for _, s := range top.Simulators {
		if s.Profile == "" || s.Listen == "" {
			c.errorf("simulator %s: %q lacks --listen or --profile", s.Service, s.Command)
		}
	}

	// Prometheus scrapes every node with the committed rules.
	prom := top.Prometheus
	if prom == nil {
		c.errorf("no Prometheus service")
		return
	}
	cfgFile := flagValue(prom.Command, "--config.file")
	host := HostPath(prom, cfgFile)
	if host == "" {
		c.errorf("Prometheus --config.file %q is not in a bind mount", cfgFile)
		return
	}
	pc, err := readPromConfig(host)
	if err != nil {
		c.errorf("%v", err)
		return
	}
	var targets []string
	for _, sc := range pc.ScrapeConfigs {
		if sc.JobName != "otopcua" {
			continue
		}
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	var want []string
	for _, n := range top.Nodes {
		want = append(want, n.Service+":"+strconv.Itoa(n.HTTPPort))
	}
	slices.Sort(targets)
	slices.Sort(want)
	if !slices.Equal(targets, want) {
		c.errorf("Prometheus job otopcua scrapes %v, want every node %v", targets, want)
	}
	if len(pc.RuleFiles) == 0 {
		c.errorf("Prometheus loads no rule files")
	}
	for _, rf := range pc.RuleFiles {
		if _, err := os.Stat(filepath.Join(filepath.Dir(host), rf)); err != nil {
			c.errorf("rule file %s: %v", rf, err)
		}
	}

	// Grafana gets the provisioning and the dashboards.
	g := top.Grafana
	if g == nil {
		c.errorf("no Grafana service")
		return
	}
	prov := BindSource(g, "/etc/grafana/provisioning")
	if prov == "" {
		c.errorf("Grafana has no provisioning mount")
		return
	}
	for _, f := range []string{"datasources", "dashboards"} {
		entries, err := os.ReadDir(filepath.Join(prov, f))
		if err != nil || len(entries) == 0 {
			c.errorf("Grafana provisioning %s: %v", f, err)
		}
	}
	dash := HostPath(g, "/var/lib/grafana/dashboards")
	if files, _ := filepath.Glob(filepath.Join(dash, "*.json")); len(files) < 2 {
		c.errorf("Grafana dashboards mount %q holds %d dashboards, want the fleet and node dashboards", dash, len(files))
	}
	if d, ok := g.DependsOn[prom.Name]; !ok || d.Condition != types.ServiceConditionHealthy {
		c.errorf("Grafana depends_on %+v, want Prometheus healthy", g.DependsOn)
	}
}

// promConfig is the part of prometheus.yml the rig reads.
type promConfig struct {
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

func readPromConfig(path string) (promConfig, error) {
	var c promConfig
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// TestComposeMistakesAreCaught proves the wiring checks can fail: each
// mistake below, made to the loaded project, is named by them.
func TestComposeMistakesAreCaught(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name, want string
		edit       func(p *types.Project)
	}{
		{"a peer in another site", "PeerApplicationUris [urn:otopcua:site-a-1]", func(p *types.Project) {
			p.Services["main-1"].Environment["OTOPCUA_OPCUA__PEERAPPLICATIONURIS"] = str("urn:otopcua:site-a-1")
		}},
		{"a second mesh", "seeds [site-b-1:4053]", func(p *types.Project) {
			p.Services["site-b-2"].Environment["OTOPCUA_CLUSTER__SEEDNODES"] = str("site-b-1:4053")
		}},
		{"a misspelt key", "not a valid otopcua configuration", func(p *types.Project) {
			p.Services["site-a-1"].Environment["OTOPCUA_CLUSTER__SEEDNOEDS"] = str("x:1")
		}},
		{"no restart policy", "restart \"\"", func(p *types.Project) {
			s := p.Services["site-a-2"]
			s.Restart = ""
			p.Services["site-a-2"] = s
		}},
		{"a node Prometheus does not scrape", "scrapes", func(p *types.Project) {
			s := p.Services["main-2"]
			s.Environment["OTOPCUA_HTTP__PORT"] = str("9999")
			s.Ports = append(s.Ports, types.ServicePortConfig{Target: 9999, Published: "19999"})
			p.Services["main-2"] = s
		}},
		{"a device nobody runs", "is not a simulator service", func(p *types.Project) {
			delete(p.Services, "sim-site-b")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := loadTopology(t)
			tc.edit(p)
			top, err := TopologyOf(p)
			if err != nil {
				t.Fatal(err)
			}
			problems := wiringProblems(p, top)
			if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Fatalf("problems %q do not name %q", problems, tc.want)
			}
		})
	}
	p, _ := loadTopology(t)
	p.Services["mystery"] = types.ServiceConfig{Name: "mystery", ContainerSpec: types.ContainerSpec{Image: "busybox"}}
	if _, err := TopologyOf(p); err == nil || !strings.Contains(err.Error(), "mystery") {
		t.Fatalf("an unknown service was accepted: %v", err)
	}
}
