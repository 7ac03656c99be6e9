package hoconcompat

import (
	"reflect"
	"sort"
	"testing"

	"github.com/otopcua/otopcua/config"
)

func keysOf(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func TestExplicitKeys(t *testing.T) {
	for _, tc := range []struct {
		name    string
		json    string
		environ []string
		want    []string
	}{
		{name: "nothing", json: `{}`, want: nil},
		{name: "no file", environ: []string{"HOME=/root"}, want: nil},
		{name: "nested, any case", json: `{"cluster": {"splitBrainResolverStrategy": "keep-oldest", "FAILUREDETECTOR": {"Threshold": 9}}}`,
			want: []string{KeyThreshold, KeyStrategy}},
		{name: "flat keys", json: `{"Cluster:StableAfter": "00:00:20", "cluster.failuredetector.heartbeatinterval": "1s", "Cluster": {"FailureDetector:AcceptableHeartbeatPause": "4s"}}`,
			want: []string{KeyAcceptableHeartbeatPause, KeyHeartbeatInterval, KeyStableAfter}},
		{name: "comments and trailing commas", json: `{
  // "Cluster:StableAfter" commented out
  /* "Cluster": {"Roles": ["admin"]}, */
  "ConfigDb": {"ConnectionString": "file:a.db?x=// not a comment /* nor this */", },
  "Cluster": {"SeedNodes": ["127.0.0.1:4053", ], },
}`, want: []string{KeySeedNodes}},
		{name: "null", json: `{"Cluster": {"SelfFormAfter": null, "DownOnConnectionRefused": null, "StableAfter": null}}`,
			want: []string{KeySelfFormAfter}},
		{name: "sibling with a common prefix", json: `{"Cluster": {"Port": 4053, "PublicHostname": "x", "Hostname": "0.0.0.0"}}`, want: nil},
		{name: "environment", json: `{}`, environ: []string{
			"OTOPCUA_CLUSTER__SPLITBRAINRESOLVERSTRATEGY=keep-oldest",
			"OTOPCUA_CLUSTER__SEEDNODES__0=127.0.0.1:4053",
			"OTOPCUA_ROLES=admin",
			"OTOPCUA_CLUSTER__FAILUREDETECTOR__THRESHOLD=9",
			"OTOPCUA_OPCUA__PORT=4840",
			"OTHER=1",
			"NOEQUALS",
		}, want: []string{KeyThreshold, KeyRoles, KeySeedNodes, KeyStrategy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var data []byte
			if tc.json != "" {
				data = []byte(tc.json)
				// The file must be one config.Load accepts, or the test
				// says nothing about what the host reads.
				if _, err := config.LoadBytes("t.json", data, nil); err != nil {
					t.Fatalf("config rejects the test file: %v", err)
				}
			}
			got, err := ExplicitKeys(data, tc.environ)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if g := keysOf(got); !reflect.DeepEqual(g, want) {
				t.Errorf("explicit %v, want %v", g, want)
			}
		})
	}
}

func TestExplicitKeysBadJSON(t *testing.T) {
	if _, err := ExplicitKeys([]byte(`{"Cluster": `), nil); err == nil {
		t.Fatal("truncated JSON gave no error")
	}
}
