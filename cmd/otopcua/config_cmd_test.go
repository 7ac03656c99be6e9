package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheckSaysWhyLocalDbReplicationIsOff(t *testing.T) {
	file := filepath.Join(t.TempDir(), "appsettings.json")
	if err := os.WriteFile(file, []byte(`{"LocalDb": {"SyncListenPort": 4850, "Peers": ["node-b:4850"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"config", "check", "--ignore-env", file}, &stdout, &stderr, nil)
	want := "LocalDb replication off: LocalDb:Replication:ApiKey not set"
	if code != 0 || !strings.Contains(stdout.String(), want) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout.String(), stderr.String(), want)
	}
}

// TestConfigCheckWarnsOfClearTextReplication: replication on a
// non-loopback Cluster:Hostname without Cluster:Tls is valid (exit 0) and
// printed as a warning naming the keys to set.
func TestConfigCheckWarnsOfClearTextReplication(t *testing.T) {
	file := filepath.Join(t.TempDir(), "appsettings.json")
	if err := os.WriteFile(file, []byte(`{"Cluster": {"Hostname": "10.0.0.5", "PublicHostname": "a", "SeedNodes": ["a:4053"]},
		"LocalDb": {"SyncListenPort": 4850, "Peers": ["10.0.0.6:4850"], "Replication": {"ApiKey": "0123456789abcdef-pair"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"config", "check", "--ignore-env", file}, &stdout, &stderr, nil)
	want := "warning: LocalDb replication listens on 10.0.0.5:4850 (Cluster:Hostname, LocalDb:SyncListenPort) without Cluster:Tls"
	if code != 0 || !strings.Contains(stdout.String(), want) || !strings.Contains(stdout.String(), "set Cluster:Tls (CaFile, CertFile, KeyFile)") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout.String(), stderr.String(), want)
	}
	if strings.Contains(stdout.String(), "0123456789abcdef-pair") {
		t.Fatalf("config check printed the key: %q", stdout.String())
	}
}

// TestConfigCheckPrintsSessionMirroring: the mirroring settings in force,
// and the refusal of HotAndMirrored on a node without a cluster.
func TestConfigCheckPrintsSessionMirroring(t *testing.T) {
	file := filepath.Join(t.TempDir(), "appsettings.json")
	if err := os.WriteFile(file, []byte(`{"Cluster": {"PublicHostname": "a", "SeedNodes": ["a:4053", "b:4053"]},
		"OpcUa": {"RedundancySupport": "HotAndMirrored", "Mirror": {"AckTimeout": "20ms"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"config", "check", "--ignore-env", file}, &stdout, &stderr, nil)
	want := "session mirroring on (HotAndMirrored) sync=on ack-timeout=20ms max-lag-bytes=16777216 queue-size=100 match-window=1s"
	if code != 0 || !strings.Contains(stdout.String(), want) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout.String(), stderr.String(), want)
	}
	if err := os.WriteFile(file, []byte(`{"OpcUa": {"RedundancySupport": "HotAndMirrored"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"config", "check", "--ignore-env", file}, &stdout, &stderr, nil)
	if out := stdout.String() + stderr.String(); code != 2 || !strings.Contains(out, `OpcUa:RedundancySupport = "HotAndMirrored": accepted values are Warm or Hot on a node without a cluster`) {
		t.Fatalf("exit %d, output %q; want 2 naming OpcUa:RedundancySupport", code, out)
	}
}
