package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Floating address providers accepted by
// Redundancy:FloatingAddress:Provider. They are floating.Provider's values;
// config names them itself so that it does not import the floating package.
const (
	FloatingLinux = "linux"
	FloatingAWS   = "aws"
	FloatingOCI   = "oci"
	FloatingAzure = "azure"
)

// FloatingProviders lists the accepted floating address providers, in the
// order messages name them.
var FloatingProviders = []string{FloatingLinux, FloatingAWS, FloatingOCI, FloatingAzure}

// Redundancy:FloatingAddress defaults and bounds.
const (
	DefaultFloatingHeartbeatInterval = 500 * time.Millisecond
	DefaultFloatingHeartbeatTtl      = 1500 * time.Millisecond
	DefaultFloatingPromotionHold     = time.Second
	DefaultFloatingReconcileInterval = 5 * time.Second
	DefaultFloatingAnnounceCount     = 3
	DefaultFloatingAnnounceInterval  = 200 * time.Millisecond
	DefaultFloatingAwsConfirmTimeout = 10 * time.Second

	MaxFloatingAnnounceCount    = 20
	MaxFloatingAnnounceInterval = 10 * time.Second
	MaxFloatingPromotionHold    = 60 * time.Second
)

// FloatingAddressConfig is the "Redundancy:FloatingAddress" section: one
// service address that follows the Primary of this node's ClusterId, so
// that a client which knows a single endpoint URL reaches whichever member
// is Primary. Every member of the ClusterId sets the same Address and
// Provider; Interface and the provider's resource ids are this node's own.
type FloatingAddressConfig struct {
	// Address is the floating address with its prefix length, IPv4
	// ("10.0.0.100/24") or IPv6 ("fd00::100/64"). Default "": no floating
	// address, and the rest of the section is not used.
	Address string

	// Interface is the network interface the address is added to
	// ("eth0"). Required for the linux provider; ignored by the others.
	Interface string

	// Provider is the network that carries the address: "linux" (default:
	// an address on a local interface announced with gratuitous ARP or an
	// unsolicited neighbour advertisement, one L2 segment), "aws" (a
	// secondary private IP of an ENI), "oci" (a secondary private IP of a
	// VNIC) or "azure" (an ipConfiguration of a NIC).
	Provider string

	// AutoFailover lets the address move on liveness: when the holder's
	// heartbeat goes stale on the shared stream, the new Primary seizes it.
	// Off, the address moves only when its holder gives it up (a planned
	// failover or a drain), so a crashed Primary keeps the address until
	// someone acts. Default true: the address exists for clients that
	// cannot fail over themselves, and a crash is the outage they need it
	// for; the epoch fence and the shared stream keep an automatic move
	// safe.
	AutoFailover bool

	// HeartbeatInterval is how often this node writes its heartbeat (and
	// whether it claims the address) to the Config DB, whose clock stamps
	// it. Default 500 ms.
	HeartbeatInterval time.Duration

	// HeartbeatTtl is how long a heartbeat keeps its member fresh, measured
	// on the Config DB's clock (the shared stream), never a node's wall
	// clock. At least HeartbeatInterval. Default 1.5 s.
	HeartbeatTtl time.Duration

	// PromotionHold is added to HeartbeatTtl before a stale holder loses
	// the address: it absorbs a short gap in the stream and damps flapping.
	// Not Redundancy:PromotionHold, which holds ServiceLevel 250. Accepted
	// 0 s to 60 s; default 1 s.
	PromotionHold time.Duration

	// ReconcileInterval is how often the node observes who really holds
	// the address (the interface and an ARP/ND probe on-premises, the
	// provider's describe call in the cloud) and repairs drift. At least
	// HeartbeatInterval. Default 5 s.
	ReconcileInterval time.Duration

	// AnnounceCount is how many gratuitous ARPs (IPv4) or unsolicited
	// neighbour advertisements (IPv6) the linux provider sends after it
	// takes the address. Accepted 1 to 20; default 3.
	AnnounceCount int

	// AnnounceInterval is the time between two announcements. Accepted
	// above 0 up to 10 s; default 200 ms.
	AnnounceInterval time.Duration

	// AllowDualClaim accepts that both sides of a partition may claim the
	// address, as they may both become Primary under a split-brain resolver
	// strategy that lets both sides act (auto-down). Without it such a
	// strategy with a floating address is refused at start-up. Default
	// false.
	AllowDualClaim bool

	// ApplicationUri is the ApplicationUri of the application identity the
	// members of the ClusterId share on the floating address (each node's
	// own endpoint keeps OpcUa:ApplicationUri). `otopcua pki floating`
	// provisions its certificate once; every member sets the same value.
	// Default "urn:otopcua:floating:<Node:ClusterId>".
	ApplicationUri string

	// Aws is the aws provider's section.
	Aws FloatingAWSConfig

	// Oci is the oci provider's section.
	Oci FloatingOCIConfig

	// Azure is the azure provider's section.
	Azure FloatingAzureConfig
}

