package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otopcua/otopcua/opcua/pki/certfile"
)

// Item is one invalid setting.
type Item struct {
	// Key is the setting in appsettings.json notation, e.g.
	// "Cluster:SplitBrainResolverStrategy" or "Cluster:SeedNodes:1" for a
	// list element.
	Key string
	// Value is the offending value as written ("" when missing).
	Value string
	// Accepted says what would be accepted instead.
	Accepted string
	// Source names the environment variable that set the value; "" when it
	// came from the file or the defaults.
	Source string
}

// String renders the item as `Key = "Value": accepted …`.
func (i Item) String() string {
	src := ""
	if i.Source != "" {
		src = " (from " + i.Source + ")"
	}
	return fmt.Sprintf("%s = %s%s: %s", i.Key, quoteValue(i.Value), src, i.Accepted)
}

// quoteValue quotes a scalar; a JSON list or object is shown as written.
func quoteValue(v string) string {
	if (strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{")) && json.Valid([]byte(v)) {
		return v
	}
	return strconv.Quote(v)
}

// ValidationError lists every invalid setting found, in section order.
type ValidationError struct {
	// File is the configuration file, "" when none was read.
	File  string
	Items []Item
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid configuration")
	if e.File != "" {
		b.WriteString(" in " + e.File)
	}
	fmt.Fprintf(&b, ": %d problem", len(e.Items))
	if len(e.Items) != 1 {
		b.WriteString("s")
	}
	for _, it := range e.Items {
		b.WriteString("\n  " + it.String())
	}
	return b.String()
}

// oneOf phrases an enumeration.
func oneOf(values []string) string {
	return "accepted values are " + strings.Join(values, ", ")
}

const (
	acceptPort     = "accepted values are 1..65535"
	acceptHTTPPort = "accepted values are 0 (disabled) or 1..65535"
	acceptURI      = "accepted values are absolute URIs such as urn:node-a:otopcua"
)

var clusterIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// problems collects the items of one validation pass.
type problems []Item

func (p *problems) add(key, value, accepted string) {
	*p = append(*p, Item{Key: key, Value: value, Accepted: accepted})
}

// Validate checks every setting and returns a *ValidationError listing all
// problems, or nil. It expects derived defaults to be filled in (Load and
// Default do that). It reads the file system only to check AkkaConfigPath.
func (c *Config) Validate() error {
	var p problems
	c.validateCluster(&p)
	c.validateClusterSecurity(&p)
	c.validateNode(&p)
	c.validateOpcUa(&p)
	c.validateStores(&p)
	c.validateFloating(&p)
	c.validateHTTPAndTelemetry(&p)
	c.validatePortCollisions(&p)
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Items: p}
}

