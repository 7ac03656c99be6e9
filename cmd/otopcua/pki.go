package main

import (
	"errors"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/opcua/pki"
	"github.com/spf13/cobra"
)

// pkiCmd is `otopcua pki list|trust|reject|remove|floating`: the operator's view of
// OpcUa:Security:PkiDir. A running node sees a change within a second.
func (c *cli) pkiCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "pki",
		Short: "List and manage the application certificates the OPC UA server trusts",
		Long: "pki works on the PKI directory of OpcUa:Security:PkiDir (from --config and the environment):\n" +
			"the server's own certificate, trusted and rejected client certificates and CA issuers.\n" +
			"A client refused with BadCertificateUntrusted is in rejected/; trust it with its thumbprint.\n" +
			"A running node applies a change within a second, without a restart.",
	}
	cmd.PersistentFlags().StringVarP(&path, "config", "c", defaultConfigFile, "appsettings.json naming OpcUa:Security:PkiDir")
	open := func(cmd *cobra.Command) (*pki.Store, error) {
		cfg, err := config.Load(configFile(cmd, path), c.environ)
		if err != nil {
			return nil, &exitError{code: exitUsage, err: err}
		}
		log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		s, err := pki.Open(cfg.OpcUa.Security.PkiDir, pki.Options{Logger: log})
		if err != nil {
			return nil, &exitError{code: exitFailure, err: err}
		}
		return s, nil
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List own, trusted, issuer and rejected certificates",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := open(cmd)
			if err != nil {
				return err
			}
			c.printPKI(s)
			return nil
		},
	})
	for _, op := range []struct {
		use, short, done string
		do               func(*pki.Store, string) error
	}{
		{"trust THUMBPRINT", "Move a rejected certificate to trusted", "trusted", (*pki.Store).Trust},
		{"reject THUMBPRINT", "Move a trusted certificate to rejected", "rejected", (*pki.Store).Reject},
		{"remove THUMBPRINT", "Delete a certificate from trusted, issuers and rejected", "removed", (*pki.Store).Remove},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   op.use,
			Short: op.short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				s, err := open(cmd)
				if err != nil {
					return err
				}
				if err := op.do(s, args[0]); err != nil {
					if _, perr := pki.ParseThumbprint(args[0]); perr != nil || errors.Is(err, pki.ErrUnknownThumbprint) {
						return &exitError{code: exitUsage, err: fmt.Errorf("%v (PKI directory %s; see otopcua pki list)", err, s.Dir())}
					}
					return &exitError{code: exitFailure, err: err}
				}
				fmt.Fprintf(c.stdout, "%s %s\n", op.done, args[0])
				return nil
			},
		})
	}
	cmd.AddCommand(c.pkiFloatingCmd(&path))
	return cmd
}

// printPKI writes the store as a table, one row per certificate.
func (c *cli) printPKI(s *pki.Store) {
	es := s.List()
	fmt.Fprintf(c.stdout, "PKI directory %s\n", s.Dir())
	if len(es) == 0 {
		fmt.Fprintln(c.stdout, "no certificates (the server generates its own at first start)")
		return
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "STORE\tTHUMBPRINT\tSUBJECT\tAPPLICATION URI\tNOT BEFORE\tNOT AFTER")
	for _, e := range es {
		uri := e.ApplicationURI
		if uri == "" {
			uri = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Dir, e.Thumbprint, e.Subject, uri,
			e.NotBefore.UTC().Format(time.DateOnly), e.NotAfter.UTC().Format(time.DateOnly))
	}
	w.Flush()
}
