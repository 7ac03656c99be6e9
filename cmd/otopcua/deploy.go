package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/deployment"
	"github.com/spf13/cobra"
)

// defaultDeployTimeout bounds opening, migrating and writing the Config DB.
const defaultDeployTimeout = 30 * time.Second

func (c *cli) deployCmd() *cobra.Command {
	var (
		path       string
		check      bool
		anyCluster bool
		timeout    time.Duration
		upstream   upstreamFlags
	)
	cmd := &cobra.Command{
		Use:   "deploy FILE...",
		Short: "Validate deployment documents and store them in the Config DB",
		Long: `Validate the deployment document FILE (docs/deployments.md) and store it as
the next version of its cluster's deployment in the Config DB of --config
(default appsettings.json in the working directory; without that file, the
defaults), plus OTOPCUA_ environment overrides. Every node of that
ClusterId then applies the newest version. The document's clusterId must be
the configuration's Node:ClusterId. Storing a document byte for byte equal
to the newest version stores nothing and prints that version again.

Before it stores a document, deploy asks the upstream of every opcua
device (securityPolicy None; secured upstreams are checked by the nodes at
connect), one connection each, all within --upstream-timeout: a tag
without "type" takes the upstream's DataType (written into the stored
document), a tag whose type differs from the upstream's or whose nodeId or
browsePath does not resolve is a problem. An upstream that does not answer
is a warning for tags with a type (the nodes check them at connect) and a
problem for tags without one. --no-upstream asks no upstream (a tag
without type is then a problem).

With --check, FILE is only validated (the upstreams asked as above) (and, when --config is given, its
clusterId compared); the Config DB is not touched.

Several FILEs are validated first, all of them, and stored only when every
one is valid, in the order given. --any-cluster stores documents of any
clusterId (one shared Config DB serving several clusters, as the
docker-compose rig's one-shot deploy service does); without it each
document's clusterId must be Node:ClusterId.

Exit codes: 0 stored (or valid, with --check); 2 the document or the
configuration is invalid — every problem is printed on its own line as
path = value: accepted values — or the clusterId differs; 1 the Config DB
failed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			configGiven := cmd.Flags().Changed("config")
			path = configFile(cmd, path)
			if check {
				for _, f := range args {
					if err := c.deployCheck(cmd.Context(), f, path, configGiven && !anyCluster, upstream); err != nil {
						return err
					}
				}
				return nil
			}
			return c.deploy(cmd.Context(), args, path, anyCluster, timeout, upstream)
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", defaultConfigFile, "appsettings.json naming Node:ClusterId and the Config DB")
	cmd.Flags().BoolVar(&check, "check", false, "only validate FILE; do not store it")
	cmd.Flags().BoolVar(&anyCluster, "any-cluster", false, "accept documents of any clusterId (do not compare with Node:ClusterId)")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultDeployTimeout, "bound on reaching and writing the Config DB")
	cmd.Flags().DurationVar(&upstream.timeout, "upstream-timeout", defaultUpstreamTimeout, "bound on asking the upstreams of the opcua devices, all of them")
	cmd.Flags().BoolVar(&upstream.skip, "no-upstream", false, "ask no upstream: every opcua tag must give its type, checked by the nodes at connect")
	return cmd
}

// configFile is the configuration file a command loads: --config's value,
// or "" (the defaults and environment only) when --config was not given
// and defaultConfigFile does not exist.
func configFile(cmd *cobra.Command, path string) string {
	if !cmd.Flags().Changed("config") {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return ""
		}
	}
	return path
}

// readDocument reads and decodes FILE, asks the upstreams of its opcua
// devices (withUpstream) and returns the document to store; every failure
// is an exit 2.
func (c *cli) readDocument(ctx context.Context, file string, up upstreamFlags) (*deployment.Document, []byte, error) {
	doc, data, err := decodeFile(file)
	if err != nil {
		return nil, nil, err
	}
	return c.withUpstream(ctx, file, doc, data, up)
}

// decodeFile reads and decodes FILE, an opcua tag's type optional
// (DecodeTypeless); every failure is an exit 2.
func decodeFile(file string) (*deployment.Document, []byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, &exitError{code: exitUsage, err: fmt.Errorf("deploy: %w", err)}
	}
	doc, err := deployment.DecodeTypeless(data)
	var se *deployment.SyntaxError
	var ve *deployment.ValidationError
	switch {
	case err == nil:
		return doc, data, nil
	case errors.As(err, &se):
		err = fmt.Errorf("deploy: %s:%d:%d: %s", file, se.Line, se.Column, se.Msg)
	case errors.As(err, &ve):
		err = fmt.Errorf("invalid deployment document in %s: %s", file, problemLines(ve.Problems))
	default:
		err = fmt.Errorf("deploy: %s: %w", file, err)
	}
	return nil, nil, &exitError{code: exitUsage, err: err}
}

// problemLines is "N problems" followed by one indented line per problem.
func problemLines(problems []deployment.Problem) string {
	s := fmt.Sprintf("%d problem", len(problems))
	if len(problems) != 1 {
		s += "s"
	}
	for _, p := range problems {
		s += "\n  " + p.String()
	}
	return s
}

// loadForDeploy loads the configuration and checks that it names the
// document's cluster.
func (c *cli) loadForDeploy(file, configPath string, doc *deployment.Document) (*config.Config, error) {
	cfg, err := config.Load(configPath, c.environ)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	if err := sameCluster(file, configPath, cfg, doc); err != nil {
		return nil, err
	}
	return cfg, nil
}

// sameCluster checks that cfg (loaded from configPath) names the
// document's cluster.
func sameCluster(file, configPath string, cfg *config.Config, doc *deployment.Document) error {
	if doc.ClusterId != cfg.Node.ClusterId {
		source := configPath
		if source == "" {
			source = "the defaults and environment"
		}
		return &exitError{code: exitUsage, err: fmt.Errorf(
			"deploy: %s is for clusterId %q but Node:ClusterId is %q (%s): a node applies only its own cluster's deployment",
			file, doc.ClusterId, cfg.Node.ClusterId, source)}
	}
	return nil
}

func (c *cli) deployCheck(ctx context.Context, file, configPath string, configGiven bool, up upstreamFlags) error {
	doc, _, err := c.readDocument(ctx, file, up)
	if err != nil {
		return err
	}
	if configGiven {
		if _, err := c.loadForDeploy(file, configPath, doc); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "ok: %s: cluster %s, %s\n", file, doc.ClusterId, contents(doc))
	return nil
}

func (c *cli) deploy(parent context.Context, files []string, configPath string, anyCluster bool, timeout time.Duration, up upstreamFlags) error {
	type doc struct {
		file string
		doc  *deployment.Document
		data []byte
	}
	var docs []doc
	var cfg *config.Config
	for _, f := range files {
		d, data, err := c.readDocument(parent, f, up)
		if err != nil {
			return err
		}
		if cfg == nil { // once, after the first document is read and valid
			if cfg, err = config.Load(configPath, c.environ); err != nil {
				return &exitError{code: exitUsage, err: err}
			}
		}
		if !anyCluster {
			if err := sameCluster(f, configPath, cfg, d); err != nil {
				return err
			}
		}
		docs = append(docs, doc{f, d, data})
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	dbFailed := func(err error) error {
		return &exitError{code: exitFailure, err: fmt.Errorf("deploy: Config DB (ConfigDb:Provider %s): %w", cfg.ConfigDb.Provider, err)}
	}
	db, err := configdb.Open(ctx, cfg.ConfigDb.Provider, cfg.ConfigDb.ConnectionString)
	if err != nil {
		return dbFailed(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return dbFailed(err)
	}
	for _, d := range docs {
		dep, created, err := db.PutDeployment(ctx, d.doc.ClusterId, d.data)
		if err != nil {
			return dbFailed(fmt.Errorf("%s: %w", d.file, err))
		}
		if created {
			fmt.Fprintf(c.stdout, "deployed cluster %s version %d (%s, sha256 %s)\n", dep.ClusterID, dep.Version, contents(d.doc), dep.SHA256)
		} else {
			fmt.Fprintf(c.stdout, "deployed cluster %s version %d (unchanged: the newest version, stored %s, already holds this document)\n",
				dep.ClusterID, dep.Version, dep.CreatedAt.Format(time.RFC3339))
		}
	}
	return nil
}

// contents counts what a document holds, e.g. "2 devices, 6 tags, 1 alarm".
func contents(doc *deployment.Document) string {
	tags := 0
	for _, d := range doc.Devices {
		tags += len(d.Tags)
	}
	return plural(len(doc.Devices), "device") + ", " + plural(tags, "tag") + ", " + plural(len(doc.Alarms), "alarm")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
