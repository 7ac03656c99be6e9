package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/floating"
)

// A lease-majority pair that may carry a floating address (its lease is
// an etcd, so that the Config DB stays the default SQLite file).
const floatingBase = `"Cluster": {"SplitBrainResolverStrategy": "lease-majority", "Lease": {"Provider": "etcd", "Endpoints": ["http://127.0.0.1:2379"]}}`

func floatingJSON(section string) string {
	return `{` + floatingBase + `, "Redundancy": {"FloatingAddress": {` + section + `}}}`
}

// TestFloatingDefaults: without the section there is no floating address,
// the default configuration is valid, and every key holds its documented
// default.
func TestFloatingDefaults(t *testing.T) {
	f := Default().Redundancy.FloatingAddress
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"Address", f.Address, ""},
		{"Enabled", f.Enabled(), false},
		{"Interface", f.Interface, ""},
		{"Provider", f.Provider, "linux"},
		{"AutoFailover", f.AutoFailover, true},
		{"HeartbeatInterval", f.HeartbeatInterval, 500 * time.Millisecond},
		{"HeartbeatTtl", f.HeartbeatTtl, 1500 * time.Millisecond},
		{"PromotionHold", f.PromotionHold, time.Second},
		{"ReconcileInterval", f.ReconcileInterval, 5 * time.Second},
		{"AnnounceCount", f.AnnounceCount, 3},
		{"AnnounceInterval", f.AnnounceInterval, 200 * time.Millisecond},
		{"AllowDualClaim", f.AllowDualClaim, false},
		{"Aws:NetworkInterfaceId", f.Aws.NetworkInterfaceId, ""},
		{"Aws:Region", f.Aws.Region, ""},
		{"Aws:Endpoint", f.Aws.Endpoint, ""},
		{"Aws:MetadataEndpoint", f.Aws.MetadataEndpoint, ""},
		{"Aws:ConfirmTimeout", f.Aws.ConfirmTimeout, 10 * time.Second},
		{"Oci:VnicId", f.Oci.VnicId, ""},
		{"Oci:Endpoint", f.Oci.Endpoint, ""},
		{"Azure:SubscriptionId", f.Azure.SubscriptionId, ""},
		{"Azure:ResourceGroup", f.Azure.ResourceGroup, ""},
		{"Azure:NetworkInterface", f.Azure.NetworkInterface, ""},
		{"Azure:IpConfiguration", f.Azure.IpConfiguration, ""},
		{"Azure:Endpoint", f.Azure.Endpoint, ""},
	} {
		if tc.got != tc.want {
			t.Errorf("Redundancy:FloatingAddress:%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	// auto-down (the default strategy) without an address is fine: the
	// refusal is about a floating address only.
	if err := Default().Validate(); err != nil {
		t.Fatalf("default configuration refused: %v", err)
	}
}

// TestFloatingProvidersMatchThePackage: the accepted provider names are
// the floating package's.
func TestFloatingProvidersMatchThePackage(t *testing.T) {
	var want []string
	for _, p := range floating.Providers {
		want = append(want, string(p))
	}
	if !slices.Equal(FloatingProviders, want) {
		t.Fatalf("FloatingProviders %v, floating.Providers %v", FloatingProviders, want)
	}
}

// TestFloatingLoads: each provider's keys load from the file (any case)
// and from the environment, and the provider is spelled in lower case.
func TestFloatingLoads(t *testing.T) {
	c := mustLoad(t, floatingJSON(`"address": "10.0.0.100/24", "Interface": "eth0", "AnnounceCount": 5, "announceInterval": "00:00:00.100", "PromotionHold": "0s", "AutoFailover": false`))
	f := c.Redundancy.FloatingAddress
	if f.Address != "10.0.0.100/24" || f.Interface != "eth0" || f.AnnounceCount != 5 || f.AnnounceInterval != 100*time.Millisecond || f.PromotionHold != 0 || f.AutoFailover {
		t.Fatalf("linux section %+v", f)
	}
	c = mustLoad(t, floatingJSON(`"Address": "fd00::100/64", "Provider": "AWS", "Aws": {"NetworkInterfaceId": "eni-0123456789abcdef0", "Region": "eu-central-1", "Endpoint": "http://127.0.0.1:9000", "MetadataEndpoint": "http://127.0.0.1:9001", "ConfirmTimeout": "3s"}`))
	a := c.Redundancy.FloatingAddress
	if a.Provider != "aws" || a.Aws.NetworkInterfaceId != "eni-0123456789abcdef0" || a.Aws.Region != "eu-central-1" || a.Aws.Endpoint != "http://127.0.0.1:9000" || a.Aws.MetadataEndpoint != "http://127.0.0.1:9001" || a.Aws.ConfirmTimeout != 3*time.Second {
		t.Fatalf("aws section %+v", a)
	}
	c = mustLoad(t, floatingJSON(`"Address": "10.0.0.100/24", "Provider": "oci", "Oci": {"VnicId": "ocid1.vnic.oc1.eu-frankfurt-1.abc", "Endpoint": "http://127.0.0.1:9002"}`))
	if o := c.Redundancy.FloatingAddress.Oci; o.VnicId != "ocid1.vnic.oc1.eu-frankfurt-1.abc" || o.Endpoint != "http://127.0.0.1:9002" {
		t.Fatalf("oci section %+v", o)
	}
	c = mustLoad(t, `{`+floatingBase+`}`,
		"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__ADDRESS=10.0.0.100/24",
		"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__PROVIDER=azure",
		"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__AZURE__SUBSCRIPTIONID=00000000-0000-0000-0000-000000000001",
		"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__AZURE__RESOURCEGROUP=plant",
		"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__AZURE__NETWORKINTERFACE=node-a-nic",
		"OTOPCUA_REDUNDANCY__FLOATINGADDRESS__AZURE__IPCONFIGURATION=floating",
	)
	if z := c.Redundancy.FloatingAddress; z.Provider != "azure" || z.Azure.ResourceGroup != "plant" || z.Azure.NetworkInterface != "node-a-nic" || z.Azure.IpConfiguration != "floating" {
		t.Fatalf("azure section from the environment %+v", z)
	}
	// Another provider's keys are ignored, not refused.
	mustLoad(t, floatingJSON(`"Address": "10.0.0.100/24", "Interface": "eth0", "Oci": {"VnicId": "not checked"}, "Aws": {"Region": "nowhere"}`))
}

// TestFloatingRefusals: every refusal names the key, the value as written
// and what is accepted; each case is the only problem of its file.
func TestFloatingRefusals(t *testing.T) {
	const (
		linux = `"Address": "10.0.0.100/24", "Interface": "eth0"`
		aws   = `"Address": "10.0.0.100/24", "Provider": "aws", "Aws": {"NetworkInterfaceId": "eni-0123456789abcdef0", "Region": "eu-central-1"}`
		azure = `"Address": "10.0.0.100/24", "Provider": "azure", "Azure": {"SubscriptionId": "s", "ResourceGroup": "plant", "NetworkInterface": "nic-a", "IpConfiguration": "floating"}`
		fa    = "Redundancy:FloatingAddress:"
	)
	for _, tc := range []struct {
		name, json, key, value, accepted string
	}{
		{"address without prefix", floatingJSON(`"Address": "10.0.0.100", "Interface": "eth0"`), fa + "Address", "10.0.0.100", "with its prefix length"},
		{"address not an address", floatingJSON(`"Address": "plc-vip/24", "Interface": "eth0"`), fa + "Address", "plc-vip/24", "IPv4 or IPv6 unicast"},
		{"address multicast", floatingJSON(`"Address": "239.0.0.1/32", "Interface": "eth0"`), fa + "Address", "239.0.0.1/32", "unicast"},
		{"address unspecified", floatingJSON(`"Address": "::/0", "Interface": "eth0"`), fa + "Address", "::/0", "unicast"},
		{"address mapped", floatingJSON(`"Address": "::ffff:10.0.0.1/120", "Interface": "eth0"`), fa + "Address", "::ffff:10.0.0.1/120", "unicast"},
		{"unknown provider", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "gcp"`), fa + "Provider", "gcp", "accepted values are linux, aws, oci, azure"},
		{"linux without interface", floatingJSON(`"Address": "10.0.0.100/24"`), fa + "Interface", "", "required by the linux provider"},
		{"heartbeat zero", floatingJSON(`"HeartbeatInterval": "0s"`), fa + "HeartbeatInterval", "0s", "greater than 0"},
		{"ttl below interval", floatingJSON(linux + `, "HeartbeatInterval": "1s", "HeartbeatTtl": "500ms"`), fa + "HeartbeatTtl", "500ms", "at least Redundancy:FloatingAddress:HeartbeatInterval (1s)"},
		{"reconcile below heartbeat", floatingJSON(linux + `, "ReconcileInterval": "100ms"`), fa + "ReconcileInterval", "100ms", "at least Redundancy:FloatingAddress:HeartbeatInterval (500ms)"},
		{"hold negative", floatingJSON(`"PromotionHold": "-1s"`), fa + "PromotionHold", "-1s", "from 0s to 60s"},
		{"hold too long", floatingJSON(`"PromotionHold": "61s"`), fa + "PromotionHold", "1m1s", "from 0s to 60s"},
		{"announce count zero", floatingJSON(linux + `, "AnnounceCount": 0`), fa + "AnnounceCount", "0", "from 1 to 20"},
		{"announce count 21", floatingJSON(`"AnnounceCount": 21`), fa + "AnnounceCount", "21", "from 1 to 20"},
		{"announce interval zero", floatingJSON(`"AnnounceInterval": "0s"`), fa + "AnnounceInterval", "0s", "above 0s up to 10s"},
		{"announce count not a number", floatingJSON(`"AnnounceCount": "three"`), fa + "AnnounceCount", "three", "whole numbers"},
		{"auto failover not a bool", floatingJSON(`"AutoFailover": "sometimes"`), fa + "AutoFailover", "sometimes", "true or false"},
		{"unknown key", floatingJSON(`"Adress": "10.0.0.100/24"`), fa + "Adress", "10.0.0.100/24", "did you mean Redundancy:FloatingAddress:Address?"},
		{"aws without eni", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "aws", "Aws": {"Region": "eu-central-1"}`), fa + "Aws:NetworkInterfaceId", "", "required by the aws provider"},
		{"aws eni malformed", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "aws", "Aws": {"NetworkInterfaceId": "i-0123456789", "Region": "eu-central-1"}`), fa + "Aws:NetworkInterfaceId", "i-0123456789", "eni-0123456789abcdef0"},
		{"aws without region", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "aws", "Aws": {"NetworkInterfaceId": "eni-0123456789abcdef0"}`), fa + "Aws:Region", "", "required by the aws provider"},
		{"aws endpoint not a URL", floatingJSON(aws[:len(aws)-1] + `, "Endpoint": "127.0.0.1:9000"}`), fa + "Aws:Endpoint", "127.0.0.1:9000", "http://127.0.0.1:8081"},
		{"aws metadata endpoint not a URL", floatingJSON(aws[:len(aws)-1] + `, "MetadataEndpoint": "ftp://x"}`), fa + "Aws:MetadataEndpoint", "ftp://x", "URLs"},
		{"aws confirm timeout", floatingJSON(aws[:len(aws)-1] + `, "ConfirmTimeout": "0s"}`), fa + "Aws:ConfirmTimeout", "0s", "greater than 0"},
		{"oci without vnic", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "oci"`), fa + "Oci:VnicId", "", "required by the oci provider"},
		{"oci vnic not a vnic", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "oci", "Oci": {"VnicId": "ocid1.instance.oc1..x"}`), fa + "Oci:VnicId", "ocid1.instance.oc1..x", "ocid1.vnic."},
		{"azure without resource group", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "azure", "Azure": {"SubscriptionId": "s", "NetworkInterface": "nic-a", "IpConfiguration": "floating"}`), fa + "Azure:ResourceGroup", "", "required by the azure provider"},
		{"azure nic as resource id", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "azure", "Azure": {"SubscriptionId": "s", "ResourceGroup": "plant", "NetworkInterface": "/subscriptions/s/nic-a", "IpConfiguration": "floating"}`), fa + "Azure:NetworkInterface", "/subscriptions/s/nic-a", "NIC names"},
		{"azure endpoint", floatingJSON(azure[:len(azure)-1] + `, "Endpoint": "management"}`), fa + "Azure:Endpoint", "management", "URLs"},
		{"auto-down without dual claim", `{"Redundancy": {"FloatingAddress": {` + linux + `}}}`, "Cluster:SplitBrainResolverStrategy", "auto-down",
			"under auto-down both sides of a partition become Primary and both would claim the floating address 10.0.0.100/24; set Redundancy:FloatingAddress:AllowDualClaim to true"},
		{"static-quorum of one on a pair", `{"Cluster": {"SplitBrainResolverStrategy": "static-quorum", "StaticQuorumSize": 1, "PublicHostname": "a", "SeedNodes": ["a:4053", "b:4053"]}, "Redundancy": {"FloatingAddress": {` + linux + `}}}`,
			"Cluster:SplitBrainResolverStrategy", "static-quorum", "with Redundancy:FloatingAddress:Address set are lease-majority"},
		{"in-memory config db", `{` + floatingBase + `, "ConfigDb": {"ConnectionString": "file::memory:?cache=shared"}, "Redundancy": {"FloatingAddress": {` + linux + `}}}`,
			"ConfigDb:ConnectionString", "file::memory:?cache=shared", "an in-memory database is seen by this process alone"},
		{"memory mode config db", `{` + floatingBase + `, "ConfigDb": {"ConnectionString": "file:x.db?mode=memory"}, "Redundancy": {"FloatingAddress": {` + linux + `}}}`,
			"ConfigDb:ConnectionString", "file:x.db?mode=memory", "heartbeats, stamped by the Config DB's clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := loadItems(t, tc.json)
			if len(items) != 1 {
				t.Fatalf("problems %v, want exactly one for %s", items, tc.key)
			}
			it := items[0]
			if it.Key != tc.key || it.Value != tc.value || !strings.Contains(it.Accepted, tc.accepted) {
				t.Fatalf("problem %s\nwant key %s value %q accepted containing %q", it, tc.key, tc.value, tc.accepted)
			}
		})
	}
}