func (c *Config) validateCluster(p *problems) {
	cl := &c.Cluster
	if strings.TrimSpace(cl.Hostname) == "" {
		p.add("Cluster:Hostname", cl.Hostname, "accepted values are bind addresses such as 0.0.0.0 or 127.0.0.1")
	}
	checkPort(p, "Cluster:Port", cl.Port)
	if err := checkHost(cl.PublicHostname); err != nil {
		p.add("Cluster:PublicHostname", cl.PublicHostname, "accepted values are host names or IP addresses the peers can reach")
	}
	for i, s := range cl.SeedNodes {
		if _, err := ParseSeedAddress(s); err != nil {
			p.add(fmt.Sprintf("Cluster:SeedNodes:%d", i), s, "accepted values are "+SeedFormat)
		}
	}
	if len(cl.SeedNodes) == 0 && len(c.OpcUa.PeerApplicationUris) > 0 {
		p.add("Cluster:SeedNodes", "", "accepted values are one or more seed addresses when OpcUa:PeerApplicationUris lists peers: list every node of the set on every node")
	}
	for i, r := range cl.Roles {
		if !contains(Roles, r) {
			p.add(fmt.Sprintf("Cluster:Roles:%d", i), r, oneOf(Roles))
		}
	}
	if !contains(Strategies, cl.SplitBrainResolverStrategy) {
		p.add("Cluster:SplitBrainResolverStrategy", cl.SplitBrainResolverStrategy, oneOf(Strategies))
	}
	c.validateLease(p)
	checkPositive(p, "Cluster:AutoDownUnreachableAfter", cl.AutoDownUnreachableAfter)
	checkPositive(p, "Cluster:StableAfter", cl.StableAfter)
	if cl.SplitBrainResolverStrategy == StrategyStaticQuorum && cl.StaticQuorumSize < 1 {
		p.add("Cluster:StaticQuorumSize", strconv.Itoa(cl.StaticQuorumSize), "accepted values are integers ≥ 1 (required by static-quorum)")
	}
	fd := &cl.FailureDetector
	checkPositive(p, "Cluster:FailureDetector:HeartbeatInterval", fd.HeartbeatInterval)
	checkPositive(p, "Cluster:FailureDetector:AcceptableHeartbeatPause", fd.AcceptableHeartbeatPause)
	if !(fd.Threshold > 0) || math.IsInf(fd.Threshold, 0) {
		p.add("Cluster:FailureDetector:Threshold", strconv.FormatFloat(fd.Threshold, 'g', -1, 64), "accepted values are numbers greater than 0, typically 8 to 12")
	}
	if cl.AkkaConfigPath != "" {
		if st, err := os.Stat(cl.AkkaConfigPath); err != nil || !st.Mode().IsRegular() {
			p.add("Cluster:AkkaConfigPath", cl.AkkaConfigPath, "accepted values are paths of an existing akka.conf file, or empty")
		}
	}
}

// validateClusterSecurity checks Cluster:Tls (all three files or none,
// and they load) and Cluster:Secret's length. The secret's value is never
// shown, only its length.
func (c *Config) validateClusterSecurity(p *problems) {
	if s := c.Cluster.Secret; s != "" && len(s) < MinClusterSecretLen {
		p.add("Cluster:Secret", fmt.Sprintf("(hidden, %d characters)", len(s)),
			fmt.Sprintf("accepted values are empty (no join check) or secrets of at least %d characters", MinClusterSecretLen))
	}
	t := c.Cluster.Tls
	if !t.Enabled() {
		return
	}
	missing := false
	for _, f := range []fileKey{
		{"Cluster:Tls:CaFile", t.CaFile, "PEM certificate authority files"},
		{"Cluster:Tls:CertFile", t.CertFile, "PEM certificate files"},
		{"Cluster:Tls:KeyFile", t.KeyFile, "PEM private key files"},
	} {
		if f.value == "" {
			missing = true
			p.add(f.key, "", "accepted values are "+f.what+"; Cluster:Tls needs CaFile, CertFile and KeyFile together, or none of them")
		}
	}
	if missing {
		return
	}
	if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
		p.add("Cluster:Tls:CertFile", t.CertFile, "accepted values are a readable PEM certificate whose private key is Cluster:Tls:KeyFile ("+err.Error()+")")
	}
	if err := checkCAFile(t.CaFile); err != nil {
		p.add("Cluster:Tls:CaFile", t.CaFile, "accepted values are a readable PEM file with at least one CA certificate ("+err.Error()+")")
	}
}

// checkCAFile reports whether path holds PEM certificates only, at least
// one.
func checkCAFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Errorf("PEM block %q is not a CERTIFICATE", b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate found")
	}
	return nil
}

func (c *Config) validateNode(p *problems) {
	if !clusterIDPattern.MatchString(c.Node.ClusterId) {
		p.add("Node:ClusterId", c.Node.ClusterId, "accepted values are non-empty names of letters, digits, '.', '_' and '-'")
	}
}

