package procs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes cfg as appsettings.json in a new temp dir and returns
// the file.
func writeConfig(t testing.TB, cfg map[string]any) string {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "appsettings.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// User runs `otopcua user ARGS... --config F` with cfg (a node's
// configuration: the command reads its ConfigDb section) written to F and
// stdin as the command's standard input (the password, for add and
// passwd). It returns standard output and fails the test when the command
// fails.
func User(t testing.TB, cfg map[string]any, stdin string, args ...string) string {
	t.Helper()
	return userWith(t, Binary(t), cfg, stdin, args...)
}

// userWith is User run from the otopcua binary bin.
func userWith(t testing.TB, bin string, cfg map[string]any, stdin string, args ...string) string {
	t.Helper()
	argv := append(append([]string{"user"}, args...), "--config", writeConfig(t, cfg))
	cmd := exec.Command(bin, argv...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("otopcua %s: %v\n%s%s", strings.Join(argv, " "), err, out, stderr.String())
	}
	return string(out)
}

// AddUser creates the admin user name with role and password through
// `otopcua user add` and returns an API token for it from
// `otopcua user token`.
func AddUser(t testing.TB, cfg map[string]any, name, role, password string) (token string) {
	t.Helper()
	return AddUserWith(t, Binary(t), cfg, name, role, password)
}

// AddUserWith is AddUser run from the otopcua binary bin (PlainBinary, for
// a harness that runs the binary as shipped and should not build another).
func AddUserWith(t testing.TB, bin string, cfg map[string]any, name, role, password string) (token string) {
	t.Helper()
	userWith(t, bin, cfg, password+"\n", "add", name, "--role", role)
	for _, f := range strings.Fields(userWith(t, bin, cfg, "", "token", name)) {
		if strings.HasPrefix(f, "otk_") {
			return f
		}
	}
	t.Fatalf("otopcua user token %s printed no token", name)
	return ""
}
