package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/weftest"
	"github.com/weftrun/weft/pkg/api"
)

// `weft dev` writes what it started to endpoints.json in its data folder
// (mode 0600, no secret in it), and the CLI, given only the data folder,
// finds the stack on its ports, which are not the defaults. A stack that
// took its token from WEFT_DEV_TOKEN says so in the banner and in the
// file, writes no token file, and the CLI asks for the token.
func TestDevWritesItsEndpointsAndTheCLIFindsThem(t *testing.T) {
	t.Parallel()
	dev := startDev(t, weftest.NewDB(t), "false")
	banner := dev.out.String()
	path := filepath.Join(dev.dir, devEndpointsFile)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var e devEndpoints
	require.NoError(t, json.Unmarshal(raw, &e))
	require.Equal(t, bannerURL(t, banner, "API:"), e.Gateway)
	require.Equal(t, strings.TrimSuffix(bannerURL(t, banner, "Read API:"), "/v1/runs"), e.ReadAPI)
	natsUser := bannerURL(t, banner, "NATS:")
	require.Equal(t, "nats://127.0.0.1:"+natsUser[strings.LastIndex(natsUser, ":")+1:], e.NATS)
	require.Equal(t, devNATSUser, e.NATSUser)
	require.Equal(t, filepath.Join(dev.dir, devNATSPasswordFile), e.NATSPasswordFile)
	require.Equal(t, strings.TrimSuffix(bannerURL(t, banner, "Ops:"), " (/healthz /readyz /metrics)"), e.Ops)
	require.Empty(t, e.TokenFile, "the token came from WEFT_DEV_TOKEN")
	require.NotContains(t, string(raw), "weft_dev_test_token")
	password, err := os.ReadFile(e.NATSPasswordFile)
	require.NoError(t, err)
	require.NotEmpty(t, strings.TrimSpace(string(password)))
	require.NotContains(t, string(raw), strings.TrimSpace(string(password)), "no NATS password")

	require.Equal(t, "weft_dev_test_token (from WEFT_DEV_TOKEN)", bannerURL(t, banner, "Token:"))
	require.Contains(t, banner, "(these URLs are in "+path+": weft commands find them there)")
	_, err = os.Stat(filepath.Join(dev.dir, "token"))
	require.ErrorIs(t, err, os.ErrNotExist, "no token file is written")
	page, err := http.Get(e.ReadAPI + "/")
	require.NoError(t, err)
	html, err := io.ReadAll(page.Body)
	require.NoError(t, page.Body.Close())
	require.NoError(t, err)
	require.Contains(t, string(html), `<meta name="weft-dev-token-file" content="">`, "the sign-in form names no file it was not given")

	env := map[string]string{"WEFT_DEV_DIR": dev.dir, "WEFT_TOKEN": "weft_dev_test_token"}
	r := weft(t, env, "runs", "ls", "-o", "json")
	require.NoError(t, r.err, "only the data folder points the CLI at the stack")
	decode[api.RunList](t, r)

	r = weft(t, map[string]string{"WEFT_DEV_DIR": dev.dir}, "runs", "ls")
	require.ErrorContains(t, r.err, "no API token: weft dev took its token from WEFT_DEV_TOKEN ("+path+" says so): pass the same as --token or WEFT_TOKEN")
}

// fakeServer is someone else's server on a port the CLI may reach: it
// answers every request with status and records each request's path and
// bearer token.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