// FloatingAWSConfig is the "Redundancy:FloatingAddress:Aws" section.
type FloatingAWSConfig struct {
	// NetworkInterfaceId is this node's ENI ("eni-0123456789abcdef0"),
	// which the address is assigned to as a secondary private IP.
	// Required for aws.
	NetworkInterfaceId string

	// Region is the ENI's region ("eu-central-1"). Required for aws.
	Region string

	// Endpoint is the EC2 API URL; set it only to reach a VPC endpoint or
	// a test fake. Default "": the SDK's endpoint for Region.
	Endpoint string

	// MetadataEndpoint is the instance metadata service URL the executor
	// confirms an assignment with; set it only for a test fake. Default
	// "": the SDK's (169.254.169.254).
	MetadataEndpoint string

	// ConfirmTimeout bounds the wait until instance metadata lists the
	// assigned address on the ENI (an assignment is asynchronous). Default
	// 10 s.
	ConfirmTimeout time.Duration
}

// FloatingOCIConfig is the "Redundancy:FloatingAddress:Oci" section.
type FloatingOCIConfig struct {
	// VnicId is this node's VNIC OCID ("ocid1.vnic.oc1..."), which the
	// address is assigned to as a secondary private IP. Required for oci.
	VnicId string

	// Endpoint is the OCI networking API URL; set it only to reach a
	// private endpoint or a test fake. Default "": the SDK's.
	Endpoint string
}

// FloatingAzureConfig is the "Redundancy:FloatingAddress:Azure" section.
type FloatingAzureConfig struct {
	// SubscriptionId is the Azure subscription of the NICs. Required for
	// azure.
	SubscriptionId string

	// ResourceGroup holds the members' NICs; the executor lists it to find
	// the NIC that holds the address. Required for azure.
	ResourceGroup string

	// NetworkInterface is the name of this node's NIC. Required for azure.
	NetworkInterface string

	// IpConfiguration is the name of the ipConfiguration that carries the
	// address ("floating"), the same on every member. Required for azure.
	IpConfiguration string

	// Endpoint is the Azure Resource Manager URL; set it only for a
	// sovereign cloud or a test fake. Default "": the SDK's.
	Endpoint string
}

// Enabled reports whether a floating address is configured.
func (f *FloatingAddressConfig) Enabled() bool { return f.Address != "" }

// Prefix is Address parsed; ok is false when it is empty or invalid
// (Validate reports the latter).
func (f *FloatingAddressConfig) Prefix() (p netip.Prefix, ok bool) {
	p, err := netip.ParsePrefix(f.Address)
	return p, err == nil
}

func defaultFloating() FloatingAddressConfig {
	return FloatingAddressConfig{
		Provider:          FloatingLinux,
		AutoFailover:      true,
		HeartbeatInterval: DefaultFloatingHeartbeatInterval,
		HeartbeatTtl:      DefaultFloatingHeartbeatTtl,
		PromotionHold:     DefaultFloatingPromotionHold,
		ReconcileInterval: DefaultFloatingReconcileInterval,
		AnnounceCount:     DefaultFloatingAnnounceCount,
		AnnounceInterval:  DefaultFloatingAnnounceInterval,
		Aws:               FloatingAWSConfig{ConfirmTimeout: DefaultFloatingAwsConfirmTimeout},
	}
}

