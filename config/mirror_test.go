package config

import (
	"strings"
	"testing"
	"time"
)

// pair is a node of a two-node set: another seed besides itself.
const pair = `"Cluster": {"PublicHostname": "a", "Port": 4053, "SeedNodes": ["a:4053", "b:4053"]}`

func TestMirrorDefaults(t *testing.T) {
	fixedHostname(t, "plc-host")
	m := Default().OpcUa.Mirror
	want := MirrorConfig{Sync: true, AckTimeout: 50 * time.Millisecond, MaxLagBytes: 16 << 20, QueueSize: 100, MatchWindow: time.Second}
	if m != want {
		t.Fatalf("OpcUa:Mirror defaults = %+v, want %+v", m, want)
	}
	if c := Default(); c.OpcUa.RedundancySupport != RedundancyWarm || c.OpcUa.Mirrored() {
		t.Fatalf("default RedundancySupport = %s (mirrored %v), want Warm", c.OpcUa.RedundancySupport, c.OpcUa.Mirrored())
	}
}

func TestRedundancySupportAccepted(t *testing.T) {
	for _, tc := range []struct{ written, want string }{
		{"warm", RedundancyWarm}, {"HOT", RedundancyHot}, {"HotAndMirrored", RedundancyHotAndMirrored},
		{"hotandmirrored", RedundancyHotAndMirrored}, {"HOTANDMIRRORED", RedundancyHotAndMirrored},
	} {
		c := mustLoad(t, `{`+pair+`, "OpcUa": {"RedundancySupport": "`+tc.written+`"}}`)
		if c.OpcUa.RedundancySupport != tc.want {
			t.Errorf("%q loads as %q, want %q", tc.written, c.OpcUa.RedundancySupport, tc.want)
		}
		if c.OpcUa.Mirrored() != (tc.want == RedundancyHotAndMirrored) {
			t.Errorf("%q: Mirrored() = %v", tc.written, c.OpcUa.Mirrored())
		}
	}
}

func TestMirrorKeysLoad(t *testing.T) {
	c := mustLoad(t, `{`+pair+`, "OpcUa": {"RedundancySupport": "HotAndMirrored",
		"Mirror": {"Sync": false, "AckTimeout": "00:00:00.200", "MaxLagBytes": 65536, "QueueSize": 10000, "MatchWindow": "10ms"}}}`)
	want := MirrorConfig{Sync: false, AckTimeout: 200 * time.Millisecond, MaxLagBytes: 64 << 10, QueueSize: 10000, MatchWindow: 10 * time.Millisecond}
	if c.OpcUa.Mirror != want {
		t.Fatalf("OpcUa:Mirror = %+v, want %+v", c.OpcUa.Mirror, want)
	}
	c = mustLoad(t, `{`+pair+`}`, "OTOPCUA_OPCUA__REDUNDANCYSUPPORT=HotAndMirrored", "OTOPCUA_OPCUA__MIRROR__ACKTIMEOUT=5s",
		"OTOPCUA_OPCUA__MIRROR__MAXLAGBYTES=1073741824", "OTOPCUA_OPCUA__MIRROR__QUEUESIZE=1", "OTOPCUA_OPCUA__MIRROR__MATCHWINDOW=00:01:00")
	want = MirrorConfig{Sync: true, AckTimeout: 5 * time.Second, MaxLagBytes: 1 << 30, QueueSize: 1, MatchWindow: time.Minute}
	if !c.OpcUa.Mirrored() || c.OpcUa.Mirror != want {
		t.Fatalf("from the environment: mirrored %v, OpcUa:Mirror = %+v, want %+v", c.OpcUa.Mirrored(), c.OpcUa.Mirror, want)
	}
}