// TestFloatingAccepted: what the refusals let through — each provider
// with its keys, IPv6, the bounds themselves, auto-down with
// AllowDualClaim, keep-oldest and keep-majority; and an empty address
// switches the section off, so nothing it would need is asked for.
func TestFloatingAccepted(t *testing.T) {
	for _, tc := range []struct{ name, json string }{
		{"linux ipv4", floatingJSON(`"Address": "10.0.0.100/24", "Interface": "eth0"`)},
		{"linux ipv6", floatingJSON(`"Address": "fd00::100/64", "Interface": "eth0"`)},
		{"bounds", floatingJSON(`"Address": "10.0.0.100/32", "Interface": "eth0", "HeartbeatInterval": "1s", "HeartbeatTtl": "1s", "ReconcileInterval": "1s", "PromotionHold": "60s", "AnnounceCount": 20, "AnnounceInterval": "10s"`)},
		{"aws", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "aws", "Aws": {"NetworkInterfaceId": "eni-0a1b2c3d", "Region": "us-gov-west-1"}`)},
		{"oci", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "oci", "Oci": {"VnicId": "ocid1.vnic.oc1.iad.abc"}`)},
		{"azure", floatingJSON(`"Address": "10.0.0.100/24", "Provider": "azure", "Azure": {"SubscriptionId": "s", "ResourceGroup": "plant", "NetworkInterface": "nic-a", "IpConfiguration": "floating", "Endpoint": "https://management.azure.com"}`)},
		{"auto-down with dual claim", `{"Redundancy": {"FloatingAddress": {"Address": "10.0.0.100/24", "Interface": "eth0", "AllowDualClaim": true}}}`},
		{"keep-oldest", `{"Cluster": {"SplitBrainResolverStrategy": "keep-oldest"}, "Redundancy": {"FloatingAddress": {"Address": "10.0.0.100/24", "Interface": "eth0"}}}`},
		{"keep-majority", `{"Cluster": {"SplitBrainResolverStrategy": "keep-majority"}, "Redundancy": {"FloatingAddress": {"Address": "10.0.0.100/24", "Interface": "eth0"}}}`},
		{"off under auto-down", `{"Redundancy": {"FloatingAddress": {"Interface": "", "Provider": "aws"}}}`},
		{"in-memory config db without an address", `{"ConfigDb": {"ConnectionString": ":memory:"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) { mustLoad(t, tc.json) })
	}
}

// TestFloatingWarnings: a floating address on a SQLite Config DB, a dual
// claim accepted and AutoFailover off are valid but warned about.
func TestFloatingWarnings(t *testing.T) {
	c := mustLoad(t, `{"Redundancy": {"FloatingAddress": {"Address": "10.0.0.100/24", "Interface": "eth0", "AllowDualClaim": true, "AutoFailover": false}}}`)
	w := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{
		"Redundancy:FloatingAddress:Address is set on a SQLite Config DB",
		"AllowDualClaim is true under Cluster:SplitBrainResolverStrategy auto-down: during a partition both nodes may claim 10.0.0.100/24",
		"AutoFailover is false: the address moves only on a planned failover or a drain",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q\nwant one containing %q", w, want)
		}
	}
	c = mustLoad(t, `{"Cluster": {"SplitBrainResolverStrategy": "lease-majority", "Lease": {"Provider": "etcd", "Endpoints": ["http://127.0.0.1:2379"]}}, "ConfigDb": {"Provider": "postgres", "ConnectionString": "postgres://127.0.0.1/otopcua"}, "Redundancy": {"FloatingAddress": {"Address": "10.0.0.100/24", "Interface": "eth0"}}}`)
	for _, w := range c.Warnings() {
		if strings.Contains(w, "FloatingAddress") {
			t.Errorf("warning %q for a floating address on a shared Config DB under lease-majority", w)
		}
	}
}

// TestFloatingSummary: the one line config check and config effective
// print, off and for each provider.
func TestFloatingSummary(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{}`, "floating address off (Redundancy:FloatingAddress:Address is not set)"},
		{floatingJSON(`"Address": "10.0.0.100/24", "Interface": "eth0"`),
			"floating address 10.0.0.100/24 provider=linux interface=eth0 announce=3x200ms auto-failover=on heartbeat=500ms ttl=1.5s hold=1s reconcile=5s dual-claim=off"},
		{floatingJSON(`"Address": "10.0.0.100/24", "Provider": "aws", "AutoFailover": false, "Aws": {"NetworkInterfaceId": "eni-0a1b2c3d", "Region": "eu-central-1"}`),
			"floating address 10.0.0.100/24 provider=aws eni=eni-0a1b2c3d region=eu-central-1 auto-failover=off heartbeat=500ms ttl=1.5s hold=1s reconcile=5s dual-claim=off"},
		{floatingJSON(`"Address": "10.0.0.100/24", "Provider": "oci", "Oci": {"VnicId": "ocid1.vnic.oc1.iad.abc"}`),
			"floating address 10.0.0.100/24 provider=oci vnic=ocid1.vnic.oc1.iad.abc auto-failover=on heartbeat=500ms ttl=1.5s hold=1s reconcile=5s dual-claim=off"},
		{floatingJSON(`"Address": "fd00::100/64", "Provider": "azure", "Azure": {"SubscriptionId": "s", "ResourceGroup": "plant", "NetworkInterface": "nic-a", "IpConfiguration": "floating"}`),
			"floating address fd00::100/64 provider=azure nic=nic-a ip-configuration=floating auto-failover=on heartbeat=500ms ttl=1.5s hold=1s reconcile=5s dual-claim=off"},
	} {
		if got := mustLoad(t, tc.json).FloatingSummary(); got != tc.want {
			t.Errorf("FloatingSummary\n got %s\nwant %s", got, tc.want)
		}
	}
}

