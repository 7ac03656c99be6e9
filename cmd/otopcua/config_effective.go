package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/otopcua/otopcua/config"
	hoconcompat "github.com/otopcua/otopcua/hocon-compat"
	"github.com/spf13/cobra"
)

// clusterConfigPath is where a running node reports its installed cluster
// settings as HOCON.
const clusterConfigPath = "/api/cluster/config"

// effectiveTimeout bounds the request to a running node.
const effectiveTimeout = 10 * time.Second

// maxEffectiveBody bounds what is read from a running node.
const maxEffectiveBody = 1 << 20

func (c *cli) configEffectiveCmd() *cobra.Command {
	var nodeURL, token string
	var ignoreEnv bool
	cmd := &cobra.Command{
		Use:   "effective FILE | --url http://host:port",
		Short: "Print the effective cluster settings as HOCON",
		Long: `With FILE, load it as "otopcua host" would (defaults, FILE, OTOPCUA_
environment overrides), read the akka.conf named by Cluster:AkkaConfigPath
when set, and print the cluster settings the node would install, as HOCON,
followed by the Redundancy:FloatingAddress keys as comments.
Cluster:* keys set in FILE or the environment win over akka.conf; akka.conf
fills the others; a key set in both to different values is reported on
stderr, with every line of akka.conf that has no effect.

With --url, print what a running node reports it installed
(GET ` + clusterConfigPath + `): the files may say something else. The node
answers a Viewer or above: an API token in --token or ` + tokenEnv + `
(none for a node with Http:AnonymousRead).

Exits 0 on success, 2 for an invalid configuration, 1 when the node cannot
be asked.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			switch {
			case nodeURL != "" && len(args) > 0:
				return &exitError{code: exitUsage, err: errors.New("give either FILE or --url, not both")}
			case nodeURL != "":
				return c.effectiveFromNode(nodeURL, c.apiToken(token))
			case len(args) == 0:
				return &exitError{code: exitUsage, err: errors.New("give FILE or --url http://host:port")}
			}
			environ := c.environ
			if ignoreEnv {
				environ = nil
			}
			return c.effectiveFromFile(args[0], environ)
		},
	}
	cmd.Flags().StringVar(&nodeURL, "url", "", "ask the running node at this HTTP address (http://host:port) instead of reading files")
	cmd.Flags().BoolVar(&ignoreEnv, "ignore-env", false, "read FILE alone, without OTOPCUA_ environment overrides")
	bindToken(cmd, &token)
	return cmd
}

// effectiveFromFile prints the effective settings computed from a
// configuration file and its akka.conf.
func (c *cli) effectiveFromFile(path string, environ []string) error {
	cfg, err := config.Load(path, environ)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	eff, warnings, err := effectiveCluster(cfg, path, environ)
	for _, w := range warnings {
		fmt.Fprintf(c.stderr, "warning: %s\n", w)
	}
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if _, err := io.WriteString(c.stdout, hoconcompat.Render(eff)); err != nil {
		return err
	}
	return writeFloating(c.stdout, cfg)
}

// writeFloating prints the effective Redundancy:FloatingAddress keys after
// the cluster settings, as HOCON comments: they are appsettings.json keys
// with no akka.conf counterpart, and the output stays an akka.conf.
func writeFloating(w io.Writer, cfg *config.Config) error {
	var b strings.Builder
	b.WriteString("\n# Redundancy:FloatingAddress (appsettings.json only): " + cfg.FloatingSummary() + "\n")
	for _, l := range cfg.FloatingLines() {
		b.WriteString("#   " + l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// effectiveCluster combines the loaded configuration with the akka.conf at
// Cluster:AkkaConfigPath (keys set in path or the environment win).
func effectiveCluster(cfg *config.Config, path string, environ []string) (hoconcompat.EffectiveCluster, []hoconcompat.Warning, error) {
	var data []byte
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return hoconcompat.EffectiveCluster{}, nil, fmt.Errorf("config: %w", err)
		}
	}
	explicit, err := hoconcompat.ExplicitKeys(data, environ)
	if err != nil {
		return hoconcompat.EffectiveCluster{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return hoconcompat.LoadEffective(&cfg.Cluster, explicit)
}

// effectiveFromNode prints what a running node reports, asked with the
// API token ("" none).
func (c *cli) effectiveFromNode(base, token string) error {
	target, err := nodeConfigURL(base)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), effectiveTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	req.Header.Set("Accept", "text/plain")
	setBearer(req, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("asking the node: %w", err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxEffectiveBody))
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("GET %s: %w", target, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return &exitError{code: exitFailure, err: fmt.Errorf("GET %s: %s: %s%s", target, resp.Status, strings.TrimSpace(string(body)), refusalHint(resp.StatusCode, token))}
	}
	if _, err := c.stdout.Write(body); err != nil {
		return err
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		fmt.Fprintln(c.stdout)
	}
	return nil
}

// nodeConfigURL turns "http://host:port" (with or without a path) into the
// URL of the node's cluster config endpoint.
func nodeConfigURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--url %q: accepted values are http://host:port or https://host:port", base)
	}
	if !strings.HasSuffix(u.Path, clusterConfigPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + clusterConfigPath
	}
	return u.String(), nil
}
