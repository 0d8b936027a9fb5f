package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHashKey(t *testing.T) {
	t.Parallel()

	require.Equal(t,
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		HashKey("test"))
}

func TestParseKeys(t *testing.T) {
	t.Parallel()

	text := "# Weft API keys\n" +
		"ci acme operator " + HashKey("ci-token") + "\n" +
		"\n" +
		"  dash\tacme  viewer " + HashKey("dash-token") + "   # read-only dashboard\r\n" +
		"root other_co-eu-1 admin " + HashKey("root-token") + ", bot acme operator " + HashKey("bot-token") + ",\n" +
		"   # indented comment, with a comma\n"
	keys, err := ParseKeys(text)
	require.NoError(t, err)
	require.Equal(t, 4, keys.Len())

	for token, want := range map[string]Principal{
		"ci-token":   {KeyID: "ci", TenantID: "acme", Role: RoleOperator},
		"dash-token": {KeyID: "dash", TenantID: "acme", Role: RoleViewer},
		"root-token": {KeyID: "root", TenantID: "other_co-eu-1", Role: RoleAdmin},
		"bot-token":  {KeyID: "bot", TenantID: "acme", Role: RoleOperator},
	} {
		got, err := keys.Authenticate("Bearer " + token)
		require.NoError(t, err, token)
		require.Equal(t, want, got, token)
	}
}

func TestParseKeysEmpty(t *testing.T) {
	t.Parallel()

	for _, text := range []string{"", "\n\n", "# only a comment\n", " , ,\n"} {
		keys, err := ParseKeys(text)
		require.NoError(t, err, text)
		require.Zero(t, keys.Len(), text)
		_, err = keys.Authenticate("Bearer test")
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
}

func TestParseKeysErrors(t *testing.T) {
	t.Parallel()

	h := HashKey("test")
	hex := strings.TrimPrefix(h, "sha256:")
	tests := []struct {
		name, text, wantErr string
	}{
		{"too few fields", "ci acme operator", "line 1: want 4 fields: <name> <tenant> <role> sha256:<hex>, got 3"},
		{"too many fields", "ci acme operator " + h + " extra", "line 1: want 4 fields"},
		{"unknown role", "\n\nci acme boss " + h, "line 3: unknown role: want viewer, operator or admin"},
		{"role in upper case", "ci acme Admin " + h, "line 1: unknown role"},
		{"no prefix", "ci acme operator " + hex, "line 1: invalid hash"},
		{"other algorithm", "ci acme operator md5:" + hex, "line 1: invalid hash"},
		{"upper-case hex", "ci acme operator sha256:" + strings.ToUpper(hex), "line 1: invalid hash"},
		{"short hex", "ci acme operator " + h[:len(h)-2], "line 1: invalid hash"},
		{"bad hex", "ci acme operator sha256:" + strings.Repeat("zz", 32), "line 1: invalid hash"},
		{"bad name", "# keys\nc/i acme operator " + h, "line 2: invalid name"},
		{"long name", strings.Repeat("n", 65) + " acme operator " + h, "line 1: invalid name"},
		{"bad tenant", "ci acme/prod operator " + h, "line 1: invalid tenant"},
		{"non-ASCII tenant", "ci acmé operator " + h, "line 1: invalid tenant"},
		{"long tenant", "ci " + strings.Repeat("t", 129) + " operator " + h, "line 1: invalid tenant"},
		{"duplicate hash", "ci acme operator " + h + "\n# x\nci2 acme viewer " + h, "line 3: duplicate key hash (same key as line 1)"},
		{"duplicate name", "ci acme operator " + h + "\nci acme viewer " + HashKey("other"), `line 2: duplicate key name "ci" (also line 1)`},
		{"second entry on a line", "a acme viewer " + h + ", b acme boss " + HashKey("b"), "line 1 entry 2: unknown role"},
		{"duplicate across entries", "a acme viewer " + h + "\nx y z, b acme admin " + h, "line 2 entry 1: want 4 fields"},
		{"duplicate in same line", "a acme viewer " + h + ",b acme admin " + h, "line 1 entry 2: duplicate key hash (same key as line 1 entry 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			keys, err := ParseKeys(tt.text)
			require.ErrorContains(t, err, "auth: keys: "+tt.wantErr)
			require.Nil(t, keys)
			require.NotContains(t, err.Error(), hex, "errors never quote a hash")
		})
	}
}

func TestParseKeysNeverQuotesPastedToken(t *testing.T) {
	t.Parallel()

	const token = "weft_s3cr3t-pasted-by-mistake"
	for _, text := range []string{
		"ci acme operator " + token,
		token,
		"ci acme " + token + " " + HashKey(token),
		token + " acme operator " + HashKey(token) + "x",
	} {
		_, err := ParseKeys(text)
		require.ErrorContains(t, err, "line 1: ")
		require.NotContains(t, err.Error(), token)
	}
}

func TestNewKeys(t *testing.T) {
	t.Parallel()

	keys, err := NewKeys(
		Key{Name: "ci", TenantID: "acme", Role: RoleOperator, Hash: HashKey("ci-token")},
		Key{TenantID: "acme", Role: RoleViewer, Hash: HashKey("test")},
	)
	require.NoError(t, err)
	require.Equal(t, 2, keys.Len())

	p, err := keys.Authenticate("Bearer test")
	require.NoError(t, err)
	require.Equal(t, Principal{KeyID: "9f86d081", TenantID: "acme", Role: RoleViewer}, p,
		"an unnamed key is identified by its hash's first 8 hex digits")
}

