package config

import (
	"reflect"
	"strings"
	"testing"
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
