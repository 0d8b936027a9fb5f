package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrincipalContext(t *testing.T) {
	t.Parallel()

	_, ok := PrincipalFrom(t.Context())
	require.False(t, ok)

	want := Principal{KeyID: "ci", TenantID: "acme", Role: RoleOperator}
	got, ok := PrincipalFrom(WithPrincipal(t.Context(), want))
	require.True(t, ok)
	require.Equal(t, want, got)
}
