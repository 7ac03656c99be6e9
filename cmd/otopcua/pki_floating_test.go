package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/opcua/pki"
)

// TestBinaryPKIFloating drives `otopcua pki floating`: refused without
// Cluster:Secret (naming the key) and without an address for the
// certificate; then it creates the identity once (the certificate for
// Redundancy:FloatingAddress:ApplicationUri with the IP and DNS names in
// its SubjectAltName, written to --out), stores it in the Config DB with a
// key that opens with the secret only; a second run is refused and leaves
// it; --force replaces it.
func TestBinaryPKIFloating(t *testing.T) {
	dir := t.TempDir()
	dbFile := filepath.Join(dir, "config.db")
	write := func(name, secret string) string {
		p := filepath.Join(dir, name)
		body := `{"Node": {"ClusterId": "plant-a"}, "Cluster": {"Secret": "` + secret + `"},
			"ConfigDb": {"Provider": "sqlite", "ConnectionString": "file:` + dbFile + `"},
			"OpcUa": {"Security": {"PkiDir": "` + filepath.Join(dir, "pki") + `"}}}`
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const secret = "a-cluster-secret-of-some-length"
	withSecret, noSecret := write("with.json", secret), write("without.json", "")
	run := func(cfg string, args ...string) binaryRun {
		return runCommand(t, cleanEnv(), "", append([]string{"pki", "floating", "--config", cfg}, args...)...)
	}
	stored := func() configdb.FloatingIdentity {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		db, err := configdb.Open(ctx, "sqlite", "file:"+dbFile)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		row, err := db.FloatingIdentity(ctx, "plant-a")
		if err != nil {
			t.Fatalf("the Config DB has no floating identity: %v", err)
		}
		return row
	}

	r := run(noSecret, "--ip", "10.0.0.100")
	if r.code != exitUsage || !strings.Contains(r.stderr, "Cluster:Secret") {
		t.Fatalf("without Cluster:Secret: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(dbFile); err == nil {
		t.Fatal("the Config DB was written without Cluster:Secret")
	}
	if r = run(withSecret); r.code != exitUsage || !strings.Contains(r.stderr, "Redundancy:FloatingAddress:Address") {
		t.Fatalf("without an address: exit %d, stderr %q", r.code, r.stderr)
	}

	out := filepath.Join(dir, "floating.der")
	if r = run(withSecret, "--ip", "10.0.0.100", "--dns", "opcua.plant-a.example", "--out", out); r.code != 0 {
		t.Fatalf("create: exit %d, stderr %q", r.code, r.stderr)
	}
	first := stored()
	der, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(der, first.Certificate) {
		t.Fatalf("--out: %v (same as stored: %v)", err, bytes.Equal(der, first.Certificate))
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if uris := pki.ApplicationURIs(c); first.ApplicationURI != "urn:otopcua:floating:plant-a" || !slices.Equal(uris, []string{first.ApplicationURI}) ||
		len(c.IPAddresses) != 1 || c.IPAddresses[0].String() != "10.0.0.100" || !slices.Equal(c.DNSNames, []string{"opcua.plant-a.example"}) {
		t.Fatalf("certificate: uri %q %v, IPs %v, DNS %v", first.ApplicationURI, uris, c.IPAddresses, c.DNSNames)
	}
	if _, err := pki.OpenKey(first.SealedKey, secret, "plant-a", first.Certificate); err != nil {
		t.Fatalf("the stored key does not open with the secret: %v", err)
	}
	if _, err := pki.OpenKey(first.SealedKey, secret+"-other", "plant-a", first.Certificate); err == nil {
		t.Fatal("the stored key opens with another secret")
	}
	if !strings.Contains(r.stdout, first.ApplicationURI) {
		t.Errorf("stdout %q does not name the ApplicationUri", r.stdout)
	}

	if r = run(withSecret, "--ip", "10.0.0.100"); r.code != exitFailure || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("second create: exit %d, stderr %q", r.code, r.stderr)
	}
	if !bytes.Equal(stored().Certificate, first.Certificate) {
		t.Fatal("a refused second create replaced the identity")
	}
	if r = run(withSecret, "--ip", "10.0.0.100", "--force"); r.code != 0 {
		t.Fatalf("--force: exit %d, stderr %q", r.code, r.stderr)
	}
	if bytes.Equal(stored().Certificate, first.Certificate) {
		t.Fatal("--force kept the old identity")
	}
}
