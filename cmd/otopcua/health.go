package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/health"
	"github.com/spf13/cobra"
)

// defaultHealthTimeout bounds one health request.
const defaultHealthTimeout = 3 * time.Second

// maxHealthBody bounds the response read from a node.
const maxHealthBody = 64 << 10

func (c *cli) healthCmd() *cobra.Command {
	var (
		path    string
		rawURL  string
		healthy bool
		live    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Ask a node whether it is ready (exit 0) or not (exit 1)",
		Long: `Ask a running node's /readyz whether it is ready: its OPC UA endpoint
listens, it is an Up cluster member and its Config DB answers. Prints
"ready" or "not ready" with each failed check, and exits 0 when ready, 1
when not ready or unreachable, 2 on a bad command line or configuration.
It is the Docker HEALTHCHECK of the otopcua image, which has no curl.

Without --url the node is the local one of --config (default
appsettings.json in the working directory, if present) plus OTOPCUA_
environment overrides: http://<Http:Hostname>:<Http:Port>/readyz, with
127.0.0.1 for a wildcard Http:Hostname; https:// when Http:Tls is set, and
then only the certificate of Http:Tls:CertFile is trusted (it need not name
127.0.0.1). --healthy also requires
Server.ServiceLevel ≥ 200 (/readyz?healthy=1); --live asks /healthz
instead (the process and its actor system run).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var pinned *tls.Config
			if rawURL == "" {
				u, p, err := c.localHealthURL(configFile(cmd, path), live)
				if err != nil {
					return err
				}
				rawURL, pinned = u, p
			}
			u, err := url.Parse(rawURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return &exitError{code: exitUsage, err: fmt.Errorf("health: --url %q: want an http:// or https:// URL such as http://127.0.0.1:8080/readyz", rawURL)}
			}
			if healthy {
				q := u.Query()
				q.Set("healthy", "1")
				u.RawQuery = q.Encode()
			}
			return c.health(cmd.Context(), u.String(), pinned, timeout)
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", defaultConfigFile, "appsettings.json of the local node (for Http:Hostname and Http:Port)")
	cmd.Flags().StringVar(&rawURL, "url", "", "the node's readiness URL (default: the local node's /readyz)")
	cmd.Flags().BoolVar(&healthy, "healthy", false, "also require ServiceLevel ≥ 200")
	cmd.Flags().BoolVar(&live, "live", false, "ask /healthz (alive) instead of /readyz (ready)")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultHealthTimeout, "bound on the request")
	return cmd
}

// localHealthURL is the probe URL of the node configured by path + env,
// and with Http:Tls the TLS settings that trust its certificate alone.
func (c *cli) localHealthURL(path string, live bool) (string, *tls.Config, error) {
	cfg, err := config.Load(path, c.environ)
	if err != nil {
		return "", nil, &exitError{code: exitUsage, err: err}
	}
	if cfg.Http.Port == 0 {
		return "", nil, &exitError{code: exitUsage, err: errors.New("health: Http:Port is 0 (the HTTP endpoint is disabled): nothing to ask; give --url")}
	}
	host := cfg.Http.Hostname
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	endpoint := "/readyz"
	if live {
		endpoint = "/healthz"
	}
	hostPort := net.JoinHostPort(host, strconv.Itoa(cfg.Http.Port))
	if !cfg.Http.Tls.Enabled() {
		return "http://" + hostPort + endpoint, nil, nil
	}
	pinned, err := pinCertificate(cfg.Http.Tls.CertFile, cfg.Http.Tls.KeyFile)
	if err != nil {
		return "", nil, &exitError{code: exitUsage, err: err}
	}
	return "https://" + hostPort + endpoint, pinned, nil
}

// pinCertificate is a client TLS configuration that accepts exactly the
// certificate in certFile (the node's own, read from its configuration),
// whatever names it carries.
func pinCertificate(certFile, keyFile string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("health: Http:Tls:CertFile %s: %w", certFile, err)
	}
	want := pair.Certificate[0]
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain and names are not checked; the leaf must be the
		// configured certificate byte for byte.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !bytes.Equal(raw[0], want) {
				return fmt.Errorf("the node's certificate is not Http:Tls:CertFile %s", certFile)
			}
			return nil
		},
	}, nil
}

func (c *cli) health(parent context.Context, u string, pinned *tls.Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("health: %w", err)}
	}
	client := http.DefaultClient
	if pinned != nil {
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: pinned}}
	}
	resp, err := client.Do(req)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("not ready: %s did not answer: %w", u, err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxHealthBody))
	var r health.Report
	parsed := json.Unmarshal(body, &r) == nil && r.Status != ""
	if resp.StatusCode == http.StatusOK {
		status := "ready"
		if parsed {
			status = r.Status
		}
		fmt.Fprintln(c.stdout, status)
		return nil
	}
	if !parsed {
		return &exitError{code: exitFailure, err: fmt.Errorf("not ready: %s answered %s: %s", u, resp.Status, strings.TrimSpace(string(body)))}
	}
	var lines []string
	for _, ch := range r.Checks {
		if !ch.OK {
			lines = append(lines, fmt.Sprintf("  %s: %s", ch.Name, ch.Detail))
		}
	}
	return &exitError{code: exitFailure, err: fmt.Errorf("%s (%s)\n%s", r.Status, u, strings.Join(lines, "\n"))}
}
