package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/opcua/client"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// session is what the client commands use of *client.Client. Tests replace
// dialClient with a fake.
type session interface {
	Read(ctx context.Context, nodes ...*ua.NodeID) ([]*ua.DataValue, error)
	Write(ctx context.Context, values ...*ua.WriteValue) ([]ua.StatusCode, error)
	Browse(ctx context.Context, node *ua.NodeID) ([]*ua.ReferenceDescription, error)
	HistoryRead(ctx context.Context, node *ua.NodeID, details any, fn func(*ua.DataValue) bool) (ua.StatusCode, error)
	Redundancy(ctx context.Context) (client.RedundancyInfo, error)
	Active() client.ServerRef
	// Subscribe returns the subscription's notification channel, closed
	// when the session is closed.
	// sampling is the sampling interval; 0 asks for every change.
	Subscribe(ctx context.Context, nodes []*ua.NodeID, interval, sampling time.Duration) (<-chan client.Notification, error)
	Close() error
}

// libSession adapts *client.Client to session.
type libSession struct{ *client.Client }

func (s libSession) Subscribe(ctx context.Context, nodes []*ua.NodeID, interval, sampling time.Duration) (<-chan client.Notification, error) {
	sub, err := s.Client.SubscribeSampled(ctx, nodes, interval, sampling)
	if err != nil {
		return nil, err
	}
	return sub.Notifications(), nil
}

// dialClient connects to the redundant set; a package variable so that
// tests can run the commands against a fake.
var dialClient = func(ctx context.Context, opts client.Options) (session, error) {
	c, err := client.Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	return libSession{c}, nil
}

// clientFlags are the persistent flags of "otopcua client".
type clientFlags struct {
	url         string
	failover    []string
	timeout     time.Duration
	preferHold  time.Duration
	lostAfter   time.Duration
	json        bool
	noDiscovery bool

	sec  securityFlags // client_security.go
	user string
	// password returns the password of user (see clientPassword).
	password func(user string) (string, error)
}

// durationFlag is a pflag.Value that takes a Go duration ("10s") or a .NET
// TimeSpan ("00:00:10"), as config.ParseDuration does.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return "0" // pflag shows no default for "0"
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := config.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

func (durationFlag) Type() string { return "duration" }