func (c *Config) validateOpcUa(p *problems) {
	o := &c.OpcUa
	checkPort(p, "OpcUa:Port", o.Port)
	if !validURI(o.ApplicationUri) {
		p.add("OpcUa:ApplicationUri", o.ApplicationUri, acceptURI)
	}
	if strings.TrimSpace(o.ApplicationName) == "" {
		p.add("OpcUa:ApplicationName", o.ApplicationName, "accepted values are non-empty names")
	}
	seen := map[string]int{}
	for i, u := range o.PeerApplicationUris {
		key := fmt.Sprintf("OpcUa:PeerApplicationUris:%d", i)
		switch first, dup := seen[u]; {
		case !validURI(u):
			p.add(key, u, acceptURI)
		case u == o.ApplicationUri:
			p.add(key, u, "accepted values are the other servers' URIs, not this node's own OpcUa:ApplicationUri")
		case dup:
			p.add(key, u, fmt.Sprintf("accepted values are URIs listed once; this one is already OpcUa:PeerApplicationUris:%d", first))
		default:
			seen[u] = i
		}
	}
	for i, s := range o.PeerDiscoveryUrls {
		if !validOpcTCP(s) {
			p.add(fmt.Sprintf("OpcUa:PeerDiscoveryUrls:%d", i), s, "accepted values are endpoint URLs such as opc.tcp://node-b:4840")
		}
	}
	c.validateRedundancySupport(p)
	if len(o.Security.Policies) == 0 {
		p.add("OpcUa:Security:Policies", "", "accepted values are lists with at least one policy: "+strings.Join(SecurityPolicies, ", "))
	}
	for i, pol := range o.Security.Policies {
		key := fmt.Sprintf("OpcUa:Security:Policies:%d", i)
		switch first := slices.Index(o.Security.Policies, pol); {
		case !contains(SecurityPolicies, pol):
			p.add(key, pol, oneOf(SecurityPolicies))
		case first < i:
			p.add(key, pol, fmt.Sprintf("accepted values are policies listed once; this one is already OpcUa:Security:Policies:%d", first))
		}
	}
	validateSecurityFiles(p, &o.Security)
	byRole := o.Authorization.ByRole()
	for _, role := range AuthorizationRoles {
		for i, r := range byRole[role] {
			if !contains(Rights, r) {
				p.add(fmt.Sprintf("OpcUa:Authorization:%s:%d", role, i), r, oneOf(Rights))
			}
		}
	}
	if !contains(WriteModes, o.WriteMode) {
		p.add("OpcUa:WriteMode", o.WriteMode, oneOf(WriteModes))
	}
	checkPositive(p, "OpcUa:WriteTimeout", o.WriteTimeout)
	c.validateLimits(p)
	checkPositive(p, "Deployment:PollInterval", c.Deployment.PollInterval)
	if d := c.Redundancy.ManualFailoverDrain; d < 0 || d > MaxManualFailoverDrain {
		p.add("Redundancy:ManualFailoverDrain", d.String(), "accepted values are durations from 0s to 60s, as "+DurationFormat)
	}
	if d := c.Redundancy.PromotionHold; d < 0 || d > MaxPromotionHold {
		p.add("Redundancy:PromotionHold", d.String(), "accepted values are durations from 0s to 30s, as "+DurationFormat)
	}
	c.validateDeviceHealth(p)
}

// validateDeviceHealth checks Redundancy:DeviceHealth and its timings.
func (c *Config) validateDeviceHealth(p *problems) {
	r := c.Redundancy
	if !contains(DeviceHealthModes, r.DeviceHealth) {
		p.add("Redundancy:DeviceHealth", r.DeviceHealth, oneOf(DeviceHealthModes))
	}
	if d := r.DeviceFailoverAfter; d < MinDeviceFailoverAfter || d > MaxDeviceFailoverAfter {
		p.add("Redundancy:DeviceFailoverAfter", d.String(), "accepted values are durations from 1s to 10m, as "+DurationFormat)
	}
	if d := r.DeviceFailoverHold; d < 0 || d > MaxDeviceFailoverHold {
		p.add("Redundancy:DeviceFailoverHold", d.String(), "accepted values are durations from 0s to 1h, as "+DurationFormat)
	}
}

