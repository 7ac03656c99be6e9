package main

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/otopcua/otopcua/admin/auth"
	"github.com/otopcua/otopcua/configdb"
)

// These tests run the built binary as `otopcua user …` against an SQLite
// Config DB file named by an appsettings.json (newDeployFixture), with
// stdin a pipe (so the password is read as one line).

// runUser runs `otopcua user ARGS…` with stdin as its standard input.
func runUser(t *testing.T, stdin string, args ...string) binaryRun {
	t.Helper()
	return runCommand(t, cleanEnv(), stdin, append([]string{"user"}, args...)...)
}

func (r binaryRun) want(t *testing.T, code int, stderrHas string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.stderr, stderrHas) {
		t.Fatalf("exit %d, want %d with stderr containing %q\nstdout:\n%s\nstderr:\n%s", r.code, code, stderrHas, r.stdout, r.stderr)
	}
}

// openFixtureDB opens the fixture's Config DB for the test's own checks.
func openFixtureDB(t *testing.T, f *deployFixture) *configdb.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := configdb.Open(ctx, "sqlite", "file:"+f.dbFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func storedUser(t *testing.T, f *deployFixture, name string) configdb.AdminUser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := openFixtureDB(t, f).User(ctx, name)
	if err != nil {
		t.Fatalf("user %s in the Config DB: %v", name, err)
	}
	return u
}

func TestUserLifecycle(t *testing.T) {
	f := newDeployFixture(t)
	cfg := "--config=" + f.config

	runUser(t, "", "list", cfg).wantOut(t, "no users: add one with otopcua user add NAME --role Administrator")

	const pw = "first password 1"
	r := runUser(t, pw+"\n", "add", "ops", "--role", "Administrator", cfg)
	r.want(t, 0, "")
	r.wantOut(t, "added user ops (role Administrator)")
	u := storedUser(t, f, "ops")
	if u.Role != "Administrator" || bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(pw)) != nil {
		t.Fatalf("stored %+v: want role Administrator and the bcrypt hash of the piped password", u)
	}
	if c, _ := bcrypt.Cost([]byte(u.PasswordHash)); c != auth.DefaultBcryptCost {
		t.Fatalf("bcrypt cost %d, want %d", c, auth.DefaultBcryptCost)
	}
	// A password line without a newline, with CRLF: both work.
	runUser(t, "viewer password", "add", "view.er@plant", "--role", "Viewer", cfg).want(t, 0, "")
	runUser(t, "crlf password\r\n", "add", "editor", "--role", "ConfigEditor", cfg).want(t, 0, "")
	if u := storedUser(t, f, "editor"); bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte("crlf password")) != nil {
		t.Fatal("the CR of a CRLF line became part of the password")
	}

	// Duplicate add refused, the first user kept.
	runUser(t, "another password\n", "add", "ops", "--role", "Viewer", cfg).want(t, 2, `user "ops" already exists`)
	if u := storedUser(t, f, "ops"); u.Role != "Administrator" {
		t.Fatalf("the refused duplicate changed ops: %+v", u)
	}

	// token: printed once on stdout, only its hash stored; a new one
	// replaces it.
	r = runUser(t, "", "token", "ops", cfg)
	r.want(t, 0, "replaces any earlier one and is shown only this once")
	tok1 := strings.TrimSpace(r.stdout)
	if !regexp.MustCompile(`^otk_[A-Za-z0-9_-]{43}$`).MatchString(tok1) {
		t.Fatalf("token output %q", r.stdout)
	}
	if u := storedUser(t, f, "ops"); u.TokenHash != auth.TokenHash(tok1) {
		t.Fatalf("stored token hash %q, want the SHA-256 of the printed token", u.TokenHash)
	}
	tok2 := strings.TrimSpace(runUser(t, "", "token", "ops", cfg).stdout)
	if tok2 == tok1 || storedUser(t, f, "ops").TokenHash != auth.TokenHash(tok2) {
		t.Fatal("a second token did not replace the first")
	}

	// list: name, role, created, token yes/no, sorted; never a hash.
	r = runUser(t, "", "list", cfg)
	r.want(t, 0, "")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("list:\n%s", r.stdout)
	}
	for i, want := range []string{`^editor\s+ConfigEditor\s+\d{4}-\d\d-\d\dT\S+Z\s+no$`, `^ops\s+Administrator\s+\S+\s+yes$`, `^view\.er@plant\s+Viewer\s+\S+\s+no$`} {
		if !regexp.MustCompile(want).MatchString(lines[i+1]) {
			t.Errorf("list line %d %q does not match %s", i+1, lines[i+1], want)
		}
	}
	if strings.Contains(r.stdout, "$2a$") || strings.Contains(r.stdout, auth.TokenHash(tok2)) || strings.Contains(r.stdout, tok2) {
		t.Fatalf("list shows a hash or a token:\n%s", r.stdout)
	}

	// passwd: the new password works, the old does not, the token stays.
	runUser(t, "second password 2\n", "passwd", "ops", cfg).want(t, 0, "")
	u = storedUser(t, f, "ops")
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte("second password 2")) != nil ||
		bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(pw)) == nil || u.TokenHash != auth.TokenHash(tok2) {
		t.Fatalf("after passwd: %+v", u)
	}
	runUser(t, "third password 3\n", "passwd", "nobody", cfg).want(t, 2, `no user "nobody"`)

	// remove, twice.
	runUser(t, "", "remove", "ops", cfg).want(t, 0, "")
	runUser(t, "", "remove", "ops", cfg).want(t, 2, `no user "ops"`)
	runUser(t, "", "token", "ops", cfg).want(t, 2, `no user "ops"`)
	if _, err := openFixtureDB(t, f).User(context.Background(), "ops"); !errors.Is(err, configdb.ErrNotFound) {
		t.Fatalf("ops after remove: %v", err)
	}
}

