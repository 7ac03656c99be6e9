package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/admin/auth"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/configdb"
)

// userFlags are the flags every user subcommand takes.
type userFlags struct {
	config  string
	timeout time.Duration
}

func (c *cli) userCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage the users of the admin pages and API",
		Long: `Add, list and remove the users of the admin pages and JSON API, set their
passwords and issue their API tokens. Users live in the Config DB of
--config (default appsettings.json in the working directory; without that
file, the defaults), plus OTOPCUA_ environment overrides, so every node
sharing that Config DB knows them. A fresh install has no user and no
default password.

Passwords are never taken from the command line: on a terminal they are
asked for (twice, without echo); otherwise the first line of stdin is the
password, e.g.  printf '%s\n' "$PW" | otopcua user add ops --role Viewer.
A password is 10 to 72 bytes.

Roles: Administrator (may trigger a failover and read the audit log),
ConfigEditor, Designer, Viewer.

Exit codes: 0 done; 2 invalid input (a bad name, an unknown role, a weak
password, a user that exists or does not); 1 the Config DB failed.`,
	}
	cmd.AddCommand(c.userAddCmd(), c.userListCmd(), c.userPasswdCmd(), c.userRemoveCmd(), c.userTokenCmd())
	return cmd
}

// bind adds --config and --timeout to cmd.
func (f *userFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.config, "config", "c", defaultConfigFile, "appsettings.json naming the Config DB")
	cmd.Flags().DurationVar(&f.timeout, "timeout", defaultDeployTimeout, "bound on reaching and writing the Config DB")
}

// oneName accepts exactly one argument, NAME, and says why a second one
// (a password typed on the command line, where ps and the shell history
// would keep it) is refused.
func oneName(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return usageErr("%s: give the user NAME", cmd.CommandPath())
	case len(args) > 1:
		return usageErr("%s takes one NAME, got %d arguments: a password is never taken from the command line; "+
			"it is asked for on a terminal, or read as one line from stdin", cmd.CommandPath(), len(args))
	}
	if err := configdb.CheckUserName(args[0]); err != nil {
		return usageErr("%s: %s", cmd.CommandPath(), strings.TrimPrefix(err.Error(), "configdb: invalid value: "))
	}
	return nil
}

func (c *cli) userAddCmd() *cobra.Command {
	var f userFlags
	var role string
	cmd := &cobra.Command{
		Use:   "add NAME --role ROLE",
		Short: "Add a user (the password is asked for, or read from stdin)",
		Args:  oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := admin.ParseRole(role)
			if err != nil {
				return usageErr("user add: --role: %v", err)
			}
			hash, err := c.newPasswordHash(args[0], "user add")
			if err != nil {
				return err
			}
			return c.withUserDB(cmd, &f, "user add", func(ctx context.Context, db *configdb.DB) error {
				err := db.AddUser(ctx, configdb.AdminUser{Name: args[0], Role: string(r), PasswordHash: hash})
				if errors.Is(err, configdb.ErrExists) {
					return usageErr("user add: user %q already exists: change its password with otopcua user passwd, or remove it first", args[0])
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(c.stdout, "added user %s (role %s)\n", args[0], r)
				return nil
			})
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&role, "role", "", "Administrator, ConfigEditor, Designer or Viewer (required)")
	return cmd
}

func (c *cli) userListCmd() *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the users: name, role, created, whether an API token exists",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withUserDB(cmd, &f, "user list", func(ctx context.Context, db *configdb.DB) error {
				users, err := db.ListUsers(ctx)
				if err != nil {
					return err
				}
				if len(users) == 0 {
					fmt.Fprintln(c.stdout, "no users: add one with otopcua user add NAME --role Administrator")
					return nil
				}
				w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tROLE\tCREATED\tTOKEN")
				for _, u := range users {
					token := "no"
					if u.TokenHash != "" {
						token = "yes"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", u.Name, u.Role, u.CreatedAt.Format(time.RFC3339), token)
				}
				return w.Flush()
			})
		},
	}
	f.bind(cmd)
	return cmd
}

func (c *cli) userPasswdCmd() *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "passwd NAME",
		Short: "Set a user's password (asked for, or read from stdin)",
		Args:  oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withUserDB(cmd, &f, "user passwd", func(ctx context.Context, db *configdb.DB) error {
				if _, err := db.User(ctx, args[0]); err != nil {
					return noSuchUser("user passwd", args[0], err)
				}
				hash, err := c.newPasswordHash(args[0], "user passwd")
				if err != nil {
					return err
				}
				if err := db.SetUserPassword(ctx, args[0], hash); err != nil {
					return noSuchUser("user passwd", args[0], err)
				}
				fmt.Fprintf(c.stdout, "password of %s changed; its sessions end within a minute\n", args[0])
				return nil
			})
		},
	}
	f.bind(cmd)
	return cmd
}