// validateLease checks Cluster:Lease: lease-majority needs a shared lease.
func (c *Config) validateLease(p *problems) {
	cl, l := &c.Cluster, &c.Cluster.Lease
	switch {
	case l.Provider != "" && !contains(LeaseProviders, l.Provider):
		p.add("Cluster:Lease:Provider", l.Provider, oneOf(LeaseProviders))
	case l.Provider == "" && cl.SplitBrainResolverStrategy == StrategyLeaseMajority:
		p.add("Cluster:Lease:Provider", "", "lease-majority needs a lease every node of the set shares: accepted values are configdb (the Config DB, networked) or etcd (with Cluster:Lease:Endpoints)")
	}
	if l.Ttl < MinLeaseTtl || l.Ttl > MaxLeaseTtl {
		p.add("Cluster:Lease:Ttl", l.Ttl.String(), "accepted values are durations from 1s to 60s, as "+DurationFormat)
	}
	if l.Provider == LeaseEtcd && len(l.Endpoints) == 0 {
		p.add("Cluster:Lease:Endpoints", "", "accepted values are one or more etcd client URLs such as http://10.0.0.5:2379 (required by the etcd lease)")
	}
	for i, e := range l.Endpoints {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add(fmt.Sprintf("Cluster:Lease:Endpoints:%d", i), e, "accepted values are etcd client URLs such as http://10.0.0.5:2379")
		}
	}
}

func (c *Config) validateStores(p *problems) {
	db := &c.ConfigDb
	if !contains(Providers, db.Provider) {
		p.add("ConfigDb:Provider", db.Provider, oneOf(Providers))
	} else if strings.TrimSpace(db.ConnectionString) == "" {
		p.add("ConfigDb:ConnectionString", "", "accepted values are non-empty connection strings (required for "+db.Provider+")")
	}
	if strings.TrimSpace(c.LocalDb.Path) == "" {
		p.add("LocalDb:Path", c.LocalDb.Path, "accepted values are file paths such as otopcua-local.db")
	}
	if strings.TrimSpace(c.History.Path) == "" {
		p.add("History:Path", c.History.Path, "accepted values are directory paths such as otopcua-history")
	}
	if m := c.History.MaxSizeMiB; m != 0 && (m < MinHistoryMaxSizeMiB || m > MaxHistoryMaxSizeMiB) {
		p.add("History:MaxSizeMiB", strconv.Itoa(m), fmt.Sprintf("accepted values are 0 (no limit) or MiB from %d to %d (16 TiB)", MinHistoryMaxSizeMiB, MaxHistoryMaxSizeMiB))
	}
	c.validateReplication(p)
}

func (c *Config) validateHTTPAndTelemetry(p *problems) {
	if c.Http.Port < 0 || c.Http.Port > 65535 {
		p.add("Http:Port", strconv.Itoa(c.Http.Port), acceptHTTPPort)
	}
	if c.Http.Port != 0 && strings.TrimSpace(c.Http.Hostname) == "" {
		p.add("Http:Hostname", c.Http.Hostname, "accepted values are bind addresses such as 0.0.0.0 or 127.0.0.1")
	}
	checkPositive(p, "Http:ReadTimeout", c.Http.ReadTimeout)
	checkPositive(p, "Http:WriteTimeout", c.Http.WriteTimeout)
	if c.Http.MaxBodyBytes < 1024 {
		p.add("Http:MaxBodyBytes", strconv.Itoa(c.Http.MaxBodyBytes), "accepted values are whole numbers ≥ 1024 (bytes)")
	}
	c.validateHTTPTLS(p)
	if !contains(LogLevels, c.Telemetry.LogLevel) {
		p.add("Telemetry:LogLevel", c.Telemetry.LogLevel, oneOf(LogLevels))
	}
	if !contains(LogFormats, c.Telemetry.LogFormat) {
		p.add("Telemetry:LogFormat", c.Telemetry.LogFormat, oneOf(LogFormats))
	}
}