// resolve normalises the spelling of Provider and defaults ApplicationUri
// from the node's ClusterId.
func (f *FloatingAddressConfig) resolve(clusterID string) {
	f.Provider = strings.ToLower(f.Provider)
	if f.ApplicationUri == "" {
		f.ApplicationUri = DefaultFloatingApplicationURI(clusterID)
	}
}

// DefaultFloatingApplicationURI is Redundancy:FloatingAddress:ApplicationUri's
// default for a ClusterId.
func DefaultFloatingApplicationURI(clusterID string) string {
	return "urn:otopcua:floating:" + url.PathEscape(clusterID)
}

const floatingKey = "Redundancy:FloatingAddress"

var (
	eniPattern     = regexp.MustCompile(`^eni-[0-9a-f]{8,17}$`)
	awsRegionShape = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
)

// validateFloating checks Redundancy:FloatingAddress. The timings are
// checked whether or not an address is set; what an address needs (its
// provider's keys, a strategy without dual-active, a shared Config DB) only
// when one is.
func (c *Config) validateFloating(p *problems) {
	f := &c.Redundancy.FloatingAddress
	validateFloatingTimings(p, f)
	if !validURI(f.ApplicationUri) {
		p.add(floatingKey+":ApplicationUri", f.ApplicationUri, acceptURI)
	} else if f.ApplicationUri == c.OpcUa.ApplicationUri {
		p.add(floatingKey+":ApplicationUri", f.ApplicationUri, "accepted values are URIs other than this node's OpcUa:ApplicationUri: the floating address's identity is shared by the members, the node's own is its alone")
	}
	if !contains(FloatingProviders, f.Provider) {
		p.add(floatingKey+":Provider", f.Provider, oneOf(FloatingProviders))
	}
	if !f.Enabled() {
		return
	}
	validateFloatingAddress(p, f.Address)
	switch f.Provider {
	case FloatingLinux:
		if strings.TrimSpace(f.Interface) == "" {
			p.add(floatingKey+":Interface", f.Interface, "accepted values are network interface names such as eth0 (required by the linux provider)")
		}
	case FloatingAWS:
		validateFloatingAWS(p, &f.Aws)
	case FloatingOCI:
		validateFloatingOCI(p, &f.Oci)
	case FloatingAzure:
		validateFloatingAzure(p, &f.Azure)
	}
	c.validateFloatingStrategy(p)
	c.validateFloatingStream(p)
}

func validateFloatingTimings(p *problems, f *FloatingAddressConfig) {
	checkPositive(p, floatingKey+":HeartbeatInterval", f.HeartbeatInterval)
	if f.HeartbeatTtl < f.HeartbeatInterval || f.HeartbeatTtl <= 0 {
		p.add(floatingKey+":HeartbeatTtl", f.HeartbeatTtl.String(),
			fmt.Sprintf("accepted values are durations of at least %s:HeartbeatInterval (%s), as %s", floatingKey, f.HeartbeatInterval, DurationFormat))
	}
	if d := f.PromotionHold; d < 0 || d > MaxFloatingPromotionHold {
		p.add(floatingKey+":PromotionHold", d.String(), "accepted values are durations from 0s to 60s, as "+DurationFormat)
	}
	if f.ReconcileInterval < f.HeartbeatInterval || f.ReconcileInterval <= 0 {
		p.add(floatingKey+":ReconcileInterval", f.ReconcileInterval.String(),
			fmt.Sprintf("accepted values are durations of at least %s:HeartbeatInterval (%s), as %s", floatingKey, f.HeartbeatInterval, DurationFormat))
	}
	if n := f.AnnounceCount; n < 1 || n > MaxFloatingAnnounceCount {
		p.add(floatingKey+":AnnounceCount", strconv.Itoa(n), "accepted values are whole numbers from 1 to 20")
	}
	if d := f.AnnounceInterval; d <= 0 || d > MaxFloatingAnnounceInterval {
		p.add(floatingKey+":AnnounceInterval", d.String(), "accepted values are durations above 0s up to 10s, as "+DurationFormat)
	}
	checkPositive(p, floatingKey+":Aws:ConfirmTimeout", f.Aws.ConfirmTimeout)
}

