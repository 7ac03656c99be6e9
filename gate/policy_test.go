package gate

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// docRow is one row of the table in the package doc.
type docRow struct {
	line                                  string
	role, licence, member, alone, drivers string
	woken                                 string
	allow                                 bool
	text, label                           string
}

// docTable reads the table from doc.go: the policy's documentation is the
// test's expectation, so the two cannot drift apart.
func docTable(t *testing.T) []docRow {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	cols := regexp.MustCompile(`\s{2,}`)
	var rows []docRow
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		body, ok := strings.CutPrefix(line, "//\t")
		switch {
		case ok && strings.HasPrefix(body, "role "):
			in = true
			continue
		case !ok:
			in = false
		}
		if !in {
			continue
		}
		f := cols.Split(strings.TrimSpace(body), -1)
		if len(f) != 9 || f[6] != "→" {
			t.Fatalf("doc.go table row %q: %d columns, want 9", body, len(f))
		}
		text, label, ok := strings.Cut(f[8], " / ")
		if !ok {
			t.Fatalf("doc.go table row %q: reason %q is not String / Label", body, f[7])
		}
		if label == "—" {
			label = ""
		}
		rows = append(rows, docRow{line: body, role: f[0], licence: f[1], member: f[2], alone: f[3], drivers: f[4],
			woken: f[5], allow: f[7] == "allow", text: text, label: label})
	}
	if len(rows) == 0 {
		t.Fatal("no table in doc.go")
	}
	return rows
}

func (r docRow) matches(in Input) bool {
	yesNo := func(col string, v bool) bool { return col == "any" || (col == "yes") == v }
	drivers := r.drivers == "any" || (r.drivers == "0 or 1" && in.Drivers <= 1) || (r.drivers == "2 or more" && in.Drivers >= 2)
	licence := r.licence == "any" || strings.Contains(r.licence, licenceName(in.Licence))
	role := r.role == "any" || r.role == in.Role.String()
	return role && licence && yesNo(r.member, in.Member) && yesNo(r.alone, in.Alone) && drivers && yesNo(r.woken, in.Woken)
}

func licenceName(l Licence) string {
	return map[Licence]string{Licensed: "Licensed", Holding: "Holding", Unlicensed: "Unlicensed"}[l]
}

// TestDecideFollowsTheDocumentedTable: every site × role × membership
// (member or not, alone or not, 0–3 driver members) × licence × woken input
// matches exactly one row of the package doc's table, and Decide answers
// that row's verdict, reason text and metric label, with the snapshot's
// epoch when it allows and 0 when it denies.
func TestDecideFollowsTheDocumentedTable(t *testing.T) {
	rows := docTable(t)
	used := map[string]int{}
	n := 0
	for _, site := range Sites() {
		for _, role := range []Role{RoleUnknown, RolePrimary, RoleSecondary, RoleDetached, RoleFencedPrimary} {
			for _, member := range []bool{false, true} {
				for _, alone := range []bool{false, true} {
					for drivers := range 4 {
						for _, lw := range licenceWoken() {
							in := Input{Site: site, Role: role, Drivers: drivers, Member: member, Alone: alone, Licence: lw.lic, Woken: lw.woken, Epoch: 7}
							var match []docRow
							for _, r := range rows {
								if r.matches(in) {
									match = append(match, r)
								}
							}
							if len(match) != 1 {
								t.Fatalf("%+v matches %d rows of the documented table: %v", in, len(match), match)
							}
							row := match[0]
							used[row.line]++
							n++
							d := Decide(in)
							wantEpoch := uint64(0)
							if row.allow {
								wantEpoch = 7
							}
							if d.Allow != row.allow || d.Reason.String() != row.text || d.Reason.Label() != row.label || d.Epoch != wantEpoch {
								t.Errorf("Decide(%+v) = %+v (%q / %q), want row %q", in, d, d.Reason.String(), d.Reason.Label(), row.line)
							}
						}
					}
				}
			}
		}
	}
	for _, r := range rows {
		if used[r.line] == 0 {
			t.Errorf("documented row %q is reached by no input", r.line)
		}
	}
	if want := len(Sites()) * 5 * 2 * 2 * 4 * 3 * 2; n != want {
		t.Fatalf("%d inputs checked, want %d", n, want)
	}
}

type lw struct {
	lic   Licence
	woken bool
}

// licenceWoken is every licence with and without the woken fence.
func licenceWoken() []lw {
	var out []lw
	for _, l := range []Licence{Licensed, Holding, Unlicensed} {
		out = append(out, lw{l, false}, lw{l, true})
	}
	return out
}

// TestDecideWokenDeniesEverySite: a process woken from a pause is denied
// at every site whatever its role, licence and membership say — the
// Primary of a snapshot taken before the freeze included — with the
// reason "woken", and services again once the fence is down.
func TestDecideWokenDeniesEverySite(t *testing.T) {
	for _, site := range Sites() {
		for _, in := range []Input{
			{Role: RolePrimary, Member: true, Drivers: 2, Epoch: 4},
			{Role: RoleUnknown, Member: true, Drivers: 1},
			{Role: RoleUnknown, Alone: true},
		} {
			in.Site, in.Woken = site, true
			d := Decide(in)
			if d.Allow || d.Reason != DeniedWoken || d.Reason.Label() != "woken" || d.Epoch != 0 {
				t.Errorf("%s, woken %+v: %+v", site, in, d)
			}
			in.Woken = false
			if d := Decide(in); !d.Allow {
				t.Errorf("%s, fence down %+v: %+v", site, in, d)
			}
		}
	}
}

// TestDecideRestartIntoARunningPair names the rows the issue is about: a
// node that booted from its cache and has not joined denies at every site
// while a driver peer may exist; a single-node set services.
func TestDecideRestartIntoARunningPair(t *testing.T) {
	for _, site := range Sites() {
		d := Decide(Input{Site: site, Role: RoleUnknown, Epoch: 3})
		if d.Allow || d.Reason != DeniedNotMember || d.Reason.Label() != "not-member" || d.Epoch != 0 {
			t.Errorf("%s, not a member of a pair: %+v", site, d)
		}
		if d := Decide(Input{Site: site, Role: RoleUnknown, Alone: true}); !d.Allow {
			t.Errorf("%s, single-node set before it formed: %+v", site, d)
		}
		if d := Decide(Input{Site: site, Role: RoleUnknown, Member: true, Drivers: 1}); !d.Allow {
			t.Errorf("%s, lone driver member: %+v", site, d)
		}
	}
}

// TestLabelsAreStable: the metric labels operators alert on.
func TestLabelsAreStable(t *testing.T) {
	got := strings.Join([]string{DeniedSecondary.Label(), DeniedDetached.Label(), DeniedRoleUnknown.Label(), DeniedFenced.Label(), DeniedNotMember.Label(),
		DeniedWoken.Label()}, " ")
	if got != "secondary detached role-unknown fenced not-member woken" {
		t.Fatalf("labels %s", got)
	}
	var sites []string
	for _, s := range Sites() {
		sites = append(sites, s.String())
	}
	if got := strings.Join(sites, " "); got != "write ack alarm-emit historian-drain" {
		t.Fatalf("sites %s", got)
	}
}

// TestGateIsALeaf: the policy depends on the standard library only, so
// every caller can link it without the actor runtime, gRPC or OpenTelemetry.
func TestGateIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "github.com/otopcua/otopcua/gate" {
		t.Fatalf("gate depends on non-standard packages: %v", got)
	}
}
