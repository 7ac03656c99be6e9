package gate

import (
	"fmt"
	"testing"

	"github.com/otopcua/otopcua/redundancy"
)

func TestShouldServiceAsPrimary(t *testing.T) {
	tests := []struct {
		role        redundancy.Role
		drivers     int
		want        bool
		reason      Reason
		text, label string
	}{
		{redundancy.RolePrimary, 0, true, Allowed, "primary", ""},
		{redundancy.RolePrimary, 1, true, Allowed, "primary", ""},
		{redundancy.RolePrimary, 2, true, Allowed, "primary", ""},
		{redundancy.RolePrimary, 7, true, Allowed, "primary", ""},
		{redundancy.RoleSecondary, 0, false, DeniedSecondary, "not primary", "secondary"},
		{redundancy.RoleSecondary, 1, false, DeniedSecondary, "not primary", "secondary"},
		{redundancy.RoleSecondary, 2, false, DeniedSecondary, "not primary", "secondary"},
		{redundancy.RoleDetached, 0, false, DeniedDetached, "not primary", "detached"},
		{redundancy.RoleDetached, 1, false, DeniedDetached, "not primary", "detached"},
		{redundancy.RoleDetached, 3, false, DeniedDetached, "not primary", "detached"},
		{redundancy.RoleUnknown, 0, true, Allowed, "primary", ""},
		{redundancy.RoleUnknown, 1, true, Allowed, "primary", ""},
		{redundancy.RoleUnknown, 2, false, DeniedRoleUnknown, "not primary (role unknown)", "role-unknown"},
		{redundancy.RoleUnknown, 6, false, DeniedRoleUnknown, "not primary (role unknown)", "role-unknown"},
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
