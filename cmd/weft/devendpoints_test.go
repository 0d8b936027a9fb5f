package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/devfile"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
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
	path := filepath.Join(dev.dir, devfile.Name)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var e devfile.Endpoints
	require.NoError(t, json.Unmarshal(raw, &e))
	require.Equal(t, bannerURL(t, banner, "API:"), e.Gateway)
	require.Equal(t, strings.TrimSuffix(bannerURL(t, banner, "Read API:"), "/v1/runs"), e.ReadAPI)
	natsUser := bannerURL(t, banner, "NATS:")
	require.Equal(t, "nats://127.0.0.1:"+natsUser[strings.LastIndex(natsUser, ":")+1:], e.NATS)
	require.Equal(t, devNATSUser, e.NATSUser)
	require.Equal(t, filepath.Join(dev.dir, devNATSPasswordFile), e.NATSPasswordFile)
	require.Equal(t, strings.TrimSuffix(bannerURL(t, banner, "Ops:"), " (/healthz, /readyz, /metrics)"), e.Ops)
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