// validateHTTPTLS checks that Http:Tls names both files and that they
// hold a certificate and its key.
func (c *Config) validateHTTPTLS(p *problems) {
	t := c.Http.Tls
	if !pairGiven(p, fileKey{"Http:Tls:CertFile", t.CertFile, "PEM certificate files"},
		fileKey{"Http:Tls:KeyFile", t.KeyFile, "PEM private key files"}) {
		return
	}
	if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
		p.add("Http:Tls:CertFile", t.CertFile, "accepted values are a readable PEM certificate whose private key is Http:Tls:KeyFile ("+err.Error()+")")
	}
}

// fileKey is a file setting: its key, its value and what files it accepts.
type fileKey struct{ key, value, what string }

// pairGiven checks that a certificate file setting and its key file
// setting are given together. It reports whether both are set.
func pairGiven(p *problems, cert, key fileKey) bool {
	switch {
	case cert.value == "" && key.value == "":
		return false
	case cert.value == "":
		p.add(cert.key, "", "accepted values are "+cert.what+"; it is required when "+key.key+" is set")
		return false
	case key.value == "":
		p.add(key.key, "", "accepted values are "+key.what+"; it is required when "+cert.key+" is set")
		return false
	}
	return true
}

// validateSecurityFiles checks OpcUa:Security:PkiDir and that
// CertificateFile and KeyFile come together and load as an RSA pair of at
// least 2048 bits.
func validateSecurityFiles(p *problems, s *SecurityConfig) {
	if strings.TrimSpace(s.PkiDir) == "" {
		p.add("OpcUa:Security:PkiDir", s.PkiDir, "accepted values are directory paths, such as pki (the default) or /var/lib/otopcua/pki")
	}
	if !pairGiven(p, fileKey{"OpcUa:Security:CertificateFile", s.CertificateFile, "DER or PEM certificate files"},
		fileKey{"OpcUa:Security:KeyFile", s.KeyFile, "RSA private key files"}) {
		return
	}
	if _, _, err := certfile.LoadKeyPair(s.CertificateFile, s.KeyFile); err != nil {
		p.add("OpcUa:Security:CertificateFile", s.CertificateFile, "accepted values are a readable DER or PEM certificate with an RSA key of at least 2048 bits whose private key is OpcUa:Security:KeyFile ("+err.Error()+")")
	}
}

// validatePortCollisions reports a port used twice by this node's listeners.
func (c *Config) validatePortCollisions(p *problems) {
	type listener struct {
		key  string
		port int
	}
	ls := []listener{{"Cluster:Port", c.Cluster.Port}, {"OpcUa:Port", c.OpcUa.Port}}
	if c.Http.Port != 0 {
		ls = append(ls, listener{"Http:Port", c.Http.Port})
	}
	if c.LocalDb.SyncListenPort != 0 {
		ls = append(ls, listener{"LocalDb:SyncListenPort", c.LocalDb.SyncListenPort})
	}
	for i := 1; i < len(ls); i++ {
		for j := 0; j < i; j++ {
			if ls[i].port == ls[j].port && ls[i].port >= 1 && ls[i].port <= 65535 {
				p.add(ls[i].key, strconv.Itoa(ls[i].port), "accepted values are ports not already used by "+ls[j].key+" on this node")
				break
			}
		}
	}
}

func checkPort(p *problems, key string, port int) {
	if port < 1 || port > 65535 {
		p.add(key, strconv.Itoa(port), acceptPort)
	}
}