func (c *cli) clientCmd() *cobra.Command {
	g := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Read, write, browse and subscribe on a redundant OPC UA server set",
		Long: `An OPC UA client that follows a non-transparent redundant server set: it
connects to the server with the highest ServiceLevel among the URLs given
(-u, -F) and the servers they name, and moves to another server when the
active one fails or another has held a higher ServiceLevel for --prefer-hold.
Security None by default; --security Policy:Mode with --cert/--key and
--trust-server or --trust-dir for signed and encrypted endpoints.
--user NAME activates the sessions as an admin user (the password from
OTOPCUA_PASSWORD, or asked for on a terminal; never from the command
line), encrypted for each server. See
docs/client.md.

Exit codes: 0 ok, 1 runtime error (no server reachable, a request failed, a
read or write result that is not Good), 2 usage error.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for \"otopcua client\"", args[0])
			}
			return cmd.Help()
		},
	}
	f := cmd.PersistentFlags()
	durationVar := func(p *time.Duration, def time.Duration, name, usage string) {
		*p = def
		f.Var(durationFlag{p}, name, usage)
	}
	f.StringVarP(&g.url, "url", "u", "", "one endpoint of the set (opc.tcp://host:port)")
	f.StringSliceVarP(&g.failover, "failover-urls", "F", nil, "comma-separated endpoints of the redundant set")
	addSecurityFlags(f, &g.sec, c.environ, c.stderr)
	durationVar(&g.timeout, client.DefaultTimeout, "timeout", "connect and per-request timeout (10s or 00:00:10)")
	f.BoolVar(&g.json, "json", false, "machine output: one JSON object per line")
	durationVar(&g.preferHold, client.DefaultPreferHold, "prefer-hold", "how long another server must hold a higher ServiceLevel before the client moves to it")
	durationVar(&g.lostAfter, client.DefaultLostAfter, "lost-after", "a server silent for this long is lost")
	f.BoolVar(&g.noDiscovery, "no-discovery", false, "use only the given URLs; do not follow ServerArray, ServerUriArray or FindServers")
	f.StringVar(&g.user, "user", "", "activate the sessions as this user; the password from $"+passwordEnv+" or a prompt on a terminal")
	g.password = func(user string) (string, error) { return clientPassword(c.environ, os.Stdin, c.stderr, user) }
	cmd.AddCommand(c.clientReadCmd(g), c.clientWriteCmd(g), c.clientBrowseCmd(g),
		c.clientSubscribeCmd(g), c.clientRedundancyCmd(g), c.clientHistoryCmd(g))
	return cmd
}

// usageErr is an exit-2 error.
func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// failure is an exit-1 error.
func failure(err error) error { return &exitError{code: exitFailure, err: err} }

// serverURLs is -u first, then the -F entries, duplicates and blanks
// dropped. Every URL must start with opc.tcp://.
func serverURLs(url string, failover []string) ([]string, error) {
	var out []string
	for _, u := range append([]string{url}, failover...) {
		u = strings.TrimSpace(u)
		if u == "" || contains(out, u) {
			continue
		}
		if !strings.HasPrefix(strings.ToLower(u), "opc.tcp://") {
			return nil, fmt.Errorf("%q is not an opc.tcp:// URL", u)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("give a server: -u URL or -F URL1,URL2")
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// options checks the persistent flags and turns them into client.Options.
func (g *clientFlags) options() (client.Options, error) {
	urls, err := serverURLs(g.url, g.failover)
	if err != nil {
		return client.Options{}, usageErr("%v", err)
	}
	sec, err := g.sec.options()
	if err != nil {
		return client.Options{}, err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"timeout", g.timeout}, {"prefer-hold", g.preferHold}, {"lost-after", g.lostAfter}} {
		if d.v <= 0 {
			return client.Options{}, usageErr("--%s %s: must be positive", d.name, d.v)
		}
	}
	var user *uaclient.UserName
	if g.user != "" {
		pw, err := g.password(g.user)
		if err != nil {
			return client.Options{}, usageErr("--user %s: %v", g.user, err)
		}
		user = &uaclient.UserName{Name: g.user, Password: pw}
	}
	return client.Options{
		User:            user,
		URLs:            urls,
		PreferHold:      g.preferHold,
		Timeout:         g.timeout,
		LostAfter:       g.lostAfter,
		NoDiscovery:     g.noDiscovery,
		ApplicationName: "otopcua client",
		Security:        sec,
	}, nil
}

// withSession dials the set described by opts, runs fn and closes the
// session. SIGINT and SIGTERM cancel fn's context. An error of fn that is
// not an exitError is a runtime error (exit 1).
func withSession(parent context.Context, opts client.Options, fn func(ctx context.Context, s session) error) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := dialClient(ctx, opts)
	if err != nil {
		return failure(err)
	}
	defer s.Close()
	err = fn(ctx, s)
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		return failure(describe(err))
	}
	return err
}

// describe names a bare status code error the OPC UA way
// ("BadNodeIdUnknown: The node id refers to …").
func describe(err error) error {
	sc, ok := err.(ua.StatusCode)
	if !ok {
		return err
	}
	if d, ok := ua.StatusCodes[sc&0xFFFF0000]; ok && d.Text != "" {
		return fmt.Errorf("%s: %s", statusName(sc), d.Text)
	}
	return errors.New(statusName(sc))
}

// parseNodes parses command-line NodeIds; a bad one is a usage error.
func parseNodes(args []string) ([]*ua.NodeID, error) {
	nodes := make([]*ua.NodeID, 0, len(args))
	for _, a := range args {
		n, err := parseNodeID(a)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// passwordEnv is the environment variable --user takes its password from.
const passwordEnv = "OTOPCUA_PASSWORD"

// clientPassword is user's password: $OTOPCUA_PASSWORD when set, else
// asked for without echo when in is a terminal. A password is never read
// from the command line, nor from a non-terminal stdin (that is the
// commands' own input).
func clientPassword(environ []string, in *os.File, prompt io.Writer, user string) (string, error) {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, passwordEnv+"="); ok {
			if v == "" {
				return "", errors.New(passwordEnv + " is set but empty")
			}
			return v, nil
		}
	}
	fd := int(in.Fd())
	if !term.IsTerminal(fd) {
		return "", errors.New("no password: set " + passwordEnv + ", or run on a terminal to be asked for it")
	}
	fmt.Fprintf(prompt, "Password for %s: ", user)
	pw, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	if len(pw) == 0 {
		return "", errors.New("no password typed")
	}
	return string(pw), nil
}