func TestNewKeysErrors(t *testing.T) {
	t.Parallel()

	good := Key{Name: "ci", TenantID: "acme", Role: RoleOperator, Hash: HashKey("ci-token")}
	tests := []struct {
		name    string
		key     Key
		wantErr string
	}{
		{"empty tenant", Key{Name: "x", Role: RoleAdmin, Hash: HashKey("x")}, "empty tenant"},
		{"tenant with space", Key{Name: "x", TenantID: "a b", Role: RoleAdmin, Hash: HashKey("x")}, "invalid tenant: want at most 128 characters of [A-Za-z0-9_-]"},
		{"empty role", Key{Name: "x", TenantID: "acme", Hash: HashKey("x")}, "unknown role: want viewer, operator or admin"},
		{"empty hash", Key{Name: "x", TenantID: "acme", Role: RoleAdmin}, "invalid hash: want sha256:<64 lowercase hex digits>"},
		{"raw token as hash", Key{Name: "x", TenantID: "acme", Role: RoleAdmin, Hash: "x"}, "invalid hash: want sha256:<64 lowercase hex digits>"},
		{"duplicate hash", Key{Name: "x", TenantID: "acme", Role: RoleAdmin, Hash: good.Hash}, "duplicate key hash (same key as key 1)"},
		{"duplicate name", Key{Name: "ci", TenantID: "acme", Role: RoleAdmin, Hash: HashKey("x")}, `duplicate key name "ci" (also key 1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			keys, err := NewKeys(good, tt.key)
			require.EqualError(t, err, "auth: keys: key 2: "+tt.wantErr)
			require.Nil(t, keys)
		})
	}
}

func TestLoadKeysFile(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	good := filepath.Join(dir, "keys")
	require.NoError(t, os.WriteFile(good, []byte("ci acme operator "+HashKey("ci-token")+"\n"), 0o600))
	keys, err := LoadKeysFile(good)
	require.NoError(t, err)
	p, err := keys.Authenticate("Bearer ci-token")
	require.NoError(t, err)
	require.Equal(t, Principal{KeyID: "ci", TenantID: "acme", Role: RoleOperator}, p)

	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(bad, []byte("# keys\nci acme boss "+HashKey("x")+"\n"), 0o600))
	_, err = LoadKeysFile(bad)
	require.ErrorContains(t, err, "auth: keys file "+bad+": line 2: unknown role")

	_, err = LoadKeysFile(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()

	keys, err := NewKeys(Key{Name: "ci", TenantID: "acme", Role: RoleOperator, Hash: HashKey("s3cret")})
	require.NoError(t, err)
	ci := Principal{KeyID: "ci", TenantID: "acme", Role: RoleOperator}
	atLimit := strings.Repeat("a", 4096)
	oversize := strings.Repeat("a", 4097)

	tests := []struct {
		name, header string
		wantErr      string // empty for success
	}{
		{"bearer", "Bearer s3cret", ""},
		{"lower-case scheme", "bearer s3cret", ""},
		{"upper-case scheme", "BEARER s3cret", ""},
		{"extra spaces before token", "Bearer    s3cret", ""},
		{"spaces and tabs around value", " \tBearer s3cret \t", ""},
		{"missing header", "", "no credentials"},
		{"blank header", "   ", "no credentials"},
		{"scheme only", "Bearer", "empty token"},
		{"scheme and spaces", "Bearer    ", "empty token"},
		{"basic scheme", "Basic dGVzdDp0ZXN0", "unsupported authorization scheme (want Bearer)"},
		{"other scheme", "Token s3cret", "unsupported authorization scheme (want Bearer)"},
		{"bare token", "s3cret", "unsupported authorization scheme (want Bearer)"},
		{"no space after scheme", "Bearers3cret", "unsupported authorization scheme (want Bearer)"},
		{"tab after scheme", "Bearer\ts3cret", "unsupported authorization scheme (want Bearer)"},
		{"two tokens", "Bearer s3cret s3cret", "token contains whitespace"},
		{"unknown key", "Bearer s3cret2", "unknown key"},
		{"token at size limit", "Bearer " + atLimit, "unknown key"},
		{"oversize token", "Bearer " + oversize, "token longer than 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := keys.Authenticate(tt.header)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, ci, p)
				return
			}
			require.ErrorIs(t, err, ErrUnauthenticated)
			require.EqualError(t, err, "auth: unauthenticated: "+tt.wantErr)
			require.Zero(t, p)
			require.NotContains(t, err.Error(), "s3cret", "the reason never quotes the token")
		})
	}
}

func TestAuthenticateNilKeys(t *testing.T) {
	t.Parallel()

	var keys *Keys
	require.Zero(t, keys.Len())
	p, err := keys.Authenticate("Bearer test")
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.Zero(t, p)
}

func TestAuthenticateValues(t *testing.T) {
	t.Parallel()

	keys, err := NewKeys(Key{Name: "ci", TenantID: "acme", Role: RoleOperator, Hash: HashKey("s3cret")})
	require.NoError(t, err)

	p, err := keys.AuthenticateValues([]string{"Bearer s3cret"})
	require.NoError(t, err)
	require.Equal(t, "ci", p.KeyID)

	_, err = keys.AuthenticateValues(nil)
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.NotErrorIs(t, err, ErrMultipleCredentials)

	for _, values := range [][]string{
		{"Bearer s3cret", "Bearer s3cret"},
		{"Bearer s3cret", "Bearer other"},
		{"Bearer other", "Bearer s3cret"},
		{"", "Bearer s3cret"},
	} {
		p, err := keys.AuthenticateValues(values)
		require.ErrorIs(t, err, ErrMultipleCredentials, "%q", values)
		require.NotErrorIs(t, err, ErrUnauthenticated, "%q: malformed, not unauthenticated", values)
		require.NotContains(t, err.Error(), "s3cret")
		require.Zero(t, p)
	}
}
