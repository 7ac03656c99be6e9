package host

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/opcua/pki"
)

// TestLoadFloatingIdentity: without a floating address nothing is loaded;
// with one, a node whose Config DB has no identity, or that has no
// Cluster:Secret to open it, serves its own identity with a WARN; the
// Config DB's identity is loaded with the secret and applies to the
// floating IP; one sealed under another secret stops start-up; an
// operator's pair in the PKI directory wins over the Config DB.
func TestLoadFloatingIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const secret = "the-cluster-secret-0123"
	cfg := config.Default()
	cfg.Node.ClusterId = "plant-a"
	cfg.Redundancy.FloatingAddress.ApplicationUri = config.DefaultFloatingApplicationURI("plant-a")
	cfg.OpcUa.Security.PkiDir = filepath.Join(t.TempDir(), "pki")
	db, err := configdb.Open(ctx, configdb.ProviderSQLite, "file:"+filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	load := func() ([]byte, error) {
		logs.Reset()
		ids, err := loadFloatingIdentity(ctx, cfg, db, "", log)
		if err != nil || len(ids) == 0 {
			return nil, err
		}
		if ids[0].Addr.String() != "10.0.0.100" || ids[0].ApplicationURI != "urn:otopcua:floating:plant-a" {
			t.Fatalf("identity for %s, %q", ids[0].Addr, ids[0].ApplicationURI)
		}
		return ids[0].Certificate, nil
	}

	if got, err := load(); got != nil || err != nil {
		t.Fatalf("without a floating address: %v %v", got, err)
	}
	cfg.Redundancy.FloatingAddress.Address = "10.0.0.100/24"
	if got, err := load(); got != nil || err != nil || !strings.Contains(logs.String(), "otopcua pki floating") {
		t.Fatalf("none provisioned: %v %v, log %q", got, err, logs.String())
	}
	id, err := pki.NewSharedIdentity(cfg.Redundancy.FloatingAddress.ApplicationUri, []string{"10.0.0.100"}, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	store := func(secret string) {
		sealed, err := pki.SealKey(id.Key, secret, "plant-a", id.Certificate)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.PutFloatingIdentity(ctx, "plant-a", configdb.FloatingIdentity{ApplicationURI: cfg.Redundancy.FloatingAddress.ApplicationUri,
			Certificate: id.Certificate, SealedKey: sealed}, true); err != nil {
			t.Fatal(err)
		}
	}
	store(secret)
	cfg.Cluster.Secret = ""
	if got, err := load(); got != nil || err != nil || !strings.Contains(logs.String(), "Cluster:Secret") {
		t.Fatalf("without Cluster:Secret: %v %v, log %q", got, err, logs.String())
	}
	cfg.Cluster.Secret = secret
	if got, err := load(); err != nil || !bytes.Equal(got, id.Certificate) || !strings.Contains(logs.String(), "source=\"Config DB\"") {
		t.Fatalf("from the Config DB: %v, same certificate %v, log %q", err, bytes.Equal(got, id.Certificate), logs.String())
	}
	store(secret + "-other")
	if _, err := load(); !errors.Is(err, pki.ErrSealedKey) {
		t.Fatalf("sealed under another secret: %v, want ErrSealedKey", err)
	}

	own, err := pki.NewSharedIdentity(cfg.Redundancy.FloatingAddress.ApplicationUri, []string{"10.0.0.100"}, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp := filepath.Join(cfg.OpcUa.Security.PkiDir, pki.SharedCertFile), filepath.Join(cfg.OpcUa.Security.PkiDir, pki.SharedKeyFile)
	for p, b := range map[string][]byte{cp: own.Certificate, kp: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(own.Key)})} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := load(); err != nil || !bytes.Equal(got, own.Certificate) || !strings.Contains(logs.String(), "PKI directory") {
		t.Fatalf("operator's files: %v, theirs %v, log %q", err, bytes.Equal(got, own.Certificate), logs.String())
	}
}