// TestDualActiveOnPartition: which strategies let both sides of a pair's
// partition act.
func TestDualActiveOnPartition(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		quorum   int
		seeds    []string
		want     bool
	}{
		{StrategyAutoDown, 0, nil, true},
		{StrategyLeaseMajority, 0, nil, false},
		{StrategyKeepOldest, 0, nil, false},
		{StrategyKeepMajority, 0, nil, false},
		{StrategyStaticQuorum, 1, []string{"a:1", "b:1"}, true},
		{StrategyStaticQuorum, 2, []string{"a:1", "b:1"}, false},
		{StrategyStaticQuorum, 1, []string{"a:1"}, true},
		{StrategyStaticQuorum, 2, []string{"a:1", "b:1", "c:1"}, false},
		{StrategyStaticQuorum, 2, []string{"a:1", "b:1", "c:1", "d:1"}, true},
	} {
		c := ClusterConfig{SplitBrainResolverStrategy: tc.strategy, StaticQuorumSize: tc.quorum, SeedNodes: tc.seeds}
		if got := c.DualActiveOnPartition(); got != tc.want {
			t.Errorf("%s quorum %d seeds %v: dual-active %v, want %v", tc.strategy, tc.quorum, tc.seeds, got, tc.want)
		}
	}
}

// TestFloatingLines: the effective keys of the section and of the selected
// provider only.
func TestFloatingLines(t *testing.T) {
	got := mustLoad(t, floatingJSON(`"Address": "10.0.0.100/24", "Provider": "aws", "Aws": {"NetworkInterfaceId": "eni-0a1b2c3d", "Region": "eu-central-1", "MetadataEndpoint": "http://127.0.0.1:9001"}, "Oci": {"VnicId": "ocid1.vnic.x"}`)).FloatingLines()
	want := []string{
		`Redundancy:FloatingAddress:Address = "10.0.0.100/24"`,
		`Redundancy:FloatingAddress:Provider = aws`,
		`Redundancy:FloatingAddress:AutoFailover = true`,
		`Redundancy:FloatingAddress:HeartbeatInterval = 500ms`,
		`Redundancy:FloatingAddress:HeartbeatTtl = 1.5s`,
		`Redundancy:FloatingAddress:PromotionHold = 1s`,
		`Redundancy:FloatingAddress:ReconcileInterval = 5s`,
		`Redundancy:FloatingAddress:AllowDualClaim = false`,
		`Redundancy:FloatingAddress:Aws:NetworkInterfaceId = eni-0a1b2c3d`,
		`Redundancy:FloatingAddress:Aws:Region = eu-central-1`,
		`Redundancy:FloatingAddress:Aws:Endpoint = (SDK default)`,
		`Redundancy:FloatingAddress:Aws:MetadataEndpoint = http://127.0.0.1:9001`,
		`Redundancy:FloatingAddress:Aws:ConfirmTimeout = 10s`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("FloatingLines\n got %q\nwant %q", got, want)
	}
	linux := Default().FloatingLines()
	if last := linux[len(linux)-1]; last != "Redundancy:FloatingAddress:AnnounceInterval = 200ms" || linux[0] != `Redundancy:FloatingAddress:Address = ""` {
		t.Fatalf("default lines %q", linux)
	}
}