func newFakeServer(t *testing.T, status int, body string) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.URL.Path+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// The CLI takes each URL from its flag, else its variable, else weft dev's
// endpoints file, else the default, and the token from the file the
// endpoints name. An authentication failure against a URL that the
// endpoints file did not name says where that URL came from.
func TestCLIURLSources(t *testing.T) {
	t.Parallel()
	dev := newFakeServer(t, http.StatusOK, `{"runs":[]}`)
	other := newFakeServer(t, http.StatusUnauthorized, `{"code":"Unauthenticated","message":"unknown key"}`)
	dir := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "elsewhere-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("weft_token_from_the_file\n"), 0o600))
	require.NoError(t, writeDevEndpoints(dir, devEndpoints{Gateway: dev.URL, ReadAPI: dev.URL, TokenFile: tokenFile}))

	r := weft(t, map[string]string{"WEFT_DEV_DIR": dir}, "runs", "ls")
	require.NoError(t, r.err)
	require.Equal(t, []string{"/v1/runs Bearer weft_token_from_the_file"}, dev.seen(), "the URL and the token file of the endpoints")

	r = weft(t, map[string]string{"WEFT_DEV_DIR": dir, "WEFT_READ_URL": other.URL}, "runs", "ls")
	require.ErrorContains(t, r.err, "HTTP 401")
	require.ErrorContains(t, r.err, "(the read API "+other.URL+" is from WEFT_READ_URL: is that the server you meant? `weft dev` writes its URLs to $WEFT_DEV_DIR/endpoints.json")
	require.NotContains(t, r.err.Error(), "the gateway", "the gateway's URL came from the endpoints file")

	r = weft(t, map[string]string{"WEFT_DEV_DIR": dir, "WEFT_READ_URL": dev.URL}, "runs", "ls", "--read-url", other.URL)
	require.ErrorContains(t, r.err, "the read API "+other.URL+" is from --read-url")

	r = weft(t, map[string]string{"WEFT_DEV_DIR": dir}, "runs", "ls", "--read-url", other.URL, "--api-url", other.URL)
	require.ErrorContains(t, r.err, "the gateway "+other.URL+" is from --api-url; the read API "+other.URL+" is from --read-url")

	r = weft(t, map[string]string{"WEFT_DEV_DIR": dir, "WEFT_READ_URL": dev.URL}, "runs", "ls")
	require.NoError(t, r.err, "a variable wins over the endpoints file")

	// Without the file, the defaults, which say so.
	env := &environment{stdout: &weftest.Buffer{}, stderr: &weftest.Buffer{}, getenv: envOf(map[string]string{"WEFT_DEV_DIR": t.TempDir(), "WEFT_TOKEN": "weft_x"})}
	cmd := newAPICommand(env, "runs ls", lsSynopsis, "")
	_, err := cmd.parse(nil)
	require.NoError(t, err)
	c, err := cmd.conn.client()
	require.NoError(t, err)
	defer c.close()
	require.Equal(t, []string{defaultAPIURL, defaultReadURL}, []string{c.apiURL, c.readURL})
	require.Equal(t, "the default (no --read-url, no WEFT_READ_URL, no "+filepath.Join(env.getenv("WEFT_DEV_DIR"), devEndpointsFile)+")", c.readFrom)
}

// The banner says where the token is: its file, or WEFT_DEV_TOKEN.
// The UI's sign-in form and endpoints.json name the token's file, which
// exists only when WEFT_DEV_TOKEN did not give the token.
func TestDevTokenFile(t *testing.T) {
	t.Parallel()
	require.Equal(t, filepath.Join("d", "token"), devTokenFile(devConfig{dir: "d"}))
	require.Empty(t, devTokenFile(devConfig{dir: "d", devToken: "weft_t"}))
}

func TestDevBannerSaysWhereTheTokenIs(t *testing.T) {
	t.Parallel()
	for devToken, want := range map[string]string{"": "weft_t (in " + filepath.Join("d", "token") + ")", "weft_t": "weft_t (from WEFT_DEV_TOKEN)"} {
		var out weftest.Buffer
		require.NoError(t, devBanner(&environment{stdout: &out}, devConfig{dir: "d", devToken: devToken},
			devURLs{ui: "http://u", api: "http://a", token: "weft_t", db: "postgres://p", nats: "nats://n", pgData: filepath.Join("d", "pg")}))
		require.Equal(t, want, bannerURL(t, out.String(), "Token:"))
		require.NotContains(t, out.String(), "data in", "the data folder's own Postgres needs no line")
	}
	var out weftest.Buffer
	require.NoError(t, devBanner(&environment{stdout: &out}, devConfig{dir: "d"},
		devURLs{db: "postgres://p", pgData: "/var/tmp/weft-pg-1"}))
	require.Contains(t, out.String(), "  Postgres: postgres://p\n            (data in /var/tmp/weft-pg-1)\n", "a relocated cluster is named")
}
