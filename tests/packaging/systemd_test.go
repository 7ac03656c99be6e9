package packaging_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/host"
	"github.com/otopcua/otopcua/tests/procs"
)

const sdUnitPath = "packaging/systemd/otopcua.service"

// sdEntry is one Key=Value line of a unit file.
type sdEntry struct {
	Section, Key, Value string
	Line                int
}

// sdParse reads a systemd unit file: [Section] headers, Key=Value lines,
// '#' and ';' comments, trailing-backslash continuations.
func sdParse(text string) ([]sdEntry, error) {
	var out []sdEntry
	section := ""
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		start := i + 1
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
		}
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("line %d: malformed section header %q", start, line)
			}
			section = line[1 : len(line)-1]
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			return nil, fmt.Errorf("line %d: %q is no Key=Value inside a section", start, line)
		}
		out = append(out, sdEntry{section, strings.TrimSpace(k), strings.TrimSpace(v), start})
	}
	return out, nil
}

// sdUnit is the parsed unit, looked up by section and key.
type sdUnit []sdEntry

// get returns the key's values in the section, in order.
func (u sdUnit) get(section, key string) []string {
	var vs []string
	for _, e := range u {
		if e.Section == section && e.Key == key {
			vs = append(vs, e.Value)
		}
	}
	return vs
}

func sdLoad(t *testing.T) (sdUnit, string) {
	t.Helper()
	text := dfRead(t, filepath.Join(procs.RepoRoot(), sdUnitPath))
	es, err := sdParse(text)
	if err != nil {
		t.Fatalf("%s: %v", sdUnitPath, err)
	}
	return es, text
}

const sdExecStart = "/usr/local/bin/otopcua host --config /etc/otopcua/appsettings.json"

// TestSystemdUnitKeys holds the unit to its settings; it runs whether or
// not systemd-analyze is installed.
func TestSystemdUnitKeys(t *testing.T) {
	u, _ := sdLoad(t)
	sections := map[string]bool{}
	seen := map[string]int{}
	for _, e := range u {
		sections[e.Section] = true
		seen[e.Section+"/"+e.Key]++
	}
	for s := range sections {
		if s != "Unit" && s != "Service" && s != "Install" {
			t.Errorf("unexpected section [%s]", s)
		}
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%s is set %d times", k, n)
		}
	}
	want := []struct{ section, key, value string }{
		{"Unit", "After", "network-online.target"},
		{"Unit", "Wants", "network-online.target"},
		// A node downed by its cluster exits 3 and must always come back:
		// no start rate limit ends the restarts.
		{"Unit", "StartLimitIntervalSec", "0"},
		{"Service", "Type", "simple"},
		{"Service", "User", "otopcua"},
		{"Service", "Group", "otopcua"},
		{"Service", "ExecStart", sdExecStart},
		{"Service", "WorkingDirectory", "/var/lib/otopcua"},
		{"Service", "StateDirectory", "otopcua"},
		{"Service", "ConfigurationDirectory", "otopcua"},
		{"Service", "Restart", "always"},
		{"Service", "RestartSec", "2s"},
		{"Service", "KillSignal", "SIGTERM"},
		{"Service", "TimeoutStopSec", "30s"},
		{"Service", "LimitNOFILE", "65536"},
		{"Service", "NoNewPrivileges", "yes"},
		{"Service", "ProtectSystem", "strict"},
		{"Service", "ProtectHome", "yes"},
		{"Service", "PrivateTmp", "yes"},
		{"Service", "PrivateDevices", "yes"},
		{"Service", "ProtectKernelTunables", "yes"},
		{"Service", "ProtectKernelModules", "yes"},
		{"Service", "ProtectKernelLogs", "yes"},
		{"Service", "ProtectControlGroups", "yes"},
		{"Service", "RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"},
		{"Service", "RestrictNamespaces", "yes"},
		{"Service", "LockPersonality", "yes"},
		{"Service", "MemoryDenyWriteExecute", "yes"},
		{"Service", "SystemCallArchitectures", "native"},
		{"Service", "CapabilityBoundingSet", ""}, // empty: no capability (every port is above 1023)
		{"Service", "AmbientCapabilities", ""},
		{"Install", "WantedBy", "multi-user.target"},
	}
	for _, w := range want {
		got := u.get(w.section, w.key)
		if len(got) != 1 || got[0] != w.value {
			t.Errorf("[%s] %s = %q, want %q", w.section, w.key, got, w.value)
		}
	}
	for _, key := range []string{"Description", "Documentation"} {
		if v := u.get("Unit", key); len(v) != 1 || v[0] == "" {
			t.Errorf("[Unit] %s = %q, want one non-empty value", key, v)
		}
	}
	if user := u.get("Service", "User"); len(user) == 1 && (user[0] == "root" || user[0] == "0") {
		t.Errorf("User=%s: the node must not run as root", user[0])
	}
	// Nothing may stop the restarts of exit code 3 (or any other).
	for _, key := range []string{"RestartPreventExitStatus", "SuccessExitStatus"} {
		if v := u.get("Service", key); len(v) > 0 {
			t.Errorf("[Service] %s=%q: the node must always be restarted", key, v)
		}
	}
	if v := u.get("Unit", "StartLimitAction"); len(v) > 0 && v[0] != "none" {
		t.Errorf("[Unit] StartLimitAction=%q: the node must always be restarted", v)
	}
	if v := u.get("Service", "StartLimitIntervalSec"); len(v) > 0 {
		t.Errorf("[Service] StartLimitIntervalSec=%q: it belongs in [Unit]", v)
	}
	// The stop timeout leaves room for the graceful leave and the hand-over.
	if v := u.get("Service", "TimeoutStopSec"); len(v) == 1 {
		if d, err := time.ParseDuration(v[0]); err != nil || d < 2*host.LeaveTimeout {
			t.Errorf("TimeoutStopSec=%s, want at least twice host.LeaveTimeout (%v)", v[0], host.LeaveTimeout)
		}
	}
}