func (c *cli) userRemoveCmd() *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a user and its API token",
		Args:  oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withUserDB(cmd, &f, "user remove", func(ctx context.Context, db *configdb.DB) error {
				if err := db.RemoveUser(ctx, args[0]); err != nil {
					return noSuchUser("user remove", args[0], err)
				}
				fmt.Fprintf(c.stdout, "removed user %s; its sessions end within a minute\n", args[0])
				return nil
			})
		},
	}
	f.bind(cmd)
	return cmd
}

func (c *cli) userTokenCmd() *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "token NAME",
		Short: "Issue a new API token for a user (replaces the old one)",
		Long: `Issue a new API token for NAME and print it on stdout, once: only its
SHA-256 is stored, so it cannot be shown again. It replaces the user's
earlier token, which stops working at once. Send it as
"Authorization: Bearer TOKEN".`,
		Args: oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withUserDB(cmd, &f, "user token", func(ctx context.Context, db *configdb.DB) error {
				token, hash := auth.NewToken()
				if err := db.SetUserTokenHash(ctx, args[0], hash); err != nil {
					return noSuchUser("user token", args[0], err)
				}
				fmt.Fprintln(c.stdout, token)
				fmt.Fprintf(c.stderr, "new API token for %s: it replaces any earlier one and is shown only this once\n", args[0])
				return nil
			})
		},
	}
	f.bind(cmd)
	return cmd
}

// noSuchUser turns ErrNotFound from what's action on user name into a
// usage error (exit 2); any other error is returned as it is.
func noSuchUser(what, name string, err error) error {
	if errors.Is(err, configdb.ErrNotFound) {
		return usageErr("%s: no user %q (otopcua user list shows them)", what, name)
	}
	return err
}

// withUserDB loads the configuration, opens and migrates its Config DB
// under --timeout and runs fn. An invalid configuration is exit 2; a
// Config DB failure (also one fn returns) is exit 1; an exitError from fn
// keeps its code.
func (c *cli) withUserDB(cmd *cobra.Command, f *userFlags, what string, fn func(context.Context, *configdb.DB) error) error {
	cfg, err := config.Load(configFile(cmd, f.config), c.environ)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	dbFailed := func(err error) error {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: Config DB (ConfigDb:Provider %s): %w", what, cfg.ConfigDb.Provider, err)}
	}
	db, err := configdb.Open(ctx, cfg.ConfigDb.Provider, cfg.ConfigDb.ConnectionString)
	if err != nil {
		return dbFailed(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return dbFailed(err)
	}
	err = fn(ctx, db)
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return dbFailed(err)
}

// maxPasswordLine bounds the line read from stdin.
const maxPasswordLine = 1024

// newPasswordHash reads the new password of name (twice on a terminal),
// checks the password rules and hashes it. Every failure is exit 2.
func (c *cli) newPasswordHash(name, what string) (string, error) {
	pw, err := readPassword(os.Stdin, c.stderr, name)
	if err != nil {
		return "", usageErr("%s: %v", what, err)
	}
	if err := auth.CheckPasswordRules(pw); err != nil {
		return "", usageErr("%s: %v", what, err)
	}
	hash, err := auth.HashPassword(pw, auth.DefaultBcryptCost)
	if err != nil {
		return "", usageErr("%s: %v", what, err)
	}
	return hash, nil
}

// readPassword asks for the password on a terminal, without echo and
// twice, or reads the first line of a non-terminal stdin.
func readPassword(in *os.File, prompt io.Writer, name string) (string, error) {
	fd := int(in.Fd())
	if !term.IsTerminal(fd) {
		return readPasswordLine(in)
	}
	fmt.Fprintf(prompt, "New password for %s: ", name)
	first, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	fmt.Fprintf(prompt, "Repeat it: ")
	second, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	if string(first) != string(second) {
		return "", errors.New("the two passwords differ; nothing was changed")
	}
	return string(first), nil
}

// readPasswordLine reads one line (without its line ending) of at most
// maxPasswordLine bytes.
func readPasswordLine(in io.Reader) (string, error) {
	r := bufio.NewReaderSize(io.LimitReader(in, maxPasswordLine+1), maxPasswordLine+1)
	line, err := r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	if len(line) > maxPasswordLine {
		return "", fmt.Errorf("the password line on stdin is longer than %d bytes", maxPasswordLine)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", errors.New("no password: stdin is not a terminal and its first line is empty; " +
			"pipe the password as one line, e.g. printf '%s\\n' \"$PW\" | otopcua user ...")
	}
	return line, nil
}
