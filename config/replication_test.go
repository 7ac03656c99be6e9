package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/otopcua/otopcua/internal/testcert"
)

func TestLocalDbReplicationOffByDefault(t *testing.T) {
	fixedHostname(t, "h")
	c := Default()
	r := c.LocalDbReplication()
	if r.On || len(r.Missing) != 0 {
		t.Fatalf("default replication = %+v, want off with nothing missing", r)
	}
	if !strings.HasPrefix(r.Reason(), "LocalDb replication off") {
		t.Fatalf("reason %q", r.Reason())
	}
}

func TestLocalDbReplicationOnWhenAllThreeSet(t *testing.T) {
	fixedHostname(t, "h")
	c, err := Load(writeFile(t, "appsettings.json",
		`{"LocalDb": {"SyncListenPort": 4850, "Peers": ["node-b:4850"], "Replication": {"ApiKey": "0123456789abcdef"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := c.LocalDbReplication()
	want := Replication{On: true, Listen: "0.0.0.0:4850", Peers: []string{"node-b:4850"}, APIKey: "0123456789abcdef"}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("replication = %+v, want %+v", r, want)
	}
	if !strings.Contains(r.Reason(), "on: listening on 0.0.0.0:4850, 1 peer(s)") {
		t.Fatalf("reason %q", r.Reason())
	}
}

func TestLocalDbReplicationFromEnvironment(t *testing.T) {
	fixedHostname(t, "h")
	c, err := Load("", []string{
		"OTOPCUA_LOCALDB__SYNCLISTENPORT=4851",
		"OTOPCUA_LOCALDB__PEERS__0=10.0.0.2:4851",
		"OTOPCUA_LOCALDB__REPLICATION__APIKEY=a-long-enough-secret",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := c.LocalDbReplication()
	if !r.On || r.Listen != "0.0.0.0:4851" || !reflect.DeepEqual(r.Peers, []string{"10.0.0.2:4851"}) || r.APIKey != "a-long-enough-secret" {
		t.Fatalf("replication = %+v", r)
	}
}

func TestLocalDbReplicationPartialNamesWhatIsMissing(t *testing.T) {
	fixedHostname(t, "h")
	for _, tc := range []struct {
		name, json string
		missing    []string
	}{
		{"port only", `{"LocalDb": {"SyncListenPort": 4850}}`, []string{"LocalDb:Peers", "LocalDb:Replication:ApiKey"}},
		{"no key", `{"LocalDb": {"SyncListenPort": 4850, "Peers": ["b:1"]}}`, []string{"LocalDb:Replication:ApiKey"}},
		{"no port", `{"LocalDb": {"Peers": ["b:1"], "Replication": {"ApiKey": "0123456789abcdef"}}}`, []string{"LocalDb:SyncListenPort"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(writeFile(t, "appsettings.json", tc.json), nil)
			if err != nil {
				t.Fatalf("partial replication settings must validate: %v", err)
			}
			r := c.LocalDbReplication()
			if r.On || !reflect.DeepEqual(r.Missing, tc.missing) {
				t.Fatalf("replication = %+v, want off, missing %v", r, tc.missing)
			}
			for _, m := range tc.missing {
				if !strings.Contains(r.Reason(), m) {
					t.Errorf("reason %q does not name %s", r.Reason(), m)
				}
			}
		})
	}
}

func TestLocalDbReplicationInvalidValues(t *testing.T) {
	fixedHostname(t, "h")
	for _, tc := range []struct {
		name, json, key, value, accepted string
	}{
		{"port too big", `{"LocalDb": {"SyncListenPort": 70000}}`, "LocalDb:SyncListenPort", "70000", "0 (replication off) or 1..65535"},
		{"negative port", `{"LocalDb": {"SyncListenPort": -1}}`, "LocalDb:SyncListenPort", "-1", "0 (replication off) or 1..65535"},
		{"peer without port", `{"LocalDb": {"Peers": ["node-b"]}}`, "LocalDb:Peers:0", "node-b", "host:port"},
		{"peer bad port", `{"LocalDb": {"Peers": ["a:1", "node-b:0"]}}`, "LocalDb:Peers:1", "node-b:0", "host:port"},
		{"peer bad host", `{"LocalDb": {"Peers": ["node b:1"]}}`, "LocalDb:Peers:0", "node b:1", "host:port"},
		{"peer twice", `{"LocalDb": {"Peers": ["b:1", "b:1"]}}`, "LocalDb:Peers:1", "b:1", "already LocalDb:Peers:0"},
		{"short key", `{"LocalDb": {"Replication": {"ApiKey": "short"}}}`, "LocalDb:Replication:ApiKey", "(hidden, 5 characters)", "at least 16 characters"},
		{"port collides", `{"OpcUa": {"Port": 4840}, "LocalDb": {"SyncListenPort": 4840}}`, "LocalDb:SyncListenPort", "4840", "not already used by OpcUa:Port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := loadItems(t, tc.json)
			if len(items) != 1 || items[0].Key != tc.key || items[0].Value != tc.value || !strings.Contains(items[0].Accepted, tc.accepted) {
				t.Fatalf("items = %+v, want one for %s = %q accepting %q", items, tc.key, tc.value, tc.accepted)
			}
			if strings.Contains(items[0].String(), "short\"") {
				t.Fatalf("the secret is printed: %s", items[0])
			}
		})
	}
}

// TestReplicationWithoutTlsWarns: replication on, Cluster:Tls unset and a
// non-loopback address (this node's Cluster:Hostname or a peer) warns,
// naming the keys and never the key's value; Tls, loopback everywhere or
// replication off do not.
func TestReplicationWithoutTlsWarns(t *testing.T) {
	ca := testcert.NewCA(t, "cluster ca")
	cert, key := ca.Node(t, "a")
	tlsKeys := fmt.Sprintf(`, "Tls": {"CaFile": %q, "CertFile": %q, "KeyFile": %q}`, ca.File, cert, key)
	const secret = "0123456789abcdef-replication"
	localDb := func(peer string) string {
		return fmt.Sprintf(`"LocalDb": {"SyncListenPort": 4850, "Peers": [%q], "Replication": {"ApiKey": %q}}`, peer, secret)
	}
	for _, tc := range []struct {
		name, hostname, tls, localDb string
		want                         []string // substrings of the one warning; nil: none
	}{
		{"remote listen", "10.0.0.5", "", localDb("10.0.0.6:4850"),
			[]string{"listens on 10.0.0.5:4850 (Cluster:Hostname, LocalDb:SyncListenPort) without Cluster:Tls", "LocalDb:Replication:ApiKey crosses the network in clear text"}},
		{"loopback listen, remote peer", "127.0.0.1", "", localDb("10.0.0.6:4850"),
			[]string{"pulls from 10.0.0.6:4850 (LocalDb:Peers:0) without Cluster:Tls"}},
		{"remote listen with tls", "10.0.0.5", tlsKeys, localDb("10.0.0.6:4850"), nil},
		{"loopback both", "127.0.0.1", "", localDb("127.0.0.1:4851"), nil},
		{"replication off", "10.0.0.5", "", `"LocalDb": {}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t, fmt.Sprintf(`{"Cluster": {"Hostname": %q, "PublicHostname": "a", "SeedNodes": ["a:4053"]%s}, %s}`,
				tc.hostname, tc.tls, tc.localDb))
			var got []string
			for _, w := range c.Warnings() {
				if strings.HasPrefix(w, "LocalDb replication") {
					got = append(got, w)
				}
				if strings.Contains(w, secret) {
					t.Fatalf("a warning shows the key: %q", w)
				}
			}
			if len(got) != min(len(tc.want), 1) {
				t.Fatalf("replication warnings %q, want %d", got, min(len(tc.want), 1))
			}
			for _, s := range tc.want {
				if !strings.Contains(got[0], s) {
					t.Errorf("warning %q lacks %q", got[0], s)
				}
			}
		})
	}
}
