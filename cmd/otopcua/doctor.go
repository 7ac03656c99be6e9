package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otopcua/otopcua/host"
)

// maxSkew is the clock offset from the Config DB above which doctor warns:
// the floating address never reads a member's clock, but logs, alarm
// timestamps and audit rows of a member that far off disagree with the
// others'.
const maxSkew = time.Second

func (c *cli) doctorCmd() *cobra.Command {
	var (
		urls    []string
		timeout time.Duration
		token   string
	)
	cmd := &cobra.Command{
		Use:   "doctor --url URL [--url URL]…",
		Short: "Check a ClusterId's floating address on every member (GET /api/floating)",
		Long: `Read GET /api/floating from every member given with --url (each node's HTTP
base, e.g. http://10.0.0.11:8080) and report what needs an operator:

  problem  more than one member holds the address; a foreign MAC, instance
           or NIC holds it (a conflict: otopcua never fights over it); a
           member cannot write its heartbeat to the Config DB; a member does
           not answer
  warning  drift repaired by the last reconcile; members that name different
           owners; an owner that does not hold the address; a member's clock
           more than 1s off the Config DB's (shown for every member)

It exits 1 when it found a problem, 0 otherwise. The nodes answer a Viewer
or above: --token or OTOPCUA_TOKEN.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(urls) == 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("doctor: give every member's HTTP base with --url")}
			}
			reports := map[string]*host.FloatingReport{}
			errs := map[string]error{}
			for _, raw := range urls {
				rep, err := fetchFloating(cmd.Context(), raw, c.apiToken(token), timeout)
				if err != nil {
					errs[raw] = err
					continue
				}
				reports[raw] = rep
			}
			fs := diagnoseFloating(reports, errs)
			printFindings(c.stdout, reports, fs)
			if slices.ContainsFunc(fs, func(f finding) bool { return f.problem }) {
				return &exitError{code: exitFailure, err: fmt.Errorf("doctor: %d problem(s)", countProblems(fs))}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&urls, "url", nil, "a member's HTTP base URL (repeat for every member)")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultHealthTimeout, "bound on each request")
	bindToken(cmd, &token)
	return cmd
}

func fetchFloating(ctx context.Context, raw, token string, timeout time.Duration) (*host.FloatingReport, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url %q: want the node's HTTP base such as http://127.0.0.1:8080", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/floating"
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	setBearer(req, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("did not answer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("no floating address on this node (Redundancy:FloatingAddress:Address unset)")
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("answered %s: %s%s", resp.Status, strings.TrimSpace(string(body)), refusalHint(resp.StatusCode, token))
	}
	var rep host.FloatingReport
	if err := json.Unmarshal(body, &rep); err != nil {
		return nil, fmt.Errorf("not a floating address report: %w", err)
	}
	return &rep, nil
}

// finding is one line of doctor's answer.
type finding struct {
	problem bool
	text    string
}

func countProblems(fs []finding) int {
	n := 0
	for _, f := range fs {
		if f.problem {
			n++
		}
	}
	return n
}

// diagnoseFloating is doctor's pure verdict over the members' reports
// (keyed by the URL they came from) and the members that did not answer.
func diagnoseFloating(reports map[string]*host.FloatingReport, errs map[string]error) []finding {
	var fs []finding
	for _, u := range sortedKeys(errs) {
		fs = append(fs, finding{true, fmt.Sprintf("%s: %v", u, errs[u])})
	}
	var holders []string
	owners := map[string]bool{}
	for _, u := range sortedKeys(reports) {
		r := reports[u]
		if r.Holds {
			holders = append(holders, r.Self)
		}
		if r.Owner != "" {
			owners[r.Owner] = true
		}
		if r.Conflict && r.Observed != nil {
			fs = append(fs, finding{true, fmt.Sprintf("%s: the address is held by a foreign %s (%s): not a member; otopcua will not take it from it", r.Self, r.Observed.Kind, r.Observed.ID)})
		}
		if r.StreamErr != "" {
			fs = append(fs, finding{true, fmt.Sprintf("%s: cannot write its heartbeat to the Config DB: %s", r.Self, r.StreamErr)})
		}
		if r.Drift != "" && !r.Conflict {
			fs = append(fs, finding{false, fmt.Sprintf("%s: last reconcile found drift %q and repaired it", r.Self, r.Drift)})
		}
		if r.LastError != "" {
			fs = append(fs, finding{false, fmt.Sprintf("%s: last action failed: %s", r.Self, r.LastError)})
		}
	}
	if len(holders) > 1 {
		fs = append(fs, finding{true, fmt.Sprintf("%d members hold the address: %s", len(holders), strings.Join(holders, ", "))})
	}
	if len(owners) > 1 {
		fs = append(fs, finding{false, fmt.Sprintf("members name different owners: %s (normal for a moment during a failover)", strings.Join(sortedKeys(owners), ", "))})
	}
	for o := range owners {
		if len(owners) == 1 && len(reports) > 0 && !slices.Contains(holders, o) && len(errs) == 0 {
			fs = append(fs, finding{false, fmt.Sprintf("the owner %s does not hold the address yet", o)})
		}
	}
	for node, skew := range memberSkews(reports) {
		if skew > maxSkew || skew < -maxSkew {
			fs = append(fs, finding{false, fmt.Sprintf("%s: clock %s off the Config DB's (it cannot move the address, but its logs and timestamps disagree with the others')", node, signed(skew))})
		}
	}
	slices.SortStableFunc(fs, func(a, b finding) int {
		if a.problem != b.problem {
			if a.problem {
				return -1
			}
			return 1
		}
		return strings.Compare(a.text, b.text)
	})
	return fs
}

// memberSkews is every member's clock offset from the Config DB's, as the
// reports show it (the first report that lists the member).
func memberSkews(reports map[string]*host.FloatingReport) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, u := range sortedKeys(reports) {
		for _, m := range reports[u].Members {
			if _, ok := out[m.Node]; !ok && !m.Heartbeat.IsZero() {
				out[m.Node] = m.Skew
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func printFindings(w io.Writer, reports map[string]*host.FloatingReport, fs []finding) {
	for _, u := range sortedKeys(reports) {
		r := reports[u]
		fmt.Fprintf(w, "%s  %s  holds=%v owner=%s verb=%s epoch=%d\n", r.Self, r.Address, r.Holds, orNone(r.Owner), r.Verb, r.Epoch)
	}
	skews := memberSkews(reports)
	for _, n := range sortedKeys(skews) {
		fmt.Fprintf(w, "clock %s  %s from the Config DB\n", n, signed(skews[n]))
	}
	if len(fs) == 0 {
		fmt.Fprintln(w, "ok: one holder, no drift, no conflict")
	}
	for _, f := range fs {
		kind := "warning"
		if f.problem {
			kind = "problem"
		}
		fmt.Fprintf(w, "%s: %s\n", kind, f.text)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// signed prints a clock offset with its sign, to the millisecond.
func signed(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