func checkPositive(p *problems, key string, d time.Duration) {
	if d <= 0 {
		p.add(key, d.String(), "accepted values are durations greater than 0, as "+DurationFormat)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func validURI(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && (u.Opaque != "" || u.Host != "" || u.Path != "")
}

func validOpcTCP(s string) bool {
	u, err := url.Parse(s)
	if err != nil || !strings.EqualFold(u.Scheme, "opc.tcp") || u.Hostname() == "" {
		return false
	}
	if port := u.Port(); port != "" {
		if _, err := parsePort(port); err != nil {
			return false
		}
	}
	return true
}

// Warnings lists settings that are valid but probably not what a redundant
// pair wants. They never stop start-up.
func (c *Config) Warnings() []string {
	var w []string
	cl := &c.Cluster
	if cl.SelfFormEnabled() && len(cl.SeedNodes) > 0 && !cl.IsOwnSeed() {
		w = append(w, fmt.Sprintf("self-form fallback inactive: this node (%s) is not in its own Cluster:SeedNodes, so it waits for a seed forever when none answers", cl.NodeID()))
	}
	if cl.PublicHostname == "0.0.0.0" || cl.PublicHostname == "::" {
		w = append(w, "Cluster:PublicHostname is a wildcard address; peers cannot reach this node through it")
	}
	if cl.Lease.Provider == LeaseConfigDb && c.ConfigDb.Provider == ProviderSQLite {
		w = append(w, "Cluster:Lease:Provider is configdb on a SQLite Config DB: the lease is shared only by nodes on this machine that open the same file; a pair on two machines needs a networked Config DB (postgres, sqlserver) or Cluster:Lease:Provider etcd")
	}
	if cl.Lease.Provider != "" && cl.SplitBrainResolverStrategy != StrategyLeaseMajority {
		w = append(w, fmt.Sprintf("Cluster:Lease:Provider is %s but Cluster:SplitBrainResolverStrategy is %s: only lease-majority uses the lease", cl.Lease.Provider, cl.SplitBrainResolverStrategy))
	}
	if c.Http.AnonymousRead && c.Http.Port != 0 {
		w = append(w, fmt.Sprintf("Http:AnonymousRead is true: %s serves the plant's read reports (devices and their addresses, live alert values, cluster members, peer addresses) to anyone who reaches Http:Port, without a session or an API token; set it to false outside a lab", c.Http.Addr()))
	}
	if c.OpcUa.Security.AutoAcceptUntrusted {
		w = append(w, "OpcUa:Security:AutoAcceptUntrusted is true: every unknown client certificate is trusted on first contact; set it to false once the clients are commissioned")
	}
	if !cl.Loopback() && !cl.Tls.Enabled() {
		w = append(w, fmt.Sprintf("Cluster:Hostname %s is not a loopback address and Cluster:Tls is not set: cluster traffic is clear text and any process that reaches Cluster:Port can talk to this node; set Cluster:Tls (CaFile, CertFile, KeyFile)", cl.Hostname))
	}
	w = append(w, c.floatingWarnings()...)
	if rw := c.replicationClearText(); rw != "" {
		w = append(w, rw)
	}
	if !cl.Loopback() && cl.Secret == "" {
		w = append(w, fmt.Sprintf("Cluster:Hostname %s is not a loopback address and Cluster:Secret is not set: any node that reaches Cluster:Port can join this cluster; set Cluster:Secret (or OTOPCUA_CLUSTER__SECRET) on every node", cl.Hostname))
	}
	seeds := len(cl.SeedAddresses())
	if seeds == 2 && (cl.SplitBrainResolverStrategy == StrategyKeepOldest || cl.SplitBrainResolverStrategy == StrategyStaticQuorum || cl.SplitBrainResolverStrategy == StrategyKeepMajority) {
		w = append(w, fmt.Sprintf("Cluster:SplitBrainResolverStrategy %s on a two-node pair: a crash of one node can take the survivor down too; auto-down keeps the survivor running", cl.SplitBrainResolverStrategy))
	}
	return w
}
