package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/otopcua/otopcua/host"
)

// maxStatusBody bounds the /api/actors answer read from a node.
const maxStatusBody = 4 << 20

func (c *cli) statusCmd() *cobra.Command {
	var (
		path    string
		rawURL  string
		asJSON  bool
		timeout time.Duration
		token   string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a running node's actor tree (GET /api/actors)",
		Long: `Show the supervision tree of a running node: every actor with its kind,
the messages waiting in its mailbox, its restarts and when its current
incarnation started, indented by path. The cluster daemon and the pub/sub
mediator are shown beside the tree (supervisor "own").

Without --url the node is the local one of --config (as for otopcua health).
--url is the node's HTTP base, e.g. http://127.0.0.1:8080. --json prints
the raw answer.

The node answers a Viewer or above: give an API token (otopcua user token
NAME) with --token or, kept out of the process list, in OTOPCUA_TOKEN. A
node with Http:AnonymousRead needs none.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var pinned *tls.Config
			if rawURL == "" {
				u, p, err := c.localHealthURL(configFile(cmd, path), false)
				if err != nil {
					return err
				}
				rawURL, pinned = strings.TrimSuffix(u, "/readyz"), p
			}
			u, err := url.Parse(rawURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return &exitError{code: exitUsage, err: fmt.Errorf("status: --url %q: want the node's HTTP base such as http://127.0.0.1:8080", rawURL)}
			}
			u.Path = strings.TrimSuffix(u.Path, "/") + "/api/actors"
			return c.status(cmd.Context(), statusRequest{url: u.String(), token: c.apiToken(token), pinned: pinned, timeout: timeout, asJSON: asJSON})
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", defaultConfigFile, "appsettings.json of the local node (for Http:Hostname and Http:Port)")
	cmd.Flags().StringVar(&rawURL, "url", "", "the node's HTTP base URL (default: the local node's)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON answer")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultHealthTimeout, "bound on the request")
	bindToken(cmd, &token)
	return cmd
}

// statusRequest is one `otopcua status`: the node's /api/actors URL, the
// API token ("" none), the pinned TLS of the local node (nil none).
type statusRequest struct {
	url     string
	token   string
	pinned  *tls.Config
	timeout time.Duration
	asJSON  bool
}

func (c *cli) status(parent context.Context, s statusRequest) error {
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	u := s.url
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("status: %w", err)}
	}
	setBearer(req, s.token)
	client := http.DefaultClient
	if s.pinned != nil {
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: s.pinned}}
	}
	resp, err := client.Do(req)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("status: %s did not answer: %w", u, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("status: %s: %w", u, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return &exitError{code: exitFailure, err: fmt.Errorf("status: %s answered %s: %s%s", u, resp.Status, strings.TrimSpace(string(body)), refusalHint(resp.StatusCode, s.token))}
	}
	var rep host.ActorsReport
	if err := json.Unmarshal(body, &rep); err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("status: %s: not an actor report: %w", u, err)}
	}
	if s.asJSON {
		_, err := c.stdout.Write(body)
		return err
	}
	renderActors(c.stdout, rep)
	if fr, ok := c.floatingOf(ctx, strings.TrimSuffix(u, "/api/actors")+"/api/floating", s.token, client); ok {
		renderFloating(c.stdout, fr)
	}
	return nil
}

// floatingOf reads the node's floating address report; false when the node
// has none (404) or it cannot be read.
func (c *cli) floatingOf(ctx context.Context, u, token string, client *http.Client) (host.FloatingReport, bool) {
	var fr host.FloatingReport
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fr, false
	}
	setBearer(req, token)
	resp, err := client.Do(req)
	if err != nil {
		return fr, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fr, false
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil || json.Unmarshal(body, &fr) != nil {
		return fr, false
	}
	return fr, true
}

// renderFloating prints the floating address section of otopcua status.
func renderFloating(w io.Writer, r host.FloatingReport) {
	fmt.Fprintf(w, "\nfloating address %s (%s): holds=%v owner=%s verb=%s epoch=%d\n", r.Address, r.Provider, r.Holds, orNone(r.Owner), r.Verb, r.Epoch)
	fmt.Fprintf(w, "  %s\n", r.Reason)
	if r.Observed != nil {
		fmt.Fprintf(w, "  observed: %s %s %s at %s\n", r.Observed.Kind, r.Observed.Member, r.Observed.ID, r.Observed.At.UTC().Format(time.RFC3339))
	}
	if r.Drift != "" {
		fmt.Fprintf(w, "  drift: %s\n", r.Drift)
	}
	if r.StreamErr != "" {
		fmt.Fprintf(w, "  stream: %s\n", r.StreamErr)
	}
	if r.LastError != "" {
		fmt.Fprintf(w, "  last error: %s\n", r.LastError)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  MEMBER\tPRIMARY\tCLAIMS\tHEARTBEAT\tCLOCK\tGONE")
	for _, m := range r.Members {
		fmt.Fprintf(tw, "  %s\t%v\t%v\t%s\t%s\t%v\n", m.Node, m.Primary, m.Claims, m.Heartbeat.UTC().Format("15:04:05.000"), signed(m.Skew), m.Gone)
	}
	_ = tw.Flush()
}

// renderActors prints the report as an indented tree.
func renderActors(w io.Writer, rep host.ActorsReport) {
	fmt.Fprintf(w, "node %s (uid %d)\n", rep.NodeID, rep.UID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTOR\tKIND\tMAILBOX\tRESTARTS\tSTARTED\tSUPERVISOR")
	for _, a := range rep.Actors {
		depth := strings.Count(a.Path, "/")
		name := a.Path
		if i := strings.LastIndex(a.Path, "/"); i >= 0 {
			name = a.Path[i+1:]
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%d\t%d\t%s\t%s\n", strings.Repeat("  ", depth), name, a.Kind, a.Mailbox, a.Restarts,
			a.StartedAt.UTC().Format(time.RFC3339), a.Supervisor)
	}
	_ = tw.Flush()
}