// TestFloatingStrategyWithAkkaConf: with Cluster:AkkaConfigPath the
// strategy may come from akka.conf, so Load does not judge the default
// auto-down; FloatingStrategyError judges the strategy once akka.conf is
// applied.
func TestFloatingStrategyWithAkkaConf(t *testing.T) {
	akka := writeFile(t, "akka.conf", "akka.cluster.split-brain-resolver.active-strategy = lease-majority\n")
	c := mustLoad(t, `{"Cluster": {"AkkaConfigPath": "`+akka+`"}, "Redundancy": {"FloatingAddress": {"Address": "10.0.0.100/24", "Interface": "eth0"}}}`)
	err := c.FloatingStrategyError()
	if err == nil || !strings.Contains(err.Error(), `Cluster:SplitBrainResolverStrategy = "auto-down": accepted values with Redundancy:FloatingAddress:Address set`) {
		t.Fatalf("auto-down still in place: %v", err)
	}
	c.Cluster.SplitBrainResolverStrategy = StrategyLeaseMajority // as akka.conf applied
	if err := c.FloatingStrategyError(); err != nil {
		t.Fatalf("lease-majority from akka.conf: %v", err)
	}
	c.Cluster.SplitBrainResolverStrategy = StrategyAutoDown
	c.Redundancy.FloatingAddress.AllowDualClaim = true
	if err := c.FloatingStrategyError(); err != nil {
		t.Fatalf("auto-down with AllowDualClaim: %v", err)
	}
	if err := Default().FloatingStrategyError(); err != nil {
		t.Fatalf("no floating address: %v", err)
	}
}

