package host

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/opcua/pki"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// EnvTestFloatingIdentityAddr, when set in the environment of `otopcua
// host` to a local IP address, makes the node present the floating
// address's shared identity on that address, whether or not a floating
// address is configured (no executor runs for it). Multi-process tests use
// it to stand a loopback address in for the floating address. Never set it
// in production.
const EnvTestFloatingIdentityAddr = "OTOPCUA_TEST_FLOATING_IDENTITY_ADDR"

// floatingIdentityAddr is the local address the shared identity applies
// to: the test override, else the floating address; ok is false without
// either.
func floatingIdentityAddr(cfg *config.Config, override string) (netip.Addr, bool, error) {
	if override != "" {
		a, err := netip.ParseAddr(override)
		if err != nil {
			return a, false, fmt.Errorf("%s %q: %w", EnvTestFloatingIdentityAddr, override, err)
		}
		return a, true, nil
	}
	p, ok := cfg.Redundancy.FloatingAddress.Prefix()
	return p.Addr(), ok, nil
}

// loadFloatingIdentity returns the shared identity to present on the
// floating address: the pair an operator placed in the PKI directory
// (pki.SharedCertFile) wins, else the one `otopcua pki floating` stored in
// the Config DB, its key opened with Cluster:Secret. Without either, or
// without Cluster:Secret to open it, the node serves the floating address
// with its own identity and says so in a WARN; a stored identity whose key
// does not open stops start-up.
func loadFloatingIdentity(ctx context.Context, cfg *config.Config, db *configdb.DB, override string, log *slog.Logger) ([]uaserver.AddressIdentity, error) {
	addr, ok, err := floatingIdentityAddr(cfg, override)
	if err != nil || !ok {
		return nil, err
	}
	uri := cfg.Redundancy.FloatingAddress.ApplicationUri
	store, err := pki.Open(cfg.OpcUa.Security.PkiDir, pki.Options{Logger: log.With("part", "pki")})
	if err != nil {
		return nil, fmt.Errorf("OpcUa:Security:PkiDir %s: %w", cfg.OpcUa.Security.PkiDir, err)
	}
	id, err := store.SharedIdentity(uri)
	if err != nil {
		return nil, err
	}
	source := "PKI directory " + store.Dir()
	if id == nil {
		if id, err = floatingIdentityFromDb(ctx, cfg, db, uri, log); id == nil || err != nil {
			return nil, err
		}
		source = "Config DB"
	}
	log.Info("floating address: the shared application identity", "address", addr.String(), "applicationUri", uri,
		"thumbprint", fmt.Sprintf("%X", id.Thumbprint[:]), "source", source)
	return []uaserver.AddressIdentity{{Addr: addr, ApplicationURI: uri, Certificate: id.Certificate, PrivateKey: id.Key}}, nil
}

// floatingIdentityFromDb reads the cluster's shared identity from the
// Config DB; nil (and a WARN) when there is none or no secret to open it.
func floatingIdentityFromDb(ctx context.Context, cfg *config.Config, db *configdb.DB, uri string, log *slog.Logger) (*pki.Identity, error) {
	clusterID := cfg.Node.ClusterId
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	row, err := db.FloatingIdentity(ctx, clusterID)
	if errors.Is(err, configdb.ErrNotFound) {
		log.Warn("floating address: no shared application identity is provisioned for this ClusterId; the floating address presents this node's own certificate and ApplicationUri, so a secured client will see a different certificate after a failover and must trust it again; provision one with otopcua pki floating (once, on any member) and restart the members",
			"clusterId", clusterID)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("floating address identity: %w", err)
	}
	if row.ApplicationURI != uri {
		return nil, fmt.Errorf("floating address identity: the Config DB's is for ApplicationUri %q but Redundancy:FloatingAddress:ApplicationUri is %q: %w; set the same value on every member, or provision again with otopcua pki floating --force",
			row.ApplicationURI, uri, pki.ErrApplicationURIMismatch)
	}
	key, err := pki.OpenKey(row.SealedKey, cfg.Cluster.Secret, clusterID, row.Certificate)
	if errors.Is(err, pki.ErrNoClusterSecret) {
		log.Warn("floating address: the shared application identity is in the Config DB but Cluster:Secret is not set, so its private key is not loaded; the floating address presents this node's own certificate and a secured client will see a different certificate after a failover; set Cluster:Secret (the same on every member)",
			"clusterId", clusterID)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("floating address identity: %w", err)
	}
	return &pki.Identity{Certificate: row.Certificate, Chain: [][]byte{row.Certificate}, Key: key, Thumbprint: sha1.Sum(row.Certificate)}, nil
}