// validateFloatingAddress accepts a unicast IPv4 or IPv6 address with its
// prefix length.
func validateFloatingAddress(p *problems, s string) {
	const accepted = "accepted values are an IPv4 or IPv6 unicast address with its prefix length, such as 10.0.0.100/24 or fd00::100/64, or empty (no floating address)"
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		p.add(floatingKey+":Address", s, accepted)
		return
	}
	a := pfx.Addr()
	if a.IsUnspecified() || a.IsMulticast() || a.Is4In6() {
		p.add(floatingKey+":Address", s, accepted)
	}
}

func validateFloatingAWS(p *problems, a *FloatingAWSConfig) {
	const k = floatingKey + ":Aws"
	if !eniPattern.MatchString(a.NetworkInterfaceId) {
		p.add(k+":NetworkInterfaceId", a.NetworkInterfaceId, "accepted values are ENI ids such as eni-0123456789abcdef0 (this node's network interface; required by the aws provider)")
	}
	if !awsRegionShape.MatchString(a.Region) {
		p.add(k+":Region", a.Region, "accepted values are AWS region names such as eu-central-1 (required by the aws provider)")
	}
	checkEndpoint(p, k+":Endpoint", a.Endpoint)
	checkEndpoint(p, k+":MetadataEndpoint", a.MetadataEndpoint)
}

func validateFloatingOCI(p *problems, o *FloatingOCIConfig) {
	const k = floatingKey + ":Oci"
	if !strings.HasPrefix(o.VnicId, "ocid1.vnic.") || strings.ContainsAny(o.VnicId, " \t") {
		p.add(k+":VnicId", o.VnicId, "accepted values are VNIC OCIDs such as ocid1.vnic.oc1.eu-frankfurt-1.abcdef (this node's VNIC; required by the oci provider)")
	}
	checkEndpoint(p, k+":Endpoint", o.Endpoint)
}

func validateFloatingAzure(p *problems, a *FloatingAzureConfig) {
	const k = floatingKey + ":Azure"
	for _, f := range []struct{ key, value, what string }{
		{"SubscriptionId", a.SubscriptionId, "subscription ids (a GUID)"},
		{"ResourceGroup", a.ResourceGroup, "resource group names"},
		{"NetworkInterface", a.NetworkInterface, "NIC names (this node's network interface)"},
		{"IpConfiguration", a.IpConfiguration, "ipConfiguration names such as floating"},
	} {
		if strings.TrimSpace(f.value) == "" || strings.ContainsAny(f.value, "/ \t") {
			p.add(k+":"+f.key, f.value, "accepted values are "+f.what+" (required by the azure provider)")
		}
	}
	checkEndpoint(p, k+":Endpoint", a.Endpoint)
}

// checkEndpoint accepts "" or an http(s) URL with a host.
func checkEndpoint(p *problems, key, s string) {
	if s == "" {
		return
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(key, s, "accepted values are empty (the SDK's endpoint) or URLs such as https://ec2.eu-central-1.amazonaws.com or http://127.0.0.1:8081 (a test fake)")
	}
}

// DualActiveOnPartition reports whether the split-brain resolver strategy
// lets both sides of a partition of the pair keep running, so that both
// become Primary: auto-down always; static-quorum when StaticQuorumSize is
// at most half of the seed nodes (at least two counted). keep-oldest,
// keep-majority and lease-majority leave at most one side up.
func (c *ClusterConfig) DualActiveOnPartition() bool {
	switch c.SplitBrainResolverStrategy {
	case StrategyAutoDown:
		return true
	case StrategyStaticQuorum:
		return 2*c.StaticQuorumSize <= max(len(c.SeedAddresses()), 2)
	}
	return false
}

