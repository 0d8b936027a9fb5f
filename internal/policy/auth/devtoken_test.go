package auth

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGenerateToken(t *testing.T) {
	t.Parallel()

	a, err := GenerateToken()
	require.NoError(t, err)
	b, err := GenerateToken()
	require.NoError(t, err)
	require.NotEqual(t, a, b)

	raw, ok := strings.CutPrefix(a, "weft_")
	require.True(t, ok, "token has the weft_ prefix")
	decoded, err := base64.RawURLEncoding.DecodeString(raw)
	require.NoError(t, err)
	require.Len(t, decoded, 32)
}

func TestLoadOrCreateDevTokenCreatesThenRereads(t *testing.T) {
	t.Parallel()

	dir := filepath.Join(t.TempDir(), "weft", "dev")
	path := filepath.Join(dir, "token")

	token, created, err := LoadOrCreateDevToken(path, "")
	require.NoError(t, err)
	require.True(t, created)
	require.True(t, strings.HasPrefix(token, "weft_"))

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	info, err = os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")

	again, created, err := LoadOrCreateDevToken(path, "")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, token, again)

	keys, err := NewKeys(Key{Name: "dev", TenantID: "dev", Role: RoleAdmin, Hash: HashKey(token)})
	require.NoError(t, err)
	_, err = keys.Authenticate("Bearer " + token)
	require.NoError(t, err, "a dev token authenticates")
}

func TestLoadOrCreateDevTokenOverride(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	missing := filepath.Join(dir, "sub", "token")
	token, created, err := LoadOrCreateDevToken(missing, "my-token")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "my-token", token)
	_, err = os.Stat(filepath.Dir(missing))
	require.ErrorIs(t, err, os.ErrNotExist, "an override writes nothing")

	existing := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(existing, []byte("file-token\n"), 0o600))
	token, created, err = LoadOrCreateDevToken(existing, " my-token\n")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "my-token", token, "the override wins over the file")
	data, err := os.ReadFile(existing)
	require.NoError(t, err)
	require.Equal(t, "file-token\n", string(data))
}

func TestLoadOrCreateDevTokenReadsFile(t *testing.T) {
	t.Parallel()

	path := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(path, []byte("  \tfile-token \r\n\n"), 0o600))
	token, created, err := LoadOrCreateDevToken(path, "")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "file-token", token)
}

func TestLoadOrCreateDevTokenErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, file, override, wantErr string
	}{
		{"empty file", "", "", "empty token"},
		{"blank file", " \n\t\n", "", "empty token"},
		{"two words in file", "file token\n", "", "token contains whitespace"},
		{"oversize file", strings.Repeat("a", 4097), "", "token longer than 4096 bytes"},
		{"blank override", "file-token", " \n", "auth: dev token override: empty token"},
		{"override with space", "file-token", "my token", "auth: dev token override: token contains whitespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "token")
			require.NoError(t, os.WriteFile(path, []byte(tt.file), 0o600))
			token, created, err := LoadOrCreateDevToken(path, tt.override)
			require.ErrorContains(t, err, tt.wantErr)
			require.Empty(t, token)
			require.False(t, created)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tt.file, string(data), "a rejected file is left as it was")
		})
	}
}

func TestLoadOrCreateDevTokenUnreadable(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	_, created, err := LoadOrCreateDevToken(dir, "")
	require.ErrorContains(t, err, "auth: dev token: ")
	require.False(t, created)
}