// TestSystemdSysusers: the sysusers.d line creates the unit's user, a
// system user with the state directory as its home.
func TestSystemdSysusers(t *testing.T) {
	u, _ := sdLoad(t)
	var lines []string
	for _, l := range strings.Split(dfRead(t, filepath.Join(procs.RepoRoot(), "packaging/systemd/otopcua.sysusers.conf")), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("want one sysusers line, got %q", lines)
	}
	f := sdFields(lines[0])
	if len(f) < 5 || f[0] != "u" || f[1] != u.get("Service", "User")[0] || f[4] != u.get("Service", "WorkingDirectory")[0] {
		t.Errorf("sysusers line %q: want u <User> - \"…\" <WorkingDirectory>", lines[0])
	}
}

// sdFields splits on blanks, keeping "quoted words" together.
func sdFields(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return append(out, s)
			}
			out = append(out, s[1:end+1])
			s = s[end+2:]
			continue
		}
		word, rest, _ := strings.Cut(s, " ")
		out = append(out, word)
		s = rest
	}
	return out
}

// TestSystemdAnalyzeVerify runs `systemd-analyze verify` on a copy of the
// unit. verify checks that ExecStart's program exists and is executable,
// so the copy runs a freshly built otopcua instead of
// /usr/local/bin/otopcua: that path is the only thing rewritten. verify
// does not check that User= exists (it reads no user database), so
// User=otopcua stays as it is, and it needs no running systemd. verify
// exits 0 on unknown keys and unparsable values (it only prints
// warnings), so any output about the unit counts as a failure; the
// sub-tests prove on broken copies that such errors are caught.
//
// Without systemd-analyze (Debian package systemd) this test fails;
// TestSystemdUnitKeys still runs.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze not found (Debian: apt-get install systemd): the unit cannot be verified; scripts/test.sh installs it")
	}
	_, text := sdLoad(t)
	if strings.Count(text, sdExecStart) != 1 {
		t.Fatalf("the unit does not hold ExecStart=%s once", sdExecStart)
	}
	bin := procs.Binary(t)
	good := strings.Replace(text, "ExecStart=/usr/local/bin/otopcua ", "ExecStart="+bin+" ", 1)
	if good == text {
		t.Fatal("ExecStart was not rewritten")
	}

	if out, err := sdVerify(t, analyze, good); err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}

	for _, tc := range []struct{ name, from, to string }{
		{"misspelled key", "\nRestart=always", "\nRestrat=always"},
		{"invalid value", "\nRestart=always", "\nRestart=sometimes"},
		{"misspelled section", "\n[Service]", "\n[Servise]"},
		{"missing program", "ExecStart=" + bin, "ExecStart=" + bin + ".missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := strings.Replace(good, tc.from, tc.to, 1)
			if broken == good {
				t.Fatalf("%q not found in the unit", tc.from)
			}
			out, err := sdVerify(t, analyze, broken)
			if err == nil {
				t.Fatalf("verify accepted a unit with %s:\n%s", tc.name, out)
			}
			t.Logf("rejected as expected: %v", err)
		})
	}
}

// sdVerify writes unit as otopcua.service in a temporary folder and runs
// verify on it. It fails on a non-zero exit or on any output line naming
// the unit; other lines (about the system's own units) are only logged.
func sdVerify(t *testing.T, analyze, unit string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "otopcua.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(analyze, "verify", "--man=no", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0", "SYSTEMD_PAGER=")
	runErr := cmd.Run()
	var ours []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		switch {
		case line == "":
		case strings.Contains(line, path) || strings.Contains(line, "otopcua.service"):
			ours = append(ours, line)
		default:
			t.Logf("systemd-analyze (not about the unit): %s", line)
		}
	}
	switch {
	case runErr != nil:
		return out.String(), fmt.Errorf("exit: %v", runErr)
	case len(ours) > 0:
		return out.String(), fmt.Errorf("warnings about the unit: %q", ours)
	}
	return out.String(), nil
}