// validateFloatingStrategy refuses a floating address under a strategy
// that lets both sides of a partition act, unless AllowDualClaim says the
// operator accepts two claims of the address. With Cluster:AkkaConfigPath
// the strategy may come from akka.conf, which Load does not read: the
// check is then FloatingStrategyError's, once akka.conf is applied.
func (c *Config) validateFloatingStrategy(p *problems) {
	if c.Cluster.AkkaConfigPath != "" {
		return
	}
	c.floatingStrategy(p)
}

// FloatingStrategyError is the refusal of a floating address under a
// strategy that lets both sides of a partition act (without
// AllowDualClaim), as a *ValidationError, or nil. Validate checks it unless
// Cluster:AkkaConfigPath is set; the caller that applies akka.conf to the
// Cluster section calls it afterwards.
func (c *Config) FloatingStrategyError() error {
	var p problems
	if c.Redundancy.FloatingAddress.Enabled() {
		c.floatingStrategy(&p)
	}
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Items: p}
}

func (c *Config) floatingStrategy(p *problems) {
	f := &c.Redundancy.FloatingAddress
	if f.AllowDualClaim || !c.Cluster.DualActiveOnPartition() {
		return
	}
	p.add("Cluster:SplitBrainResolverStrategy", c.Cluster.SplitBrainResolverStrategy,
		fmt.Sprintf("accepted values with %s:Address set are lease-majority, keep-oldest or keep-majority: under %s both sides of a partition become Primary and both would claim the floating address %s; set %s:AllowDualClaim to true to accept that",
			floatingKey, c.Cluster.SplitBrainResolverStrategy, f.Address, floatingKey))
}

// validateFloatingStream refuses a floating address without a Config DB
// every member can share: its heartbeats, stamped by the Config DB's
// clock, are the stream that eligibility is judged on. An in-memory SQLite
// database is seen by this process alone.
func (c *Config) validateFloatingStream(p *problems) {
	db := &c.ConfigDb
	if db.Provider == ProviderSQLite && sqliteInMemory(db.ConnectionString) {
		p.add("ConfigDb:ConnectionString", db.ConnectionString,
			fmt.Sprintf("accepted values with %s:Address set are Config DBs every member of the ClusterId shares (a SQLite file or a networked postgres or sqlserver): the members' heartbeats, stamped by the Config DB's clock, decide who holds the floating address, and an in-memory database is seen by this process alone", floatingKey))
	}
}

// sqliteInMemory reports whether a SQLite connection string names an
// in-memory database (":memory:", "file::memory:" or mode=memory).
func sqliteInMemory(cs string) bool {
	name, query, _ := strings.Cut(strings.TrimSpace(cs), "?")
	if name == ":memory:" || name == "file::memory:" {
		return true
	}
	q, err := url.ParseQuery(query)
	return err == nil && q.Get("mode") == "memory"
}

// floatingWarnings are the valid floating address settings that a pair on
// two machines probably does not want.
func (c *Config) floatingWarnings() []string {
	f := &c.Redundancy.FloatingAddress
	var w []string
	if !f.Enabled() {
		return nil
	}
	if c.ConfigDb.Provider == ProviderSQLite {
		w = append(w, fmt.Sprintf("%s:Address is set on a SQLite Config DB: the heartbeats that decide who holds the address are shared only by nodes on this machine that open the same file; a pair on two machines needs a networked Config DB (postgres, sqlserver)", floatingKey))
	}
	if f.AllowDualClaim && c.Cluster.DualActiveOnPartition() {
		w = append(w, fmt.Sprintf("%s:AllowDualClaim is true under Cluster:SplitBrainResolverStrategy %s: during a partition both nodes may claim %s and clients may reach either; lease-majority avoids it", floatingKey, c.Cluster.SplitBrainResolverStrategy, f.Address))
	}
	if !f.AutoFailover {
		w = append(w, fmt.Sprintf("%s:AutoFailover is false: the address moves only on a planned failover or a drain; after a crash of its holder clients of %s wait until someone acts", floatingKey, f.Address))
	}
	return w
}