// TestFloatingApplicationUri: the floating identity's ApplicationUri
// defaults to urn:otopcua:floating:<ClusterId>, takes a configured URI,
// and refuses a non-URI or the node's own OpcUa:ApplicationUri with the key
// named.
func TestFloatingApplicationUri(t *testing.T) {
	c := mustLoad(t, `{`+floatingBase+`, "Node": {"ClusterId": "plant-a"}}`)
	if got := c.Redundancy.FloatingAddress.ApplicationUri; got != "urn:otopcua:floating:plant-a" {
		t.Errorf("default %q", got)
	}
	c = mustLoad(t, floatingJSON(`"ApplicationUri": "urn:plant-a:opcua"`))
	if got := c.Redundancy.FloatingAddress.ApplicationUri; got != "urn:plant-a:opcua" {
		t.Errorf("configured %q", got)
	}
	for _, body := range []string{
		floatingJSON(`"ApplicationUri": "not a uri"`),
		`{` + floatingBase + `, "OpcUa": {"ApplicationUri": "urn:same"}, "Redundancy": {"FloatingAddress": {"ApplicationUri": "urn:same"}}}`,
	} {
		items := loadItems(t, body)
		if !slices.ContainsFunc(items, func(it Item) bool { return it.Key == "Redundancy:FloatingAddress:ApplicationUri" }) {
			t.Errorf("%s: items %v do not name Redundancy:FloatingAddress:ApplicationUri", body, items)
		}
	}
}
