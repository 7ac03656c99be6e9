package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/opcua/pki"
)

// pkiFloatingFlags are the flags of `otopcua pki floating`.
type pkiFloatingFlags struct {
	userFlags
	dns   []string
	ips   []string
	force bool
	out   string
}

// pkiFloatingCmd is `otopcua pki floating`: it provisions, once per
// ClusterId, the application identity every member presents on the
// floating address, and stores it in the Config DB with its private key
// sealed under Cluster:Secret.
func (c *cli) pkiFloatingCmd(path *string) *cobra.Command {
	var f pkiFloatingFlags
	cmd := &cobra.Command{
		Use:   "floating",
		Short: "Create the floating address's shared application identity (once per ClusterId) in the Config DB",
		Long: "floating creates the application instance certificate that every member of this node's ClusterId\n" +
			"presents on the floating address (Redundancy:FloatingAddress), so that a secured OPC UA client trusts it\n" +
			"once and sees the same certificate after a failover. RSA 2048, self-signed; its ApplicationUri is\n" +
			"Redundancy:FloatingAddress:ApplicationUri and its SubjectAltName also lists the floating IP, every --ip and\n" +
			"every --dns name. It is stored in the Config DB with its private key encrypted under a key derived from\n" +
			"Cluster:Secret (refused without one). Run it once, on any member; restart the members to load it.\n" +
			"A second run is refused unless --force (clients must then trust the new certificate).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.config = *path
			return c.pkiFloating(cmd, &f)
		},
	}
	cmd.Flags().StringSliceVar(&f.dns, "dns", nil, "a DNS name clients reach the floating address by (repeatable)")
	cmd.Flags().StringSliceVar(&f.ips, "ip", nil, "another IP address for the SubjectAltName (repeatable)")
	cmd.Flags().BoolVar(&f.force, "force", false, "replace the identity the Config DB holds already")
	cmd.Flags().StringVar(&f.out, "out", "", "also write the certificate (DER) to this file, for the clients' trust lists")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Second, "bound on the Config DB work")
	return cmd
}

func (c *cli) pkiFloating(cmd *cobra.Command, f *pkiFloatingFlags) error {
	cfg, err := config.Load(configFile(cmd, f.config), c.environ)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if cfg.Cluster.Secret == "" {
		return &exitError{code: exitUsage, err: pki.ErrNoClusterSecret}
	}
	hosts, err := floatingHosts(cfg, f)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	uri, clusterID := cfg.Redundancy.FloatingAddress.ApplicationUri, cfg.Node.ClusterId
	id, err := pki.NewSharedIdentity(uri, hosts, time.Now(), 0)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	sealed, err := pki.SealKey(id.Key, cfg.Cluster.Secret, clusterID, id.Certificate)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	err = c.withUserDB(cmd, &f.userFlags, "pki floating", func(ctx context.Context, db *configdb.DB) error {
		err := db.PutFloatingIdentity(ctx, clusterID, configdb.FloatingIdentity{ApplicationURI: uri, Certificate: id.Certificate, SealedKey: sealed}, f.force)
		if errors.Is(err, configdb.ErrFloatingIdentityExists) {
			return &exitError{code: exitFailure, err: fmt.Errorf("pki floating: ClusterId %q has a floating identity already; clients trust it, so it is kept. Replace it with --force (every client must then trust the new certificate)", clusterID)}
		}
		return err
	})
	if err != nil {
		return err
	}
	if f.out != "" {
		if err := os.WriteFile(f.out, id.Certificate, 0o644); err != nil {
			return &exitError{code: exitFailure, err: fmt.Errorf("pki floating: stored in the Config DB, but --out: %w", err)}
		}
	}
	fmt.Fprintf(c.stdout, "floating identity of ClusterId %s stored in the Config DB\napplicationUri %s\nthumbprint %X\nhosts %v\n",
		clusterID, uri, id.Thumbprint[:], hosts)
	if f.out != "" {
		fmt.Fprintf(c.stdout, "certificate written to %s\n", f.out)
	}
	fmt.Fprintln(c.stdout, "restart the members of the ClusterId to present it on the floating address")
	return nil
}

// floatingHosts are the SubjectAltName entries besides the URI: the
// floating IP, then --ip and --dns. At least one is required.
func floatingHosts(cfg *config.Config, f *pkiFloatingFlags) ([]string, error) {
	var hosts []string
	if p, ok := cfg.Redundancy.FloatingAddress.Prefix(); ok {
		hosts = append(hosts, p.Addr().String())
	}
	for _, ip := range f.ips {
		if net.ParseIP(ip) == nil {
			return nil, fmt.Errorf("pki floating: --ip %q is not an IP address", ip)
		}
		hosts = append(hosts, ip)
	}
	hosts = append(hosts, f.dns...)
	if len(hosts) == 0 {
		return nil, errors.New("pki floating: Redundancy:FloatingAddress:Address is not set and no --ip or --dns was given: the certificate names the address clients reach the floating endpoint by")
	}
	return hosts, nil
}