// FloatingSummary is one line describing the floating address for
// `otopcua config check` and `config effective`: "floating address off" or
// the address, provider, resource, timings and gates.
func (c *Config) FloatingSummary() string {
	f := &c.Redundancy.FloatingAddress
	if !f.Enabled() {
		return "floating address off (" + floatingKey + ":Address is not set)"
	}
	return fmt.Sprintf("floating address %s provider=%s %s auto-failover=%s heartbeat=%s ttl=%s hold=%s reconcile=%s dual-claim=%s",
		f.Address, f.Provider, f.resource(), onOff(f.AutoFailover), f.HeartbeatInterval, f.HeartbeatTtl,
		f.PromotionHold, f.ReconcileInterval, onOff(f.AllowDualClaim))
}

// resource names this node's provider resource as key=value.
func (f *FloatingAddressConfig) resource() string {
	switch f.Provider {
	case FloatingAWS:
		return "eni=" + f.Aws.NetworkInterfaceId + " region=" + f.Aws.Region
	case FloatingOCI:
		return "vnic=" + f.Oci.VnicId
	case FloatingAzure:
		return "nic=" + f.Azure.NetworkInterface + " ip-configuration=" + f.Azure.IpConfiguration
	}
	return fmt.Sprintf("interface=%s announce=%dx%s", f.Interface, f.AnnounceCount, f.AnnounceInterval)
}

// FloatingLines are the effective Redundancy:FloatingAddress keys, one
// "Key = value" line each, for `otopcua config effective`: every key of the
// section and the keys of the selected provider (another provider's keys
// are not used). Durations print as Go durations; an unset endpoint as
// "(SDK default)".
func (c *Config) FloatingLines() []string {
	f := &c.Redundancy.FloatingAddress
	kv := func(k string, v any) string { return fmt.Sprintf("%s:%s = %v", floatingKey, k, v) }
	endpoint := func(s string) string {
		if s == "" {
			return "(SDK default)"
		}
		return s
	}
	lines := []string{
		kv("Address", strconv.Quote(f.Address)), kv("Provider", f.Provider), kv("AutoFailover", f.AutoFailover),
		kv("HeartbeatInterval", f.HeartbeatInterval), kv("HeartbeatTtl", f.HeartbeatTtl), kv("PromotionHold", f.PromotionHold),
		kv("ReconcileInterval", f.ReconcileInterval), kv("AllowDualClaim", f.AllowDualClaim),
	}
	switch f.Provider {
	case FloatingLinux:
		lines = append(lines, kv("Interface", strconv.Quote(f.Interface)), kv("AnnounceCount", f.AnnounceCount), kv("AnnounceInterval", f.AnnounceInterval))
	case FloatingAWS:
		lines = append(lines, kv("Aws:NetworkInterfaceId", f.Aws.NetworkInterfaceId), kv("Aws:Region", f.Aws.Region),
			kv("Aws:Endpoint", endpoint(f.Aws.Endpoint)), kv("Aws:MetadataEndpoint", endpoint(f.Aws.MetadataEndpoint)), kv("Aws:ConfirmTimeout", f.Aws.ConfirmTimeout))
	case FloatingOCI:
		lines = append(lines, kv("Oci:VnicId", f.Oci.VnicId), kv("Oci:Endpoint", endpoint(f.Oci.Endpoint)))
	case FloatingAzure:
		lines = append(lines, kv("Azure:SubscriptionId", f.Azure.SubscriptionId), kv("Azure:ResourceGroup", f.Azure.ResourceGroup),
			kv("Azure:NetworkInterface", f.Azure.NetworkInterface), kv("Azure:IpConfiguration", f.Azure.IpConfiguration), kv("Azure:Endpoint", endpoint(f.Azure.Endpoint)))
	}
	return lines
}
