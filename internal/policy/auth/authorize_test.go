package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRole(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in      string
		want    Role
		wantErr bool
	}{
		{"viewer", RoleViewer, false},
		{"operator", RoleOperator, false},
		{"admin", RoleAdmin, false},
		{"Admin", "", true},
		{"", "", true},
		{"root", "", true},
	}
	for _, tt := range tests {
		got, err := ParseRole(tt.in)
		if tt.wantErr {
			require.ErrorContains(t, err, "unknown role", tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got)
	}
}

func TestRoleAuthorizerMatrix(t *testing.T) {
	t.Parallel()

	allowed := map[Role][]Action{
		RoleViewer:   {ActionRunRead},
		RoleOperator: {ActionRunRead, ActionRunStart, ActionSignalSend},
		RoleAdmin:    {ActionRunRead, ActionRunStart, ActionSignalSend, ActionAdmin},
	}
	verb := map[Action]string{
		ActionRunRead:    "read runs",
		ActionRunStart:   "start runs",
		ActionSignalSend: "send signals",
		ActionAdmin:      "perform admin actions",
	}
	for role, actions := range allowed {
		for action, v := range verb {
			for _, tenant := range []string{"acme", "other"} {
				name := string(role) + "/" + string(action) + "/" + tenant
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					p := Principal{KeyID: "k", TenantID: "acme", Role: role}
					r := Resource{TenantID: tenant, RunID: "run-1", SignalName: "approve"}
					got := RoleAuthorizer{}.Authorize(t.Context(), p, action, r)
					switch {
					case tenant != p.TenantID:
						require.Equal(t, Decision{Reason: "tenant mismatch"}, got)
					case contains(actions, action):
						require.Equal(t, Decision{Allowed: true}, got)
					default:
						require.Equal(t, Decision{Reason: `role "` + string(role) + `" may not ` + v}, got)
					}
				})
			}
		}
	}
}

func contains(actions []Action, a Action) bool {
	for _, x := range actions {
		if x == a {
			return true
		}
	}
	return false
}

func TestRoleAuthorizerDenies(t *testing.T) {
	t.Parallel()

	admin := Principal{KeyID: "k", TenantID: "acme", Role: RoleAdmin}
	acme := Resource{TenantID: "acme"}
	tests := []struct {
		name   string
		p      Principal
		a      Action
		r      Resource
		reason string
	}{
		{"viewer sends a signal", Principal{TenantID: "acme", Role: RoleViewer}, ActionSignalSend, acme, `role "viewer" may not send signals`},
		{"resource without tenant", admin, ActionRunRead, Resource{}, "tenant mismatch"},
		{"zero principal", Principal{}, ActionRunRead, Resource{}, "principal has no tenant"},
		{"unknown role", Principal{TenantID: "acme", Role: "root"}, ActionRunRead, acme, "unknown role"},
		{"unknown action", admin, "run.delete", acme, "unknown action"},
	}
	for _, tt := range tests {
		got := RoleAuthorizer{}.Authorize(t.Context(), tt.p, tt.a, tt.r)
		require.Equal(t, Decision{Reason: tt.reason}, got, tt.name)
	}
}
