package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIsSecretKey(t *testing.T) {
	t.Parallel()
	secret := []string{
		"password", "PASSWORD", "Password", "dbPassword", "db_password", "DB_PASSWORD", "db-password", "db.password",
		"passwd", "passphrase", "secret", "clientSecret", "client_secret", "clientsecret", "token", "accessToken",
		"access_token", "githubToken", "X-Auth-Token", "auth", "basicAuth", "Authorization", "credential",
		"credentials", "awsCredentials", "apiKey", "api_key", "APIKey", "API_KEY", "apikey", "x-api-key",
		"accessKey", "secretAccessKey", "privateKey", "private_key", "signingKey", "encryptionKey",
		"secretKey", "passwordValue", "token_b64", "secretString", "oauth2Token", "refreshtoken",
	}
	notSecret := []string{
		"", "user", "username", "author", "authorName", "authMethod", "oauth", "tokenizer", "tokenUrl", "tokenCount",
		"maxTokens", "tokens", "secretName", "secretRef", "secrets", "passwordPolicy", "passwordFile",
		"password_hash", "credentialId", "key", "keyboard", "monkey", "apiKeyId", "accessKeyId", "publicKey",
		"value", "data", "url", "region", "authorization_url", "_", "--",
	}
	for _, k := range secret {
		require.True(t, IsSecretKey(k), "%q names a secret", k)
	}
	for _, k := range notSecret {
		require.False(t, IsSecretKey(k), "%q does not name a secret", k)
	}
}

func TestSplitWords(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"apiKey":         {"api", "key"},
		"APIKey":         {"api", "key"},
		"API_KEY":        {"api", "key"},
		"x-api-key":      {"x", "api", "key"},
		"oauth2Token":    {"oauth2", "token"},
		"HTTPServerName": {"http", "server", "name"},
		"Ünïcode_Wörd":   {"ünïcode", "wörd"},
		"":               nil,
		"--":             nil,
	}
	for in, want := range tests {
		require.Equal(t, want, splitWords(in), in)
	}
}

func TestSecretShape(t *testing.T) {
	t.Parallel()
	positives := map[string]string{
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE...":                              "a PEM private key",
		"-----BEGIN PRIVATE KEY-----":                                           "a PEM private key",
		"-----BEGIN OPENSSH PRIVATE KEY-----":                                   "a PEM private key",
		"-----BEGIN EC PRIVATE KEY-----":                                        "a PEM private key",
		"-----BEGIN ENCRYPTED PRIVATE KEY-----":                                 "a PEM private key",
		"-----BEGIN PGP PRIVATE KEY BLOCK-----":                                 "a PEM private key",
		"AKIAIOSFODNN7EXAMPLE":                                                  "an AWS access key id",
		"key=ASIAIOSFODNN7EXAMPLE;":                                             "an AWS access key id",
		"ghp_" + strings.Repeat("a1B2", 9):                                      "a GitHub token",
		"token gho_" + strings.Repeat("Z", 36):                                  "a GitHub token",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz":             "a GitHub token",
		"xoxb-1234567890-abcdefghij":                                            "a Slack token",
		"xoxp-1234-5678-abcd":                                                   "a Slack token",
		"sk_live_" + strings.Repeat("a", 24):                                    "a Stripe secret key",
		"AIza" + strings.Repeat("B", 35):                                        "a Google API key",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w": "a JSON Web Token",
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.":                                  "a JSON Web Token",
		"Bearer abcdefghijklmnopqrstuvwxyz012345":                               "a bearer token",
		"authorization: bearer abc.def-ghi_jkl~mno+pqr/stu=":                    "a bearer token",
		"postgres://weft:hunter2@db.internal:5432/weft":                         "a URL with a password",
		"https://user:pa%20ss@example.com/":                                     "a URL with a password",
		"Basic dXNlcjpwYXNzd29yZA==":                                            "HTTP Basic credentials",
		"basic dXNlcjpwYXNz":                                                    "HTTP Basic credentials",
	}
	for s, kind := range positives {
		got, ok := SecretShape(s)
		require.True(t, ok, "%q is a credential", s)
		require.Equal(t, kind, got, s)
		require.NotContains(t, got, s)
	}
	negatives := []string{
		"", "hello world", "AKIA", "AKIAIOSFODNN7EXAMPL", "xAKIAIOSFODNN7EXAMPLE", "ghp_short", "github_pat_",
		"xoxb-", "sk_test_" + strings.Repeat("a", 24), "eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJIUzI1NiJ9.payload.sig",
		"Bearer", "Bearer short", "bearer of bad news about tokens", "the bearer token goes in a header",
		"https://example.com/a:b@c", "ssh://git@github.com/weftrun/weft.git", "https://user@example.com",
		"mailto:someone@example.com", "-----BEGIN PUBLIC KEY-----", "-----BEGIN CERTIFICATE-----",
		"basic information", "Basic authentication required", "basic aGVsbG8gd29ybGQ=", // "hello world": no colon
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", // a sha256
		"f47ac10b-58cc-4372-a567-0e02b2c3d479",
		"s3://bucket/key", "AKIAIOSFODNN7EXAMPLEX",
	}
	for _, s := range negatives {
		kind, ok := SecretShape(s)
		require.False(t, ok, "%q is not a credential, got %s", s, kind)
	}
}

