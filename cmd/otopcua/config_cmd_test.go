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