func TestMirrorRefusals(t *testing.T) {
	tests := []struct {
		name, json string
		env        []string
		key, value string
		accepted   string
		source     string
	}{
		{"mirrored without a cluster", `{"OpcUa": {"RedundancySupport": "HotAndMirrored"}}`, nil,
			"OpcUa:RedundancySupport", "HotAndMirrored", "accepted values are Warm or Hot on a node without a cluster", ""},
		{"mirrored with only its own seed", `{"Cluster": {"PublicHostname": "a", "SeedNodes": ["a:4053"]}, "OpcUa": {"RedundancySupport": "hotandmirrored"}}`, nil,
			"OpcUa:RedundancySupport", "HotAndMirrored", "Cluster:SeedNodes names no node but this one", ""},
		{"mirrored without the driver role", `{` + pair + `, "OpcUa": {"RedundancySupport": "HotAndMirrored"}}`, []string{"OTOPCUA_ROLES=admin"},
			"OpcUa:RedundancySupport", "HotAndMirrored", "without the driver role", ""},
		{"mirrored from the environment alone", `{}`, []string{"OTOPCUA_OPCUA__REDUNDANCYSUPPORT=HotAndMirrored"},
			"OpcUa:RedundancySupport", "HotAndMirrored", "without a cluster", "OTOPCUA_OPCUA__REDUNDANCYSUPPORT"},
		{"unknown mode", `{"OpcUa": {"RedundancySupport": "Transparent"}}`, nil,
			"OpcUa:RedundancySupport", "Transparent", "accepted values are Warm, Hot, HotAndMirrored", ""},
		{"ack timeout zero", `{` + pair + `, "OpcUa": {"Mirror": {"AckTimeout": "0s"}}}`, nil,
			"OpcUa:Mirror:AckTimeout", "0s", "durations from 1ms to 5s", ""},
		{"ack timeout too long", `{` + pair + `, "OpcUa": {"Mirror": {"AckTimeout": "00:00:05.001"}}}`, nil,
			"OpcUa:Mirror:AckTimeout", "5.001s", "durations from 1ms to 5s", ""},
		{"ack timeout not a duration", `{` + pair + `, "OpcUa": {"Mirror": {"AckTimeout": "50"}}}`, nil,
			"OpcUa:Mirror:AckTimeout", "50", "10s or 250ms", ""},
		{"max lag too small", `{` + pair + `, "OpcUa": {"Mirror": {"MaxLagBytes": 65535}}}`, nil,
			"OpcUa:Mirror:MaxLagBytes", "65535", "from 65536 (64 KiB) to 1073741824 (1 GiB)", ""},
		{"max lag too large", `{` + pair + `, "OpcUa": {"Mirror": {"MaxLagBytes": 1073741825}}}`, nil,
			"OpcUa:Mirror:MaxLagBytes", "1073741825", "from 65536 (64 KiB) to 1073741824 (1 GiB)", ""},
		{"max lag from the environment", `{` + pair + `}`, []string{"OTOPCUA_OPCUA__MIRROR__MAXLAGBYTES=1024"},
			"OpcUa:Mirror:MaxLagBytes", "1024", "from 65536", "OTOPCUA_OPCUA__MIRROR__MAXLAGBYTES"},
		{"queue size zero", `{` + pair + `, "OpcUa": {"Mirror": {"QueueSize": 0}}}`, nil,
			"OpcUa:Mirror:QueueSize", "0", "whole numbers from 1 to 10000", ""},
		{"queue size too large", `{` + pair + `, "OpcUa": {"Mirror": {"QueueSize": 10001}}}`, nil,
			"OpcUa:Mirror:QueueSize", "10001", "whole numbers from 1 to 10000", ""},
		{"match window too short", `{` + pair + `, "OpcUa": {"Mirror": {"MatchWindow": "9ms"}}}`, nil,
			"OpcUa:Mirror:MatchWindow", "9ms", "durations from 10ms to 60s", ""},
		{"match window too long", `{` + pair + `, "OpcUa": {"Mirror": {"MatchWindow": "00:01:01"}}}`, nil,
			"OpcUa:Mirror:MatchWindow", "1m1s", "durations from 10ms to 60s", ""},
		{"sync not a bool", `{` + pair + `, "OpcUa": {"Mirror": {"Sync": "yes"}}}`, nil,
			"OpcUa:Mirror:Sync", "yes", "true or false", ""},
		{"unknown mirror key", `{` + pair + `, "OpcUa": {"Mirror": {"QueueSise": 5}}}`, nil,
			"OpcUa:Mirror:QueueSise", "5", "did you mean OpcUa:Mirror:QueueSize?", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items := loadItems(t, tc.json, tc.env...)
			if len(items) != 1 {
				t.Fatalf("got %d items, want one for %s: %v", len(items), tc.key, items)
			}
			it := items[0]
			if it.Key != tc.key || it.Value != tc.value || it.Source != tc.source || !strings.Contains(it.Accepted, tc.accepted) {
				t.Fatalf("item = %s (source %q)\nwant %s = %q (source %q) accepting %q", it, it.Source, tc.key, tc.value, tc.source, tc.accepted)
			}
		})
	}
}

func TestMirrorSummary(t *testing.T) {
	c := mustLoad(t, `{`+pair+`, "OpcUa": {"RedundancySupport": "HotAndMirrored", "Mirror": {"Sync": false}}}`)
	if got, want := c.MirrorSummary(), "session mirroring on (HotAndMirrored) sync=off ack-timeout=50ms max-lag-bytes=16777216 queue-size=100 match-window=1s"; got != want {
		t.Errorf("MirrorSummary = %q\nwant %q", got, want)
	}
	c = mustLoad(t, `{`+pair+`, "OpcUa": {"RedundancySupport": "Hot"}}`)
	if got, want := c.MirrorSummary(), "session mirroring off (OpcUa:RedundancySupport is Hot)"; got != want {
		t.Errorf("MirrorSummary = %q, want %q", got, want)
	}
}

func TestSingleNode(t *testing.T) {
	for _, tc := range []struct {
		json string
		want bool
	}{
		{`{}`, true},
		{`{"Cluster": {"PublicHostname": "a", "SeedNodes": ["a:4053"]}}`, true},
		{`{` + pair + `}`, false},
		{`{"Cluster": {"SeedNodes": ["b:4053"]}}`, false},
		{`{"Cluster": {"PublicHostname": "a", "SeedNodes": ["a:4053"]}, "OpcUa": {"PeerApplicationUris": ["urn:b"]}}`, false},
	} {
		if got := mustLoad(t, tc.json).SingleNode(); got != tc.want {
			t.Errorf("%s: SingleNode = %v, want %v", tc.json, got, tc.want)
		}
	}
}
