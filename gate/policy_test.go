package gate

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

func TestShouldServiceAsPrimary(t *testing.T) {
	tests := []struct {
		role        Role
		drivers     int
		want        bool
		reason      Reason
		text, label string
	}{
		{RolePrimary, 0, true, Allowed, "primary", ""},
		{RolePrimary, 1, true, Allowed, "primary", ""},
		{RolePrimary, 2, true, Allowed, "primary", ""},
		{RolePrimary, 7, true, Allowed, "primary", ""},
		{RoleSecondary, 0, false, DeniedSecondary, "not primary", "secondary"},
		{RoleSecondary, 1, false, DeniedSecondary, "not primary", "secondary"},
		{RoleSecondary, 2, false, DeniedSecondary, "not primary", "secondary"},
		{RoleDetached, 0, false, DeniedDetached, "not primary", "detached"},
		{RoleDetached, 1, false, DeniedDetached, "not primary", "detached"},
		{RoleDetached, 3, false, DeniedDetached, "not primary", "detached"},
		{RoleUnknown, 0, true, Allowed, "primary", ""},
		{RoleUnknown, 1, true, Allowed, "primary", ""},
		{RoleUnknown, 2, false, DeniedRoleUnknown, "not primary (role unknown)", "role-unknown"},
		{RoleUnknown, 6, false, DeniedRoleUnknown, "not primary (role unknown)", "role-unknown"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.role, tt.drivers), func(t *testing.T) {
			got, reason := ShouldServiceAsPrimary(tt.role, tt.drivers)
			if got != tt.want || reason != tt.reason {
				t.Fatalf("got (%v, %v), want (%v, %v)", got, reason, tt.want, tt.reason)
			}
			if reason.String() != tt.text || reason.Label() != tt.label {
				t.Fatalf("reason renders %q/%q, want %q/%q", reason.String(), reason.Label(), tt.text, tt.label)
			}
		})
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
