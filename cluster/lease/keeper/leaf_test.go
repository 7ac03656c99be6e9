package keeper

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestKeeperIsALeaf: the core links without the actor runtime, gRPC, a
// database driver or OPC UA, so scenario files and any caller can run it
// alone. Beyond the standard library it uses the gate's licence and the
// woken-process detector (itself a standard-library leaf) only.
func TestKeeperIsALeaf(t *testing.T) {
	all := goList(t, "{{.ImportPath}}")
	for _, d := range all {
		for _, banned := range []string{"protoactor", "grpc", "database/sql", "pgx", "sqlite", "mssql", "gopcua", "otopcua/opcua"} {
			if strings.Contains(d, banned) {
				t.Errorf("the keeper core depends on %s", d)
			}
		}
	}
	own := goList(t, "{{if not .Standard}}{{.ImportPath}}{{end}}")
	slices.Sort(own)
	want := []string{"github.com/otopcua/otopcua/cluster/lease/keeper", "github.com/otopcua/otopcua/cluster/woken", "github.com/otopcua/otopcua/gate"}
	if !slices.Equal(own, want) {
		t.Errorf("non-standard dependencies %v, want %v", own, want)
	}
}

func goList(t *testing.T, format string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", format, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}