func TestScanInput(t *testing.T) {
	t.Parallel()
	declared := map[string]bool{"db": true}
	tests := []struct {
		name  string
		input string
		want  []finding // message only checked for a prefix
	}{
		{"clean", `{"url":"https://example.com","n":1,"tags":["a"],"nested":{"ok":true}}`, nil},
		{"reference", `{"password":{"secretRef":"db"}}`, nil},
		{"reference in an array", `{"tokens":[{"secretRef":"db"}]}`, nil},
		{"empty password", `{"password":""}`, nil},
		{"number under a secret key", `{"tokenLimit":5,"token":5}`, nil},
		{"secret-named key with an object of plain values", `{"auth":{"type":"basic","user":"weft"}}`, nil},
		{"password value", `{"password":"hunter2"}`, []finding{{"input.password", CodeSecretValue, "a string under a key"}}},
		{"strings in an array under a secret key", `{"token":["x",1,"y"]}`, []finding{
			{"input.token[0]", CodeSecretValue, "a string"}, {"input.token[2]", CodeSecretValue, "a string"},
		}},
		{"shape anywhere", `["ok",{"deep":[{"x":"AKIAIOSFODNN7EXAMPLE"}]}]`, []finding{{"input[1].deep[0].x", CodeSecretValue, "looks like an AWS access key id"}}},
		{"shape at the top", `"Bearer abcdefghijklmnopqrstuvwxyz"`, []finding{{"input", CodeSecretValue, "looks like a bearer token"}}},
		{"shape as a key", `{"AKIAIOSFODNN7EXAMPLE":{"password":"p"}}`, []finding{
			{"input", CodeSecretValue, "an object key looks like"}, {`input["<redacted>"].password`, CodeSecretValue, "a string"},
		}},
		{"odd keys are quoted", `{"a b":{"api-key":"v"}}`, []finding{{`input["a b"]["api-key"]`, CodeSecretValue, "a string"}}},
		{"undeclared reference", `{"password":{"secretRef":"other"}}`, []finding{{"input.password", CodeUnknownSecretRef, `secret "other"`}}},
		{"reference with extra keys", `{"x":{"secretRef":"db","default":"p"}}`, []finding{{"input.x", CodeInvalidSecretRef, "a secret reference"}}},
		{"sorted keys", `{"b":{"password":"1"},"a":{"password":"2"}}`, []finding{
			{"input.a.password", CodeSecretValue, ""}, {"input.b.password", CodeSecretValue, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := scanInput(json.RawMessage(tt.input), declared)
			require.Len(t, got, len(tt.want), "%v", got)
			for i, w := range tt.want {
				require.Equal(t, w.path, got[i].path)
				require.Equal(t, w.code, got[i].code)
				require.True(t, strings.HasPrefix(got[i].message, w.message), got[i].message)
				for _, v := range []string{"hunter2", "AKIAIOSFODNN7EXAMPLE", "abcdefghijklmnopqrstuvwxyz"} {
					require.NotContains(t, got[i].message+got[i].path, v)
				}
			}
		})
	}
}