func (r binaryRun) wantOut(t *testing.T, has string) {
	t.Helper()
	if r.code != 0 || !strings.Contains(r.stdout, has) {
		t.Fatalf("exit %d, want 0 with stdout containing %q\nstdout:\n%s\nstderr:\n%s", r.code, has, r.stdout, r.stderr)
	}
}

// TestUserInvalidInput: every refusal is exit 2 with a message naming what
// is accepted, and stores nothing.
func TestUserInvalidInput(t *testing.T) {
	f := newDeployFixture(t)
	cfg := "--config=" + f.config
	for _, tc := range []struct {
		name, stdin string
		args        []string
		stderr      string
	}{
		{"unknown role", "good password\n", []string{"add", "ops", "--role", "Superuser"},
			`unknown role "Superuser": accepted are Administrator, ConfigEditor, Operator, Designer, Viewer`},
		{"no role", "good password\n", []string{"add", "ops"}, "accepted are Administrator"},
		{"password as an argument", "", []string{"add", "ops", "s3cret-password", "--role", "Viewer"},
			"a password is never taken from the command line"},
		{"password as an argument to passwd", "", []string{"passwd", "ops", "s3cret-password"},
			"a password is never taken from the command line"},
		{"bad name", "good password\n", []string{"add", "ops team", "--role", "Viewer"},
			`user name "ops team": accepted are 1 to 64 characters of A-Z, a-z, 0-9 and . _ @ -`},
		{"weak password", "short\n", []string{"add", "ops", "--role", "Viewer"},
			"it is 5 bytes long: accepted are 10 to 72 bytes"},
		{"too long a password", strings.Repeat("x", 73) + "\n", []string{"add", "ops", "--role", "Viewer"},
			"accepted are 10 to 72 bytes"},
		{"empty stdin", "", []string{"add", "ops", "--role", "Viewer"}, "no password: stdin is not a terminal"},
		{"no name", "", []string{"token"}, "give the user NAME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runUser(t, tc.stdin, append(tc.args, cfg)...)
			r.want(t, 2, tc.stderr)
			if strings.Contains(r.stderr+r.stdout, "s3cret-password") {
				t.Fatalf("the refused password was echoed:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
	db := openFixtureDB(t, f)
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, err := db.CountUsers(context.Background()); err != nil || n != 0 {
		t.Fatalf("%d users stored after refusals only (%v)", n, err)
	}
}

// TestUserConfigDBFailure: a Config DB that cannot be opened is exit 1.
func TestUserConfigDBFailure(t *testing.T) {
	f := newDeployFixture(t)
	f.writeConfig(t, "site-a", "file:"+f.dir+"/missing/dir/config.db")
	runUser(t, "", "list", "--config="+f.config).want(t, 1, "user list: Config DB (ConfigDb:Provider sqlite)")
}
